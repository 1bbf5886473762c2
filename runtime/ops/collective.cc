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
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "device/device.h"
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

// ---- The ops ---------------------------------------------------------------

enum class Kind { kAllReduce, kBroadcast, kAllGather };

// One collective in flight: what MPI reads and writes, and how the node
// ends.  Shared by the op's completion and its cancel: a run that gives up
// (deadline, cancel) ends the node at once, while MPI may still write into
// `buffer`, which this keeps alive until the module calls back.
struct Flight {
  std::shared_ptr<AsyncDone> done;
  BufferRef buffer;         // host memory MPI writes (the output, or staging)
  BufferRef send;           // AllGather's input, host memory
  TensorValue output;       // the node's output
  bool staged = false;      // output on a device: copy `buffer` there
  Device* device = nullptr;
  double scale = 1;         // mean: 1 / size
  weft_dtype dtype = WEFT_FLOAT32;
  int64_t count = 0;
  std::atomic<bool> ended{false};
  std::shared_ptr<Flight> self;     // alive while MPI holds it
};

void Finish(std::shared_ptr<Flight> f, weft_status* status) {
  if (f->ended.exchange(true)) {
    weft_status_destroy(status);
    return;
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
  f->device = ctx->device();
  f->dtype = x.dtype;
  f->count = x.elements();
  if (kind == Kind::kAllReduce && reduction == "mean")
    f->scale = 1.0 / world->size;
  WEFT_RETURN_IF_ERROR(ctx->Allocate(x.dtype, out_dims, &f->output));
  const uint64_t in_bytes = x.byte_size();
  const uint64_t out_bytes = f->output.byte_size();
  f->staged = !f->device->host_memory();
  if (f->staged) {
    f->buffer = AllocateHostBuffer(out_bytes, false);
    if (!f->buffer && out_bytes != 0)
      return Errorf(WEFT_RESOURCE_EXHAUSTED, "%s: out of host memory",
                    NodeWhere(n).c_str());
  } else {
    f->buffer = f->output.buffer;
  }
  // What this rank sends: in place for AllReduce and Broadcast (the output
  // starts as x), a host copy of x for AllGather.
  if (kind == Kind::kAllGather) {
    f->send = AllocateHostBuffer(in_bytes, false);
    if (!f->send && in_bytes != 0)
      return Errorf(WEFT_RESOURCE_EXHAUSTED, "%s: out of host memory",
                    NodeWhere(n).c_str());
    if (in_bytes != 0)
      WEFT_RETURN_IF_ERROR(ctx->ReadToHost(x, f->send->handle, in_bytes));
  } else if (in_bytes != 0 &&
             (kind == Kind::kAllReduce || root == world->rank)) {
    // A Broadcast overwrites every rank's output but the root's: only the
    // root's x is read.
    char* dst = static_cast<char*>(f->buffer->handle) +
                (f->staged ? 0 : f->output.offset);
    WEFT_RETURN_IF_ERROR(ctx->ReadToHost(x, dst, in_bytes));
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
  const weft_mpi_table* mpi = world->mpi;
  const int64_t offset = f->staged ? 0 : f->output.offset;
  order->Offer(n, [f, kind, mpi, offset, in_bytes, root]() {
    char error[512] = {};
    void* data = static_cast<char*>(f->buffer->handle) + offset;
    f->self = f;  // MPI's reference, dropped by OnComplete
    int32_t code = 0;
    switch (kind) {
      case Kind::kAllReduce:
        code = mpi->allreduce(data, f->count, f->dtype, WEFT_MPI_SUM,
                              OnComplete, f.get(), error, sizeof error);
        break;
      case Kind::kBroadcast:
        code = mpi->broadcast(data, static_cast<int64_t>(in_bytes),
                              static_cast<int32_t>(root), OnComplete, f.get(),
                              error, sizeof error);
        break;
      case Kind::kAllGather:
        code = mpi->allgather(f->send->handle, static_cast<int64_t>(in_bytes),
                              data, OnComplete, f.get(), error, sizeof error);
        break;
    }
    if (code != 0) {
      f->self.reset();
      Finish(f, Errorf(static_cast<weft_code>(code), "%s: %s",
                       f->done->where().c_str(), error));
    }
  });
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
