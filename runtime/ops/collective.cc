// Collective ops across the processes of an MPI job (distributed/cluster.h):
//
//   AllReduce(x) -> y   attr reduction: "sum" (default) or "mean" (float
//                        types); y = the reduction over every rank's x
//   Broadcast(x) -> y   attr root: int (default 0); y = rank root's x
//   AllGather(x) -> y   y = every rank's x, in rank order, along axis 0
//
// x must have a fully known shape (checked when the node is made): every
// rank then sends the same number of bytes, which MPI needs and cannot
// check.  In a process alone (no MPI launcher) each op is the identity.
//
// Order.  MPI matches collectives by the order each rank starts them, while
// the executor runs ready nodes in whatever order threads take them.  So a
// run starts its collectives in the order of their nodes' creation in the
// graph (a topological order, the same on every rank running the same
// program; Plan::collectives lists them once per plan), and runs start
// theirs in the order the runs reach their first collective: one run after
// another.  A node ready early waits (parked,
// holding no thread) for those before it.
//
// Failures.  A run's deadline (weft_run_options.timeout_ms) ends a
// collective still waiting for the other ranks with UNAVAILABLE; its
// buffers stay with MPI until the operation completes (a late rank still
// gets its result, and the ranks stay in step) or the process exits (the
// module then aborts the MPI job rather than hang in MPI_Finalize).  What this asks of programs:
// every rank builds the same graph and makes the same runs in the same
// order, from one thread at a time (as SPMD programs under mpirun do);
// collectives inside loops and conditionals are refused (their runs would
// not start the same set of nodes on every rank).  A run that fails before
// starting all its collectives leaves the job's ranks out of step: restart
// it (from a checkpoint).
//
// On the device (plugin interface 1.7).  An AllReduce or Broadcast placed
// on a device whose plugin has the collective_* slots (NCCL for CUDA) runs
// on the device's own communicator instead: the op enqueues the plugin's
// collective on the node's stream and completes, as a kernel does, with
// no copy through host memory.  The communicator is made on the device's
// first such op (Bootstrap below): every rank asks its plugin whether it
// can join (rank 0 also makes the communicator's id), the answers are
// gathered on every rank with an MPI AllGather in host memory, started in
// the same order as every other collective, and from the same answers
// every rank takes the same path: all can, each joins the communicator
// (rank 0's id) and the outcomes are gathered once more; none can, that
// device's collectives go through MPI as before; only some can (or a rank
// failed to join), every collective on that device fails on every rank,
// saying which rank and why, rather than leaving the others waiting.
// While a bootstrap runs, the collectives started after it wait (Sequencer)
// so that MPI and each communicator still see one order on every rank.
// This asks one more thing of programs: every rank places each collective
// on a device of the same type and runs the same plugins (one program,
// one installation).  A rank whose plugin lacks the slots where the
// others' have them would send MPI a different operation: that cannot be
// detected, and is "a different program" (the deadline's message above).
// Work enqueued on a stream is out of the run's deadline's reach: a peer
// that never comes holds the device's stream (the plugin's library may
// have timeouts of its own).  A device collective whose run gave up on it
// (deadline, cancel) before its turn came is not enqueued (the run's
// stream may be gone), leaving the ranks out of step as above.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "device/device.h"
#include "device/registry.h"
#include "distributed/cluster.h"
#include "grad/grad_builder.h"
#include "grad/registry.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "ops/runtime_op.h"
#include "tensor/buffer.h"

namespace weft {
namespace {

// ---- Starting collectives in one order on every rank -----------------------

using StartFn = std::function<void()>;

class RunOrder;

// Process-wide: runs in ticket order, one at a time.
struct Turns {
  std::mutex mu;
  uint64_t next_ticket = 0;
  uint64_t serving = 0;
  std::map<uint64_t, RunOrder*> waiting;  // by ticket, until served or gone
};

Turns& GlobalTurns() {
  static Turns* turns = new Turns();  // used until exit by parked runs
  return *turns;
}

// A run's collectives: its nodes in creation order and how many have
// started.  Kept in the run's resources; gone with the run.
class RunOrder : public RunResource {
 public:
  // `nodes`: the plan's, which outlives the run.
  explicit RunOrder(const std::vector<const weft_node*>* nodes)
      : nodes_(*nodes) {
    Turns& t = GlobalTurns();
    std::lock_guard<std::mutex> lock(t.mu);
    ticket_ = t.next_ticket++;
    t.waiting[ticket_] = this;
  }

