#include "distributed/transfer.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/status.h"
#include "device/device.h"
#include "distributed/cluster.h"
#include "graph/graph.h"
#include "ops/runtime_op.h"
#include "tensor/buffer.h"
#include "tensor/tensor_value.h"

namespace weft {
namespace distributed {

uint64_t NameHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

// ---- The wire header -------------------------------------------------------

constexpr uint32_t kMagic = 0x57465431;  // "WFT1"
constexpr int32_t kMaxRank = 32;

struct Header {
  std::string key;
  weft_dtype dtype = WEFT_DTYPE_INVALID;
  std::vector<int64_t> dims;
  bool dead = false;
};

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string Encode(const Header& h) {
  std::string out;
  Put<uint32_t>(&out, kMagic);
  Put<uint32_t>(&out, static_cast<uint32_t>(h.key.size()));
  out += h.key;
  Put<int32_t>(&out, h.dtype);
  Put<int32_t>(&out, static_cast<int32_t>(h.dims.size()));
  for (int64_t d : h.dims) Put<int64_t>(&out, d);
  Put<uint8_t>(&out, h.dead ? 1 : 0);
  return out;
}

class Reader {
 public:
  Reader(const void* p, int64_t n)
      : p_(static_cast<const char*>(p)), left_(n < 0 ? 0 : n) {}
  template <typename T>
  bool Get(T* v) {
    if (left_ < static_cast<int64_t>(sizeof *v)) return false;
    std::memcpy(v, p_, sizeof *v);
    p_ += sizeof *v;
    left_ -= sizeof *v;
    return true;
  }
  bool Bytes(std::string* s, uint32_t n) {
    if (left_ < static_cast<int64_t>(n)) return false;
    s->assign(p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  int64_t left() const { return left_; }

 private:
  const char* p_;
  int64_t left_;
};

// The key first (to know whom an error is for), then the rest; `why` says
// what is wrong with a header that has a key.
bool Decode(const void* data, int64_t size, Header* h, std::string* why) {
  Reader r(data, size);
  uint32_t magic = 0, key_len = 0;
  if (!r.Get(&magic) || magic != kMagic || !r.Get(&key_len) ||
      !r.Bytes(&h->key, key_len))
    return false;
  int32_t dtype = 0, rank = 0;
  uint8_t dead = 0;
  if (!r.Get(&dtype) || !r.Get(&rank) || rank < 0 || rank > kMaxRank) {
    *why = "a malformed header (dtype or rank)";
    return true;
  }
  h->dims.resize(static_cast<size_t>(rank));
  for (int64_t& d : h->dims)
    if (!r.Get(&d) || d < 0) {
      *why = "a malformed header (dims)";
      return true;
    }
  if (!r.Get(&dead) || r.left() != 0) {
    *why = "a malformed header (length)";
    return true;
  }
  h->dtype = static_cast<weft_dtype>(dtype);
  h->dead = dead != 0;
  if (weft_dtype_size_of(h->dtype) == 0) *why = "an unknown dtype";
  return true;
}

}  // namespace

std::string EncodeTransferHeader(const std::string& key, weft_dtype dtype,
                                 const std::vector<int64_t>& dims, bool dead) {
  Header h;
  h.key = key;
  h.dtype = dtype;
  h.dims = dims;
  h.dead = dead;
  return Encode(h);
}

bool ReadTransferHeader(const void* header, int64_t header_bytes,
                        int64_t payload_bytes, ArrivalHeader* out) {
  Header h;
  std::string why;
  *out = ArrivalHeader();
  if (!Decode(header, header_bytes, &h, &why)) return false;
  out->key = h.key;
  if (!why.empty()) {
    out->error = why;
    return true;
  }
  out->dtype = h.dtype;
  out->dims = h.dims;
  out->dead = h.dead;
  if (h.dead) {  // an untaken branch's value: nothing follows
    if (payload_bytes != 0)
      out->error = std::to_string(payload_bytes) + " bytes for a dead value";
    return true;
  }
  size_t bytes = 0;
  if (weft_status* st = CheckedByteSize(h.dtype, h.dims.data(),
                                        static_cast<int32_t>(h.dims.size()),
                                        &bytes)) {
    out->error = std::string("a shape whose size overflows: ") +
                 weft_status_message(st);
    weft_status_destroy(st);
    return true;
  }
  out->bytes = bytes;
  if (static_cast<int64_t>(bytes) != payload_bytes)
    out->error = std::to_string(payload_bytes) + " bytes for a value of " +
                 std::to_string(bytes);
  return true;
}

namespace {

// ---- The rendezvous --------------------------------------------------------

// The value, or dead (an untaken branch on the sending task).
using RecvDone = std::function<void(weft_status*, TensorValue, bool dead)>;

struct Slot {
  bool landed = false;
  bool dead = false;
  weft_code code = WEFT_OK;
  std::string error;
  TensorValue value;
  RecvDone waiter;
  uint64_t waiter_id = 0;
  bool urgent = false;  // the waiter asked the progress thread to poll
};

class Rendezvous {
 public:
  static weft_status* Get(Rendezvous** out) {
    static Rendezvous* r = new Rendezvous();  // progress thread uses it
    static weft_status* failed = nullptr;
    static std::once_flag once;
    std::call_once(once, [] { failed = r->Start(); });
    if (failed != nullptr)
      return Error(weft_status_code(failed), weft_status_message(failed));
    *out = r;
    return nullptr;
  }

  const World* world() const { return world_; }

  // Where arriving payloads land: the host device the TaskRecvs run on,
  // whose allocator keeps freed blocks (a fresh 64 MiB block from the
  // system would be page-faulted in on every transfer).  Until a TaskRecv
  // has run, plain host memory.
  void SetLanding(Device* d) {
    if (d != nullptr && d->host_memory())
      landing_.store(d, std::memory_order_release);
  }

  // Calls `done` once with what arrives from `source` under `key`, now if
  // it is here.  Returns an id for Cancel.  `urgent`: the progress thread
  // polls in short steps while this waits (a value a run waits for); a
  // message that may come much later (a server's next request) does not
  // keep it awake.
  uint64_t Recv(int32_t source, const std::string& key, RecvDone done,
                bool urgent = true) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = table_.try_emplace(Full(source, key)).first;
    Slot& s = it->second;
    if (s.landed) {
      Slot got = std::move(s);
      table_.erase(it);
      lock.unlock();
      Deliver(std::move(got), done);
      return 0;
    }
    s.waiter = std::move(done);
    s.waiter_id = ++next_id_;
    s.urgent = urgent && world_->mpi != nullptr;
    if (s.urgent) world_->mpi->expect(1);
    return s.waiter_id;
  }

  // Takes back a wait that has not been answered; false when it was.
  bool Cancel(int32_t source, const std::string& key, uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(Full(source, key));
    if (it == table_.end() || id == 0 || it->second.waiter_id != id)
      return false;
    it->second.waiter = nullptr;
    it->second.waiter_id = 0;
    if (it->second.urgent) world_->mpi->expect(-1);
    it->second.urgent = false;
    // Nothing arriving for it: forget the key (an arrival in progress
    // keeps it until it lands).
    if (!it->second.landed && !it->second.value.buffer && !it->second.dead)
      table_.erase(it);
    return true;
  }

 private:
  static std::string Full(int32_t source, const std::string& key) {
    return std::to_string(source) + "|" + key;
  }

  static void Deliver(Slot got, const RecvDone& done) {
    if (got.code != WEFT_OK)
      done(Error(got.code, got.error), TensorValue(), false);
    else
      done(nullptr, std::move(got.value), got.dead);
  }

  weft_status* Start() {
    WEFT_RETURN_IF_ERROR(GetWorld(&world_));
    if (world_->mpi == nullptr) return nullptr;
    char error[512] = {};
    int32_t code = world_->mpi->listen(Arrival, Landed, this, error,
                                       sizeof error);
    if (code != 0) return Errorf(static_cast<weft_code>(code), "%s", error);
    return nullptr;
  }