  ~RunOrder() override {
    Turns& t = GlobalTurns();
    std::lock_guard<std::mutex> lock(t.mu);
    // A run that ends (fails) before starting all its collectives gives up
    // its turn, so that later runs of this process are not stuck behind it.
    t.waiting.erase(ticket_);
    if (t.serving == ticket_) AdvanceLocked(&t);
  }

  // Starts `node`'s collective now or once those before it have started.
  void Offer(const weft_node* node, StartFn start) {
    Turns& t = GlobalTurns();
    std::lock_guard<std::mutex> lock(t.mu);
    pending_[node] = std::move(start);
    if (t.serving == ticket_) DrainLocked(&t);
  }

 private:
  // Starts what is next in this run's order while it is here; once all
  // have started, the turn passes on.  Called with t->mu held, by this
  // run's turn only.
  void DrainLocked(Turns* t) {
    while (next_ < nodes_.size()) {
      auto it = pending_.find(nodes_[next_]);
      if (it == pending_.end()) return;
      StartFn start = std::move(it->second);
      pending_.erase(it);
      ++next_;
      start();
    }
    t->waiting.erase(ticket_);
    AdvanceLocked(t);
  }

  static void AdvanceLocked(Turns* t) {
    ++t->serving;
    // Tickets of runs that ended without a collective are skipped.
    while (t->serving < t->next_ticket) {
      auto it = t->waiting.find(t->serving);
      if (it == t->waiting.end()) {
        ++t->serving;
        continue;
      }
      it->second->DrainLocked(t);
      return;
    }
  }

  const std::vector<const weft_node*>& nodes_;
  size_t next_ = 0;
  uint64_t ticket_ = 0;
  std::map<const weft_node*, StartFn> pending_;
};

weft_status* OrderOf(RuntimeOpContext* ctx, RunOrder** out) {
  RunResource* r = nullptr;
  WEFT_RETURN_IF_ERROR(ctx->resources()->GetOrCreate(
      "collectives",
      [ctx](std::unique_ptr<RunResource>* made) -> weft_status* {
        if (ctx->plan_has_control_flow())
          return Errorf(WEFT_UNIMPLEMENTED,
                        "%s: collective ops in a run with loops or "
                        "conditionals are not supported (every rank must "
                        "start the same collectives in the same order)",
                        NodeWhere(ctx->node()).c_str());
        made->reset(new RunOrder(&ctx->plan_collectives()));
        return nullptr;
      },
      &r));
  *out = static_cast<RunOrder*>(r);
  return nullptr;
}

// ---- Launching in start order, bootstraps included ---------------------

// Every collective a run starts (RunOrder) is launched through here, in
// that order: handed to MPI, or to its device's plugin.  A launch that
// bootstraps a device's communicator holds the queue until the bootstrap's
// own MPI collectives are done, so the launches after it (MPI ones
// included) still reach MPI and each communicator in the same order on
// every rank.
class Sequencer {
 public:
  static Sequencer& Get() {
    static Sequencer* s = new Sequencer();  // used until exit
    return *s;
  }

  // Runs `launch` now, or once the launches before it have run and no
  // bootstrap holds the queue.
  void Submit(std::function<void()> launch) {
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(std::move(launch));
    DrainLocked(lock);
  }

  // Called by a launch before it starts a bootstrap: the queue waits,
  // `retry` (that launch again) first, until Resume.
  void Hold(std::function<void()> retry) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
    queue_.push_front(std::move(retry));
  }

  // The bootstrap is over: the waiting launches go on, in order.
  void Resume() {
    std::unique_lock<std::mutex> lock(mu_);
    held_ = false;
    DrainLocked(lock);
  }

 private:
  // Launches run unlocked (a plugin's collective on a device without
  // streams waits for the other ranks), by one thread at a time: a thread
  // that finds another draining leaves its launch to it.
  void DrainLocked(std::unique_lock<std::mutex>& lock) {
    if (draining_) return;
    draining_ = true;
    while (!held_ && !queue_.empty()) {
      std::function<void()> launch = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      launch();
      lock.lock();
    }
    draining_ = false;
  }

  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
  bool held_ = false;
  bool draining_ = false;
};

// ---- Communicators on devices (plugin interface 1.7) -----------------------

// Where a device's AllReduce and Broadcast go.  Decided once per device
// and process, by the first such op's bootstrap, the same on every rank.
enum class Path { kUndecided, kBootstrapping, kDevice, kMpi, kFailed };

struct DeviceComm {
  Path path = Path::kUndecided;
  weft_plugin_comm* comm = nullptr;  // kDevice
  std::string why;  // kFailed: the error; kMpi: why not the device's
};

struct Comms {
  std::mutex mu;
  std::map<Device*, DeviceComm> devices;  // devices live until exit
  bool exit_hook = false;
};

Comms& GlobalComms() {
  static Comms* comms = new Comms();  // used until exit
  return *comms;
}

Path PathOf(Device* d) {
  Comms& c = GlobalComms();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.devices.find(d);
  return it == c.devices.end() ? Path::kUndecided : it->second.path;
}

// At exit, after every run has waited for its streams: each communicator
// goes back to its plugin.
void DestroyComms() {
  Comms& c = GlobalComms();
  std::vector<std::pair<Device*, weft_plugin_comm*>> made;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto& [device, dc] : c.devices) {
      if (dc.path != Path::kDevice) continue;
      made.emplace_back(device, dc.comm);
      dc.path = Path::kFailed;
      dc.comm = nullptr;
      dc.why = "the process is exiting";
    }
  }
  for (auto& [device, comm] : made)
    device->api->collective_comm_destroy(device->handle, comm);
}

// What each rank tells the others when a device's communicator is
// bootstrapped: plain bytes, gathered by MPI (every rank runs one build).
struct JoinRecord {
  int32_t code = 0;      // 0: this rank can join; else why not (weft_code)
  uint32_t id_size = 0;  // rank 0's: the communicator's id
  char device[128] = {};
  char plugin[WEFT_PLUGIN_MAX_NAME] = {};
  char message[512] = {};
  unsigned char id[WEFT_PLUGIN_MAX_COMM_ID] = {};
};

// Whether a rank joined the communicator.
struct Joined {
  int32_t code = 0;
  char message[512] = {};
};

template <size_t N>
void CopyText(char (&dst)[N], const std::string& src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

// A bootstrap in flight; deleted when it settles.
struct Bootstrap {
  Device* device = nullptr;
  const weft_mpi_table* mpi = nullptr;
  int32_t rank = 0;
  int32_t size = 1;
  JoinRecord mine;
  std::vector<JoinRecord> all;
  Joined joined;
  std::vector<Joined> all_joined;
  weft_plugin_comm* comm = nullptr;
};

// "rank 1 (/device:CUDA:0 of weft-cuda: UNAVAILABLE: ...)"
std::string RankSays(const std::vector<JoinRecord>& all, size_t r) {
  const JoinRecord& j = all[r];
  std::string s = "rank " + std::to_string(r) + " (" + j.device + " of " +
                  j.plugin;
  if (j.code != 0)
    s += std::string(": ") + weft_code_name(static_cast<weft_code>(j.code)) +
         ": " + j.message;
  return s + ")";
}

// The path every rank takes, from the answers every rank gathered.
Path Decide(const std::vector<JoinRecord>& all, std::string* why) {
  for (size_t r = 1; r < all.size(); ++r)
    if (std::strcmp(all[r].plugin, all[0].plugin) != 0) {
      *why = "the ranks run this collective on devices of different "
             "plugins: " + RankSays(all, 0) + ", " + RankSays(all, r) +
             "; every rank must place each collective on a device of the "
             "same type";
      return Path::kFailed;
    }
  size_t can = 0, first_can = all.size(), first_cannot = all.size();
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].code == 0) {
      ++can;
      if (first_can == all.size()) first_can = r;
    } else if (first_cannot == all.size()) {
      first_cannot = r;
    }
  }
  if (can == all.size()) return Path::kDevice;
  if (can == 0) {
    *why = "no rank's plugin can: " + RankSays(all, 0);
    return Path::kMpi;
  }
  *why = "collectives on the device need every rank's plugin, or none "
         "(then all go through MPI): " + RankSays(all, first_cannot) +
         " cannot join while rank " + std::to_string(first_can) + " can";
  return Path::kFailed;
}

// Records the device's path and lets the waiting launches go on.
void Settle(Bootstrap* b, Path path, weft_plugin_comm* comm,
            const std::string& why) {
  {
    Comms& c = GlobalComms();
    std::lock_guard<std::mutex> lock(c.mu);
    DeviceComm& dc = c.devices[b->device];
    dc.path = path;
    dc.comm = comm;
    dc.why = why;
    if (path == Path::kDevice && !c.exit_hook) {
      c.exit_hook = true;
      std::atexit(DestroyComms);
    }
  }
  if (path == Path::kMpi) {
    const std::string line = "collectives on " + b->device->name +
                             " go through MPI in host memory: " + why;
    HostApi()->log(WEFT_LOG_INFO, line.c_str());
  }
  delete b;
  Sequencer::Get().Resume();
}