  static void* Arrival(void* arg, int32_t source, const void* header,
                       int64_t header_bytes, int64_t payload_bytes,
                       void** token) {
    auto* self = static_cast<Rendezvous*>(arg);
    *token = nullptr;
    ArrivalHeader a;
    if (!ReadTransferHeader(header, header_bytes, payload_bytes, &a)) {
      std::fprintf(stderr,
                   "weft: dropped a message from rank %d that is not a Weft "
                   "transfer (%lld header bytes)\n",
                   source, static_cast<long long>(header_bytes));
      return nullptr;
    }
    std::string full = Full(source, a.key);
    std::lock_guard<std::mutex> lock(self->mu_);
    Slot& s = self->table_[full];
    auto fail = [&](weft_code code, std::string what) -> void* {
      if (s.code == WEFT_OK) {
        s.code = code;
        s.error = std::move(what);
      }
      *token = new std::string(full);
      return nullptr;
    };
    if (s.landed || s.value.buffer || s.dead)
      return fail(WEFT_INTERNAL,
                  "rank " + std::to_string(source) + " sent '" + a.key +
                      "' twice");
    if (!a.error.empty())
      return fail(WEFT_DATA_LOSS, "rank " + std::to_string(source) +
                                      " sent '" + a.key + "' with " + a.error);
    if (a.dead) {
      s.dead = true;
      *token = new std::string(full);
      return nullptr;
    }
    TensorValue v;
    v.dtype = a.dtype;
    v.dims.assign(a.dims.data(), static_cast<int32_t>(a.dims.size()));
    const size_t bytes = static_cast<size_t>(a.bytes);
    if (Device* d = self->landing_.load(std::memory_order_acquire)) {
      weft_status_destroy(d->Allocate(bytes, &v.buffer));
    } else {
      v.buffer = AllocateHostBuffer(bytes, false);
    }
    if (!v.buffer && bytes != 0)
      return fail(WEFT_RESOURCE_EXHAUSTED,
                  "out of host memory receiving '" + a.key + "' (" +
                      std::to_string(bytes) + " bytes)");
    s.value = std::move(v);
    *token = new std::string(full);
    return bytes != 0 ? s.value.host_data() : nullptr;
  }

  static void Landed(void* arg, void* token, int32_t code,
                     const char* message) {
    auto* self = static_cast<Rendezvous*>(arg);
    std::unique_ptr<std::string> full(static_cast<std::string*>(token));
    if (!full) return;
    std::unique_lock<std::mutex> lock(self->mu_);
    auto it = self->table_.find(*full);
    if (it == self->table_.end()) return;
    Slot& s = it->second;
    s.landed = true;
    if (code != 0 && s.code == WEFT_OK) {
      s.code = static_cast<weft_code>(code);
      s.error = message ? message : "the transfer failed";
    }
    if (!s.waiter) return;  // kept until its TaskRecv comes
    if (s.urgent) self->world_->mpi->expect(-1);
    RecvDone done = std::move(s.waiter);
    Slot got = std::move(s);
    self->table_.erase(it);
    lock.unlock();
    Deliver(std::move(got), done);
  }