void OnJoined(void* arg, int32_t code, const char* message) {
  Bootstrap* b = static_cast<Bootstrap*>(arg);
  std::string why;
  if (code != 0) {
    why = std::string("exchanging the ranks' outcomes failed: ") + message;
  } else {
    for (Joined& j : b->all_joined) j.message[sizeof j.message - 1] = '\0';
    for (size_t r = 0; r < b->all_joined.size() && why.empty(); ++r)
      if (b->all_joined[r].code != 0)
        why = "rank " + std::to_string(r) + " could not join the "
              "communicator: " +
              weft_code_name(static_cast<weft_code>(b->all_joined[r].code)) +
              ": " + b->all_joined[r].message;
  }
  if (why.empty()) {
    Settle(b, Path::kDevice, b->comm, "");
    return;
  }
  if (b->comm != nullptr)
    b->device->api->collective_comm_destroy(b->device->handle, b->comm);
  Settle(b, Path::kFailed, nullptr, why);
}

void OnGathered(void* arg, int32_t code, const char* message) {
  Bootstrap* b = static_cast<Bootstrap*>(arg);
  if (code != 0) {
    Settle(b, Path::kFailed, nullptr,
           std::string("gathering the ranks' answers failed: ") + message);
    return;
  }
  // Another rank's bytes: bounded before they are read as text or an id.
  for (JoinRecord& j : b->all) {
    j.device[sizeof j.device - 1] = '\0';
    j.plugin[sizeof j.plugin - 1] = '\0';
    j.message[sizeof j.message - 1] = '\0';
    if (j.id_size > sizeof j.id) j.id_size = sizeof j.id;
  }
  std::string why;
  const Path path = Decide(b->all, &why);
  if (path != Path::kDevice) {
    Settle(b, path, nullptr, why);
    return;
  }
  // Every rank can: each joins rank 0's communicator (which may wait for
  // the others), then they tell each other how that went.
  const JoinRecord& root = b->all[0];
  Device* d = b->device;
  weft_status* st = d->api->collective_comm_create(
      d->handle, b->rank, b->size, root.id, root.id_size, &b->comm);
  if (st == nullptr && b->comm == nullptr)
    st = Error(WEFT_INTERNAL, "collective_comm_create gave no communicator");
  if (st != nullptr) {
    b->comm = nullptr;
    b->joined.code = weft_status_code(st) != WEFT_OK ? weft_status_code(st)
                                                      : WEFT_INTERNAL;
    CopyText(b->joined.message, PluginText(weft_status_message(st)));
    weft_status_destroy(st);
  }
  b->all_joined.resize(static_cast<size_t>(b->size));
  char error[512] = {};
  int32_t rc = b->mpi->allgather(&b->joined, sizeof(Joined),
                                 b->all_joined.data(), OnJoined, b, error,
                                 sizeof error);
  if (rc != 0) {
    if (b->comm != nullptr) d->api->collective_comm_destroy(d->handle, b->comm);
    Settle(b, Path::kFailed, nullptr,
           std::string("exchanging the ranks' outcomes failed: ") + error);
  }
}

// Asks this rank's plugin whether it can join (rank 0: and for the id),
// and gathers every rank's answer.
void StartBootstrap(Device* d, const weft_mpi_table* mpi, int32_t rank,
                    int32_t size) {
  Bootstrap* b = new Bootstrap();
  b->device = d;
  b->mpi = mpi;
  b->rank = rank;
  b->size = size;
  JoinRecord& mine = b->mine;
  CopyText(mine.device, d->name);
  CopyText(mine.plugin, d->plugin != nullptr ? d->plugin->name : d->type);
  uint64_t id_size = 0;
  weft_status* st = d->api->collective_unique_id(
      d->handle, rank == 0 ? mine.id : nullptr,
      rank == 0 ? sizeof mine.id : 0, &id_size);
  if (st == nullptr && rank == 0 &&
      (id_size == 0 || id_size > sizeof mine.id))
    st = Errorf(WEFT_INTERNAL,
                "collective_unique_id made an id of %llu bytes (1 to %d)",
                static_cast<unsigned long long>(id_size),
                WEFT_PLUGIN_MAX_COMM_ID);
  if (st != nullptr) {
    mine.code = weft_status_code(st) != WEFT_OK ? weft_status_code(st)
                                                : WEFT_INTERNAL;
    CopyText(mine.message, PluginText(weft_status_message(st)));
    weft_status_destroy(st);
  } else if (rank == 0) {
    mine.id_size = static_cast<uint32_t>(id_size);
  }
  b->all.resize(static_cast<size_t>(size));
  char error[512] = {};
  int32_t rc = mpi->allgather(&b->mine, sizeof(JoinRecord), b->all.data(),
                              OnGathered, b, error, sizeof error);
  if (rc != 0)
    Settle(b, Path::kFailed, nullptr,
           std::string("gathering the ranks' answers failed: ") + error);
}

// ---- The ops ---------------------------------------------------------------

enum class Kind { kAllReduce, kBroadcast, kAllGather };

// How a collective was prepared: for MPI in host memory, for its device's
// communicator, or (while the device's path is undecided) for either.
enum class Mode { kMpi, kDevice, kEither };

Mode ModeFor(Kind kind, Device* d) {
  if (kind == Kind::kAllGather || !d->has_collectives()) return Mode::kMpi;
  switch (PathOf(d)) {
    case Path::kMpi:
      return Mode::kMpi;
    case Path::kDevice:
    case Path::kFailed:
      return Mode::kDevice;
    default:
      return Mode::kEither;
  }
}

// One collective in flight: what MPI reads and writes, and how the node
// ends.  Shared by the op's completion and its cancel: a run that gives up
// (deadline, cancel) ends the node at once, while MPI may still write into
// `buffer`, which this keeps alive until the module calls back.
struct Flight {
  std::shared_ptr<AsyncDone> done;
  Kind kind = Kind::kAllReduce;
  Mode mode = Mode::kMpi;
  BufferRef buffer;         // host memory MPI writes (the output, or staging)
  BufferRef send;           // AllGather's input, host memory
  TensorValue output;       // the node's output
  bool staged = false;      // output on a device: copy `buffer` there
  Device* device = nullptr;
  double scale = 1;         // mean: 1 / size
  weft_dtype dtype = WEFT_FLOAT32;
  int64_t count = 0;
  int64_t root = 0;
  uint64_t in_bytes = 0;
  int64_t mpi_offset = 0;   // of the data in `buffer`
  const weft_mpi_table* mpi = nullptr;
  int32_t rank = 0;
  int32_t size = 1;
  // On the device: x where the device reads it, whether that is a copy
  // made for the op, the reduction, and the run's stream.
  TensorValue input;
  bool input_copied = false;
  int32_t reduction = WEFT_COLLECTIVE_SUM;
  DeviceQueue queue;
  std::mutex mu;            // a launch on the device against an early end
  std::atomic<bool> ended{false};
  std::shared_ptr<Flight> self;     // alive while MPI holds it
};

void Finish(std::shared_ptr<Flight> f, weft_status* status) {
  {
    std::lock_guard<std::mutex> lock(f->mu);
    if (f->ended.exchange(true)) {
      weft_status_destroy(status);
      return;
    }
  }
  if (status == nullptr && f->scale != 1) {
    void* data = static_cast<char*>(f->buffer->handle) +
                 (f->staged ? 0 : f->output.offset);
    if (f->dtype == WEFT_FLOAT32) {
      float* p = static_cast<float*>(data);
      for (int64_t i = 0; i < f->count; ++i)
        p[i] = static_cast<float>(p[i] * f->scale);
    } else {
      double* p = static_cast<double*>(data);
      for (int64_t i = 0; i < f->count; ++i) p[i] *= f->scale;
    }
  }
  if (status == nullptr && f->staged) {
    status = f->device->api->copy_host_to_device(
        f->device->handle, nullptr, f->buffer->handle,
        f->output.buffer->handle, f->output.offset, f->output.byte_size());
  }
  if (status == nullptr) f->done->set_output(0, f->output);
  f->done->Done(status);
}

void OnComplete(void* arg, int32_t code, const char* message) {
  std::shared_ptr<Flight> f =
      std::move(static_cast<Flight*>(arg)->self);  // MPI is done with it
  Finish(f, code == 0 ? nullptr
                      : Errorf(static_cast<weft_code>(code),
                               "%s: %s (a rank failed or left the job)",
                               f->done->where().c_str(), message));
}