  const World* world_ = nullptr;
  std::atomic<Device*> landing_{nullptr};
  std::mutex mu_;
  std::unordered_map<std::string, Slot> table_;
  uint64_t next_id_ = 0;
};

// ---- Run numbers -----------------------------------------------------------

// This rank's count of runs of one plan: the <run> of every key.
class RunNumber : public RunResource {
 public:
  explicit RunNumber(uint64_t n) : n(n) {}
  uint64_t n;
};

uint64_t NextRunOf(const std::string& plan) {
  static std::mutex mu;
  static auto* counts = new std::map<std::string, uint64_t>();
  std::lock_guard<std::mutex> lock(mu);
  return (*counts)[plan]++;
}

std::string Attr(const weft_node* n, const char* name) {
  const AttrValue* a = FindAttr(n->attrs, name);
  return a ? a->s : std::string();
}

int64_t IntAttr(const weft_node* n, const char* name) {
  const AttrValue* a = FindAttr(n->attrs, name);
  return a ? a->i : 0;
}

// The full key of this node's value in this run.
weft_status* KeyOf(RuntimeOpContext* ctx, std::string* key) {
  const weft_node* n = ctx->node();
  const std::string plan = Attr(n, "plan");
  RunResource* r = nullptr;
  WEFT_RETURN_IF_ERROR(ctx->resources()->GetOrCreate(
      "task_run",
      [&plan](std::unique_ptr<RunResource>* made) -> weft_status* {
        made->reset(new RunNumber(NextRunOf(plan)));
        return nullptr;
      },
      &r));
  *key = plan + "/" + std::to_string(static_cast<RunNumber*>(r)->n) + "/" +
         Attr(n, "edge");
  for (int32_t l = 0; l < ctx->frame_depth(); ++l)
    *key += "/" + std::to_string(ctx->iteration(l));
  return nullptr;
}

// The message a deadline gives a transfer still waiting for its peer.
weft_status* PeerMissing(weft_status* why, const std::string& where,
                         const weft_node* n, const char* what) {
  if (weft_status_code(why) != WEFT_DEADLINE_EXCEEDED) return why;
  const std::string alive =
      Liveness(1000, static_cast<int32_t>(IntAttr(n, "peer")));
  weft_status* st = Errorf(
      WEFT_UNAVAILABLE,
      "%s waited for task %s (rank %lld) to %s '%s' until the run's "
      "deadline: that task died, hung or runs a different program%s%s (%s)",
      where.c_str(), Attr(n, "peer_name").c_str(),
      static_cast<long long>(IntAttr(n, "peer")), what,
      Attr(n, "value").c_str(), alive.empty() ? "" : "; ", alive.c_str(),
      weft_status_message(why));
  weft_status_destroy(why);
  return st;
}

// The rendezvous, which needs MPI: a cluster session of several tasks
// exists only under a launcher, so this fails only for a process that
// lost its launcher's environment.
weft_status* Transport(const weft_node* n, Rendezvous** out) {
  WEFT_RETURN_IF_ERROR(Rendezvous::Get(out));
  if ((*out)->world()->mpi == nullptr)
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "%s: a transfer between tasks, but this process was not "
                  "started by an MPI launcher",
                  n ? NodeWhere(n).c_str() : "a cluster session");
  return nullptr;
}

// ---- TaskSend --------------------------------------------------------------

struct SendFlight {
  std::shared_ptr<AsyncDone> done;
  TensorValue value;    // alive until MPI is done with its bytes
  std::string header;
  std::atomic<bool> ended{false};
  std::shared_ptr<SendFlight> self;  // MPI's reference
};

void EndSend(const std::shared_ptr<SendFlight>& f, weft_status* st) {
  if (f->ended.exchange(true)) {
    weft_status_destroy(st);
    return;
  }
  f->done->Done(st);
}

void SendComplete(void* arg, int32_t code, const char* message) {
  std::shared_ptr<SendFlight> f =
      std::move(static_cast<SendFlight*>(arg)->self);
  EndSend(f, code == 0 ? nullptr
                       : Errorf(static_cast<weft_code>(code), "%s: %s",
                                f->done->where().c_str(), message));
}

weft_status* TaskSend(RuntimeOpContext* ctx) {
  const weft_node* n = ctx->node();
  Rendezvous* rv = nullptr;
  WEFT_RETURN_IF_ERROR(Transport(n, &rv));
  auto f = std::make_shared<SendFlight>();
  const bool dead = ctx->inputs_dead();
  if (ctx->num_inputs() > 0 && !dead) {
    f->value = ctx->input(0);
  } else {  // a control edge: an empty token
    f->value.dtype = WEFT_BOOL;
    const int64_t zero = 0;
    f->value.dims.assign(&zero, 1);
  }
  if (f->value.byte_size() != 0 && f->value.host_data() == nullptr)
    return Errorf(WEFT_INTERNAL, "%s: the value is not in host memory",
                  NodeWhere(n).c_str());
  Header h;
  WEFT_RETURN_IF_ERROR(KeyOf(ctx, &h.key));
  h.dtype = f->value.dtype;
  h.dims.assign(f->value.dims.data(),
                f->value.dims.data() + f->value.dims.rank());
  h.dead = dead;
  f->header = Encode(h);
  std::weak_ptr<SendFlight> weak = f;
  f->done = ctx->Park([weak, n](weft_status* why) {
    std::shared_ptr<SendFlight> g = weak.lock();
    if (!g) {
      weft_status_destroy(why);
      return;
    }
    EndSend(g, PeerMissing(why, g->done->where(), n, "take"));
  });
  f->self = f;
  char error[512] = {};
  const int32_t code = rv->world()->mpi->send(
      static_cast<int32_t>(IntAttr(n, "peer")), f->header.data(),
      static_cast<int64_t>(f->header.size()), f->value.host_data(),
      static_cast<int64_t>(f->value.byte_size()), SendComplete, f.get(),
      error, sizeof error);
  if (code != 0) {
    f->self.reset();
    EndSend(f, Errorf(static_cast<weft_code>(code), "%s: %s",
                      f->done->where().c_str(), error));
  }
  return nullptr;
}

// ---- TaskRecv --------------------------------------------------------------

bool Allows(const ShapeInfo& s, const Dims& d) {
  if (!s.known_rank()) return true;
  if (s.rank != d.rank()) return false;
  for (int32_t i = 0; i < s.rank; ++i)
    if (s.dims[static_cast<size_t>(i)] >= 0 &&
        s.dims[static_cast<size_t>(i)] != d.data()[i])
      return false;
  return true;
}

struct RecvFlight {
  std::shared_ptr<AsyncDone> done;
  std::atomic<bool> ended{false};
};

weft_status* TaskRecv(RuntimeOpContext* ctx) {
  const weft_node* n = ctx->node();
  Rendezvous* rv = nullptr;
  WEFT_RETURN_IF_ERROR(Transport(n, &rv));
  rv->SetLanding(ctx->device());
  std::string key;
  WEFT_RETURN_IF_ERROR(KeyOf(ctx, &key));
  const int32_t source = static_cast<int32_t>(IntAttr(n, "peer"));
  auto f = std::make_shared<RecvFlight>();
  auto id = std::make_shared<std::atomic<uint64_t>>(0);
  std::weak_ptr<RecvFlight> weak = f;
  f->done = ctx->Park([weak, rv, source, key, id, n](weft_status* why) {
    std::shared_ptr<RecvFlight> g = weak.lock();
    // Only a wait taken back ends here; one already answered ends there.
    if (!g || !rv->Cancel(source, key, id->load()) || g->ended.exchange(true)) {
      weft_status_destroy(why);
      return;
    }
    g->done->Done(PeerMissing(why, g->done->where(), n, "send"));
  });
  const weft_dtype want = n->output_dtypes[0];
  const ShapeInfo& shape = n->output_shapes[0];
  const bool may_be_dead = ctx->plan_has_control_flow();
  id->store(rv->Recv(source, key, [f, n, want, shape, may_be_dead](
                                      weft_status* st, TensorValue v,
                                      bool dead) {
    if (f->ended.exchange(true)) {
      weft_status_destroy(st);
      return;
    }
    if (st == nullptr && dead) {
      if (may_be_dead) {
        f->done->set_dead();
      } else {
        st = Errorf(WEFT_INTERNAL,
                    "%s: task %s sent '%s' dead, which this plan cannot "
                    "carry: the ranks run different graphs",
                    f->done->where().c_str(), Attr(n, "peer_name").c_str(),
                    Attr(n, "value").c_str());
      }
      f->done->Done(st);
      return;
    }
    if (st == nullptr && (v.dtype != want || !Allows(shape, v.dims)))
      st = Errorf(WEFT_INTERNAL,
                  "%s: task %s sent %s %s for '%s', which is %s %s here: the "
                  "ranks run different graphs",
                  f->done->where().c_str(), Attr(n, "peer_name").c_str(),
                  weft_dtype_name(v.dtype), v.dims.ToString().c_str(),
                  Attr(n, "value").c_str(), weft_dtype_name(want),
                  shape.ToString().c_str());
    if (st == nullptr) f->done->set_output(0, std::move(v));
    f->done->Done(st);
  }));
  return nullptr;
}

// ---- Messages outside plans ------------------------------------------------

struct MessageFlight {
  TensorValue value;
  std::string header;
  std::function<void(weft_status*)> done;
};

void MessageSent(void* arg, int32_t code, const char* message) {
  std::unique_ptr<MessageFlight> f(static_cast<MessageFlight*>(arg));
  if (f->done)
    f->done(code == 0 ? nullptr
                      : Errorf(static_cast<weft_code>(code), "%s", message));
}

}  // namespace

weft_status* SendMessage(int32_t dest, const std::string& key,
                         TensorValue value,
                         std::function<void(weft_status*)> done) {
  Rendezvous* rv = nullptr;
  WEFT_RETURN_IF_ERROR(Transport(nullptr, &rv));
  if (value.byte_size() != 0 && value.host_data() == nullptr)
    return Error(WEFT_INTERNAL, "a message that is not in host memory");
  auto f = std::make_unique<MessageFlight>();
  f->value = std::move(value);
  f->header = Encode(Header{
      key, f->value.dtype,
      std::vector<int64_t>(f->value.dims.data(),
                           f->value.dims.data() + f->value.dims.rank()),
      false});
  f->done = std::move(done);
  char error[512] = {};
  MessageFlight* raw = f.get();
  const int32_t code = rv->world()->mpi->send(
      dest, raw->header.data(), static_cast<int64_t>(raw->header.size()),
      raw->value.host_data(), static_cast<int64_t>(raw->value.byte_size()),
      MessageSent, raw, error, sizeof error);
  if (code != 0) return Errorf(static_cast<weft_code>(code), "%s", error);
  f.release();  // MessageSent owns it now
  return nullptr;
}

weft_status* ReceiveMessage(int32_t source, const std::string& key,
                            bool urgent, MessageDone done, uint64_t* id) {
  Rendezvous* rv = nullptr;
  WEFT_RETURN_IF_ERROR(Transport(nullptr, &rv));
  *id = rv->Recv(
      source, key,
      [done = std::move(done), key](weft_status* st, TensorValue v,
                                    bool dead) {
        if (st == nullptr && dead)
          st = Errorf(WEFT_INTERNAL, "message '%s' arrived dead",
                      key.c_str());
        done(st, std::move(v));
      },
      urgent);
  return nullptr;
}

bool CancelMessage(int32_t source, const std::string& key, uint64_t id) {
  Rendezvous* rv = nullptr;
  if (weft_status* st = Rendezvous::Get(&rv)) {
    weft_status_destroy(st);
    return false;
  }
  return rv->Cancel(source, key, id);
}

void SetTaskRun(RunResources* resources, uint64_t run) {
  RunResource* r = nullptr;
  weft_status_destroy(resources->GetOrCreate(
      "task_run",
      [run](std::unique_ptr<RunResource>* made) -> weft_status* {
        made->reset(new RunNumber(run));
        return nullptr;
      },
      &r));
}

namespace {

OpDef MakeDef(const char* name, std::vector<std::string> inputs,
              RuntimeOpFn fn, int outputs) {
  OpDef d = RuntimeOp(name, std::move(inputs), fn,
                      "Planner-made: a value crossing between tasks.");
  d.num_outputs = outputs;
  return d;
}

}  // namespace

const OpDef* TaskSendDef() {
  static const OpDef* d = [] {
    auto* def = new OpDef(MakeDef("_TaskSend", {"x"}, TaskSend, 0));
    def->runs_dead = true;  // the receiver must hear of an untaken branch
    return def;
  }();
  return d;
}

const OpDef* TaskRecvDef() {
  static const OpDef* d = new OpDef(MakeDef("_TaskRecv", {}, TaskRecv, 1));
  return d;
}

}  // namespace distributed
}  // namespace weft