// Hands a collective prepared for MPI (Mode kMpi or kEither) to the
// module, even when the run has given up on it: the other ranks' operation
// waits for this one, and a late rank then still gets its result.
void StartMpi(const std::shared_ptr<Flight>& f) {
  char error[512] = {};
  void* data = static_cast<char*>(f->buffer->handle) + f->mpi_offset;
  f->self = f;  // MPI's reference, dropped by OnComplete
  int32_t code = 0;
  switch (f->kind) {
    case Kind::kAllReduce:
      code = f->mpi->allreduce(data, f->count, f->dtype, WEFT_MPI_SUM,
                               OnComplete, f.get(), error, sizeof error);
      break;
    case Kind::kBroadcast:
      code = f->mpi->broadcast(data, static_cast<int64_t>(f->in_bytes),
                               static_cast<int32_t>(f->root), OnComplete,
                               f.get(), error, sizeof error);
      break;
    case Kind::kAllGather:
      code = f->mpi->allgather(f->send->handle,
                               static_cast<int64_t>(f->in_bytes), data,
                               OnComplete, f.get(), error, sizeof error);
      break;
  }
  if (code != 0) {
    f->self.reset();
    Finish(f, Errorf(static_cast<weft_code>(code), "%s: %s",
                     f->done->where().c_str(), error));
  }
}

// Enqueues the plugin's collective on the run's stream; the node completes
// now, its output ready for the work enqueued after it.
void StartOnDevice(const std::shared_ptr<Flight>& f, weft_plugin_comm* comm) {
  Device* d = f->device;
  weft_status* st = nullptr;
  {
    std::lock_guard<std::mutex> lock(f->mu);
    if (f->ended.load()) return;  // the run gave up on it: see the top
    f->ended.store(true);
    if (f->in_bytes != 0) {
      st = f->queue.enqueue([&](weft_plugin_stream* stream) {
        const TensorValue& in = f->input;
        const TensorValue& out = f->output;
        if (f->kind == Kind::kAllReduce)
          return d->api->collective_all_reduce(
              d->handle, comm, stream, in.buffer->handle, in.offset,
              out.buffer->handle, out.offset,
              static_cast<uint64_t>(f->count), f->dtype, f->reduction);
        return d->api->collective_broadcast(
            d->handle, comm, stream, in.buffer->handle, in.offset,
            out.buffer->handle, out.offset, f->in_bytes,
            static_cast<int32_t>(f->root));
      });
    }
  }
  if (st != nullptr) {
    st = Annotate(st, f->done->where() + " on " + d->name + " (the " +
                          (d->plugin != nullptr ? d->plugin->name : d->type) +
                          " plugin's collective)");
  } else {
    if (f->input_copied) f->queue.keep(std::move(f->input.buffer));
    f->done->set_output(0, f->output);
  }
  f->done->Done(st);
}

// Hands a collective on in its turn (Sequencer).
void Launch(const std::shared_ptr<Flight>& f) {
  if (f->mode == Mode::kMpi) {
    StartMpi(f);
    return;
  }
  Device* d = f->device;
  Path path;
  weft_plugin_comm* comm = nullptr;
  std::string why;
  bool bootstrap = false;
  {
    Comms& c = GlobalComms();
    std::lock_guard<std::mutex> lock(c.mu);
    DeviceComm& dc = c.devices[d];
    if (dc.path == Path::kUndecided) {
      dc.path = Path::kBootstrapping;
      bootstrap = true;
    }
    path = dc.path;
    comm = dc.comm;
    why = dc.why;
  }
  if (bootstrap) {
    // Held before the bootstrap starts: its end may come on another thread
    // before StartBootstrap returns.
    Sequencer::Get().Hold([f] { Launch(f); });
    StartBootstrap(d, f->mpi, f->rank, f->size);
    return;
  }
  switch (path) {
    case Path::kDevice:
      StartOnDevice(f, comm);
      return;
    case Path::kMpi:
      if (f->mode == Mode::kEither) {
        StartMpi(f);
        return;
      }
      break;  // a device's path never leaves kDevice or kFailed
    case Path::kFailed:
      Finish(f, Errorf(WEFT_FAILED_PRECONDITION,
                       "%s on %s: the device's collectives cannot run: %s",
                       f->done->where().c_str(), d->name.c_str(),
                       why.c_str()));
      return;
    default:
      break;  // the queue is held while a bootstrap runs
  }
  Finish(f, Errorf(WEFT_INTERNAL,
                   "%s on %s: prepared for a path the device did not take",
                   f->done->where().c_str(), d->name.c_str()));
}

weft_status* RunCollective(RuntimeOpContext* ctx, Kind kind) {
  const weft_node* n = ctx->node();
  const distributed::World* world = nullptr;
  WEFT_RETURN_IF_ERROR(distributed::GetWorld(&world));
  const TensorValue& x = ctx->input(0);
  std::string reduction = "sum";
  if (const AttrValue* a = FindAttr(n->attrs, "reduction")) reduction = a->s;
  int64_t root = 0;
  if (const AttrValue* a = FindAttr(n->attrs, "root")) root = a->i;
  if (kind == Kind::kBroadcast && (root < 0 || root >= world->size))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: root %lld is not a rank of this job (0..%d)",
                  NodeWhere(n).c_str(), static_cast<long long>(root),
                  world->size - 1);
  // The output's shape; AllGather stacks every rank's x along axis 0.
  Dims out_dims = x.dims;
  if (kind == Kind::kAllGather) {
    std::vector<int64_t> d(x.dims.data(), x.dims.data() + x.dims.rank());
    if (d.empty()) d.push_back(1);
    d[0] *= world->size;
    out_dims.assign(d.data(), static_cast<int32_t>(d.size()));
  }
  // Alone: the identity (AllGather of one rank is x itself).
  if (world->mpi == nullptr) {
    TensorValue copy;
    WEFT_RETURN_IF_ERROR(ctx->Localize(x, &copy));
    if (kind == Kind::kAllGather && x.dims.rank() == 0) {
      TensorValue reshaped = copy;
      reshaped.dims = out_dims;
      copy = reshaped;
    }
    ctx->set_output(0, copy);
    return nullptr;
  }

  auto f = std::make_shared<Flight>();
  f->kind = kind;
  f->device = ctx->device();
  f->mode = ModeFor(kind, f->device);
  f->dtype = x.dtype;
  f->count = x.elements();
  f->root = root;
  f->mpi = world->mpi;
  f->rank = world->rank;
  f->size = world->size;
  if (kind == Kind::kAllReduce && reduction == "mean") {
    f->scale = 1.0 / world->size;  // the MPI path's mean
    f->reduction = WEFT_COLLECTIVE_MEAN;
  }
  WEFT_RETURN_IF_ERROR(ctx->Allocate(x.dtype, out_dims, &f->output));
  const uint64_t in_bytes = x.byte_size();
  const uint64_t out_bytes = f->output.byte_size();
  f->in_bytes = in_bytes;
  if (f->mode != Mode::kMpi) {
    // For the device's communicator: x on the device, the output there.
    WEFT_RETURN_IF_ERROR(ctx->Localize(x, &f->input));
    f->input_copied = f->input.buffer.get() != x.buffer.get();
    f->queue = ctx->device_queue();
  }
  if (f->mode != Mode::kDevice) {
    // For MPI: host memory it reads and writes.  While the device's path
    // is undecided that is always a staging buffer (the output is the
    // device's collective's).
    f->staged = f->mode == Mode::kEither || !f->device->host_memory();
    if (f->staged) {
      f->buffer = AllocateHostBuffer(out_bytes, false);
      if (!f->buffer && out_bytes != 0)
        return Errorf(WEFT_RESOURCE_EXHAUSTED, "%s: out of host memory",
                      NodeWhere(n).c_str());
    } else {
      f->buffer = f->output.buffer;
    }
    f->mpi_offset = f->staged ? 0 : static_cast<int64_t>(f->output.offset);
    // What this rank sends: in place for AllReduce and Broadcast (the
    // output starts as x), a host copy of x for AllGather.
    if (kind == Kind::kAllGather) {
      f->send = AllocateHostBuffer(in_bytes, false);
      if (!f->send && in_bytes != 0)
        return Errorf(WEFT_RESOURCE_EXHAUSTED, "%s: out of host memory",
                      NodeWhere(n).c_str());
      if (in_bytes != 0)
        WEFT_RETURN_IF_ERROR(ctx->ReadToHost(x, f->send->handle, in_bytes));
    } else if (in_bytes != 0 &&
               (kind == Kind::kAllReduce || root == world->rank)) {
      // A Broadcast overwrites every rank's output but the root's: only
      // the root's x is read.
      char* dst = static_cast<char*>(f->buffer->handle) + f->mpi_offset;
      WEFT_RETURN_IF_ERROR(ctx->ReadToHost(x, dst, in_bytes));
    }
  }

  RunOrder* order = nullptr;
  WEFT_RETURN_IF_ERROR(OrderOf(ctx, &order));
  std::weak_ptr<Flight> weak = f;
  const int32_t size = world->size;
  f->done = ctx->Park([weak, size](weft_status* why) {
    std::shared_ptr<Flight> g = weak.lock();
    if (!g) {
      weft_status_destroy(why);
      return;
    }
    // A deadline that passes while a collective waits means the other
    // ranks did not all come: say so (MPI cannot tell which one is missing).
    if (weft_status_code(why) == WEFT_DEADLINE_EXCEEDED) {
      const std::string alive = distributed::Liveness(1000, -1);
      weft_status* unavailable = Errorf(
          WEFT_UNAVAILABLE,
          "%s waited for the other ranks of the job (%d ranks) until the "
          "run's deadline: a rank died, hung or runs a different program%s%s "
          "(%s)",
          g->done->where().c_str(), size, alive.empty() ? "" : "; ",
          alive.c_str(), weft_status_message(why));
      weft_status_destroy(why);
      why = unavailable;
    }
    Finish(g, why);
  });
  order->Offer(n, [f]() { Sequencer::Get().Submit([f] { Launch(f); }); });
  return nullptr;
}

weft_status* AllReduce(RuntimeOpContext* ctx) {
  return RunCollective(ctx, Kind::kAllReduce);
}
weft_status* Broadcast(RuntimeOpContext* ctx) {
  return RunCollective(ctx, Kind::kBroadcast);
}
weft_status* AllGather(RuntimeOpContext* ctx) {
  return RunCollective(ctx, Kind::kAllGather);
}

// ---- Schemas ---------------------------------------------------------------

weft_status* InferCollective(InferenceContext& c, Kind kind) {
  const weft_dtype t = c.input_dtypes[0];
  if (t != WEFT_FLOAT32 && t != WEFT_FLOAT64 && t != WEFT_INT32 &&
      t != WEFT_INT64 && kind == Kind::kAllReduce)
    return c.Fail("AllReduce takes float32, float64, int32 or int64, not %s",
                  weft_dtype_name(t));
  const ShapeInfo& s = c.input_shapes[0];
  if (!s.fully_known())
    return c.Fail("input shape %s is not fully known: every rank must send "
                  "the same number of bytes, which the graph must fix",
                  s.ToString().c_str());
  if (kind == Kind::kAllReduce) {
    const AttrValue* r = c.attr("reduction");
    if (r->s != "sum" && r->s != "mean")
      return c.Fail("reduction '%s': want \"sum\" or \"mean\"", r->s.c_str());
    if (r->s == "mean" && t != WEFT_FLOAT32 && t != WEFT_FLOAT64)
      return c.Fail("a mean needs float32 or float64, not %s",
                    weft_dtype_name(t));
  }
  c.output_dtypes = {t};
  if (kind == Kind::kAllGather) {
    // The leading dim is x's times the number of ranks, known only when
    // the job runs.
    std::vector<int64_t> d = s.dims;
    if (d.empty()) d.push_back(1);
    d[0] = -1;
    c.output_shapes = {ShapeInfo::Of(d)};
  } else {
    c.output_shapes = {s};
  }
  return nullptr;
}

}  // namespace

void RegisterCollectiveOps(OpRegistry* r) {
  {
    OpDef d = RuntimeOp("AllReduce", {"x"}, AllReduce,
                        "The sum (or mean) of x over every rank of the MPI "
                        "job, on every rank.");
    d.attrs = {Optional("reduction", AttrType::kString, StringValue("sum"))};
    d.infer = [](InferenceContext& c) {
      return InferCollective(c, Kind::kAllReduce);
    };
    d.collective = true;
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOp("Broadcast", {"x"}, Broadcast,
                        "Rank root's x, on every rank of the MPI job.");
    d.attrs = {Optional("root", AttrType::kInt, IntValue(0))};
    d.infer = [](InferenceContext& c) {
      return InferCollective(c, Kind::kBroadcast);
    };
    d.collective = true;
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOp("AllGather", {"x"}, AllGather,
                        "Every rank's x, in rank order, along axis 0 (a "
                        "scalar counts as [1]).");
    d.infer = [](InferenceContext& c) {
      return InferCollective(c, Kind::kAllGather);
    };
    d.collective = true;
    r->Add(std::move(d));
  }
}

void RegisterCollectiveGradients() {
  // Each rank's y depends on every rank's x: the gradient of a sum is the
  // sum of the ranks' output gradients, and of a mean their mean.
  RegisterGradientWith("AllReduce", [](GradBuilder& g) {
    weft_op_builder* b = g.Begin("AllReduce", {g.dy()});
    g.CopyAttrs(b, {"reduction"});
    g.Set(0, g.Finish(b));
  });
  RegisterNotDifferentiable("Broadcast");
  RegisterNotDifferentiable("AllGather");
}

}  // namespace weft
