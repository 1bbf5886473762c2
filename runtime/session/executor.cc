#include "session/executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "base/status.h"
#include "device/kernel_context.h"
#include "device/registry.h"

namespace weft {
namespace {

constexpr int kInlineInputs = 8;

// Can a kernel on `d` read `v` where it is?
bool Accessible(const TensorValue& v, const Device* d) {
  if (!v.buffer) return true;
  Device* src = v.device();
  if (src == d) return true;
  bool src_host = src == nullptr || src->host_memory();
  return src_host && d->host_memory();
}

struct RunStream {
  Device* device = nullptr;
  weft_plugin_stream* stream = nullptr;
  std::mutex mu;  // one host thread enqueues on a stream at a time
};

// Control flow.  A frame instance is one execution of a loop frame: one per
// (parent frame instance, parent iteration, frame).  Each live iteration of
// it has its own slots and dependency counts.  All of this is bookkeeping
// done under Run::cf_mu_; kernels run outside the lock.
enum SlotState : uint8_t { kAbsent = 0, kLive = 1, kDead = 2 };

struct FrameInstance;

struct Iteration {
  int64_t number = 0;
  FrameInstance* frame = nullptr;
  std::vector<TensorValue> slots;
  std::vector<uint8_t> state;      // per slot
  std::vector<int32_t> pending;    // per node of the frame
  std::vector<int32_t> dead_in;    // per node: dead predecessors seen
  std::vector<uint8_t> fired;      // per Merge: fired in this iteration
  int32_t outstanding = 0;  // nodes ready or running, child frames alive
};

struct FrameInstance {
  int32_t frame = 0;  // index in Plan::frames
  FrameInstance* parent = nullptr;
  Iteration* parent_iter = nullptr;
  int64_t parent_number = 0;
  int32_t pending_enters = 0;
  int64_t base = 0;  // number of the oldest live iteration
  // Live iterations base, base+1, ...: a ring that only grows, so steady
  // state allocates nothing.
  std::vector<Iteration*> ring;
  int64_t count = 0;
  // Loop invariants (is_constant Enters): node and value, given to every
  // iteration.
  std::vector<std::pair<int32_t, TensorValue>> invariants;
  std::vector<uint8_t> invariant_dead;
  // NextIteration values waiting for parallel_iterations to allow their
  // iteration: node, value, the iteration they go to.
  struct Deferred {
    int32_t node;
    TensorValue value;
    int64_t number;
  };
  std::vector<Deferred> deferred;
  std::vector<TensorValue> exit_values;  // per Exit of the frame
  std::vector<uint8_t> exit_live;

  Iteration* At(int64_t number) const {
    if (number < base || number >= base + count) return nullptr;
    return ring[static_cast<size_t>(number % static_cast<int64_t>(ring.size()))];
  }
};

// A node ready to run in an iteration.
struct CfItem {
  int32_t node = 0;
  Iteration* iter = nullptr;
  bool dead = false;
  int32_t merge_input = -1;  // kMerge: the live input it fires with
};

class Run {
 public:
  Run(weft_session* s, const Plan& p)
      : session_(s),
        plan_(p),
        slots_(p.num_slots),
        pending_(new std::atomic<int32_t>[p.nodes.size()]),
        uses_(new std::atomic<int32_t>[p.num_slots]),
        remaining_(static_cast<int32_t>(p.nodes.size())),
        streams_(new RunStream[p.async_devices.size()]),
        events_(p.transfers.size(), nullptr),
        slot_bytes_(new std::atomic<int64_t>[p.num_slots]),
        live_(new std::atomic<int64_t>[p.devices.size()]),
        peak_(new std::atomic<int64_t>[p.devices.size()]) {
    for (int32_t i = 0; i < p.num_slots; ++i)
      slot_bytes_[i].store(0, std::memory_order_relaxed);
    for (size_t i = 0; i < p.devices.size(); ++i) {
      live_[i].store(0, std::memory_order_relaxed);
      peak_[i].store(0, std::memory_order_relaxed);
    }
    for (size_t i = 0; i < p.nodes.size(); ++i)
      pending_[i].store(p.nodes[i].pending, std::memory_order_relaxed);
    for (int32_t i = 0; i < p.num_slots; ++i)
      uses_[i].store(p.slot_uses[i], std::memory_order_relaxed);
  }

  weft_status* Execute(std::vector<TensorValue>& feeds,
                       std::vector<TensorValue>* fetched, RunStats* stats);
  ~Run();

 private:
  // Control flow (plans with frames).
  weft_status* ExecuteFrames(std::vector<TensorValue>& feeds,
                             std::vector<TensorValue>* fetched);
  void CfProcess(CfItem item);
  // Under cf_mu_: schedules pool tasks for queued items no task will take.
  void CfDispatch();
  void CfRunQueued();
  // Under cf_mu_:
  void CfReady(Iteration* it, int32_t node, bool dead, int32_t merge_input);
  void CfArrive(Iteration* it, int32_t node);
  // Every output gets `state`, except `dead_output` (a Switch's untaken
  // side; -1 for none), which is dead.
  void CfDeliver(Iteration* it, const PlanNode& p, const TensorValue* values,
                 uint8_t state, int32_t dead_output, bool node_dead);
  void CfComplete(const CfItem& item, TensorValue* carried, bool pred);
  Iteration* CfNewIteration(FrameInstance* f, int64_t number);
  FrameInstance* CfEnterFrame(Iteration* parent, int32_t frame);
  void CfCheckDone(FrameInstance* f);
  void CfFinishFrame(FrameInstance* f);
  void CfGiveInvariants(FrameInstance* f, Iteration* it);
  std::string FrameDescription(const Iteration* it) const;
  weft_status* RunRuntimeOp(const PlanNode& p, Iteration* it, bool* dead);
  friend class CfRuntimeContext;
  weft_status* ReadPred(const PlanNode& p, const TensorValue& v, bool* pred);
  void Process(int32_t id);
  void Dispatch(int32_t id);
  // `in`: the slots the node's input_slots index; `out`: its outputs.
  weft_status* ExecuteNode(const PlanNode& p, TensorValue* in,
                           TensorValue* out);
  weft_status* RunKernel(const PlanNode& p, const weft_node* node,
                         const KernelReg* kernel,
                         const TensorValue* const* inputs, int32_t n_in,
                         TensorValue* outputs, int32_t n_out);
  weft_status* Send(const PlanNode& p, TensorValue* in, TensorValue* out);
  weft_status* Update(const PlanNode& p, TensorValue* in, TensorValue* out);
  weft_status* Recv(const PlanNode& p, TensorValue* in, TensorValue* out);
  // Counts the outputs of `p` that are new run memory on its device.
  void Account(const PlanNode& p);
  weft_status* CopyInto(const TensorValue& v, Device* d, RunStream* rs,
                        TensorValue* out, bool mark_state);
  weft_status* CheckOutputs(const PlanNode& p, const weft_node* n,
                            const KernelReg* kernel,
                            const TensorValue* outputs);
  RunStream* StreamFor(Device* d);
  void Fail(weft_status* st);
  void Release(TensorValue& v);
  // Waits for the work this run queued on `d` (no-op on synchronous
  // devices).  Used before state becomes visible to other runs.
  weft_status* DrainStream(Device* d);
  void ReleaseSlot(int32_t s);
  weft_status* Finish();

  weft_session* session_;
  const Plan& plan_;
  std::vector<TensorValue> slots_;
  std::unique_ptr<std::atomic<int32_t>[]> pending_;
  std::unique_ptr<std::atomic<int32_t>[]> uses_;
  std::atomic<int32_t> remaining_;
  std::unique_ptr<RunStream[]> streams_;
  std::vector<weft_plugin_event*> events_;  // per transfer, on its sender
  // Run memory: bytes each slot's value counts for, live and peak bytes
  // per device of the plan.
  std::unique_ptr<std::atomic<int64_t>[]> slot_bytes_;
  std::unique_ptr<std::atomic<int64_t>[]> live_;
  std::unique_ptr<std::atomic<int64_t>[]> peak_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::atomic<bool> failed_{false};
  weft_status* error_ = nullptr;
  std::vector<BufferRef> deferred_;  // async-device buffers freed at the end
  std::vector<int32_t> local_ready_;  // without a pool: the caller's queue

  // Control flow.
  std::mutex cf_mu_;
  FrameInstance* root_frame_ = nullptr;
  std::map<std::tuple<const FrameInstance*, int64_t, int32_t>, FrameInstance*>
      cf_frames_;
  std::vector<std::vector<Iteration*>> cf_free_;  // per frame, for reuse
  std::vector<CfItem> cf_queue_;  // ready items waiting for a thread
  size_t cf_tasks_ = 0;  // pool tasks scheduled and not yet finished
  std::condition_variable cf_cv_;  // cf_done_ with no task left
  bool cf_done_ = false;
  RunResources resources_;  // runtime ops' state for this run
  std::vector<int64_t> cf_iterations_;     // per frame, for RunStats
  std::vector<int32_t> cf_max_in_flight_;  // per frame, for RunStats
};

Run::~Run() {
  for (auto& list : cf_free_)
    for (Iteration* it : list) delete it;
  for (auto& kv : cf_frames_) {
    for (int64_t k = 0; k < kv.second->count; ++k)
      delete kv.second->At(kv.second->base + k);
    delete kv.second;
  }
  if (root_frame_ != nullptr) {
    delete root_frame_->At(0);
    delete root_frame_;
  }
}

void Run::Fail(weft_status* st) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_ == nullptr) error_ = st;
  else weft_status_destroy(st);
  failed_.store(true, std::memory_order_release);
}

RunStream* Run::StreamFor(Device* d) {
  for (size_t i = 0; i < plan_.async_devices.size(); ++i)
    if (plan_.async_devices[i] == d) return &streams_[i];
  return nullptr;
}

weft_status* Run::DrainStream(Device* d) {
  RunStream* rs = StreamFor(d);
  if (rs == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(rs->mu);
  return d->api->stream_synchronize(d->handle, rs->stream);
}

void Run::ReleaseSlot(int32_t s) {
  int64_t bytes = slot_bytes_[s].exchange(0, std::memory_order_relaxed);
  if (bytes != 0)
    for (size_t i = 0; i < plan_.devices.size(); ++i)
      if (plan_.devices[i] == slots_[s].device())
        live_[i].fetch_sub(bytes, std::memory_order_relaxed);
  Release(slots_[s]);
}

void Run::Account(const PlanNode& p) {
  size_t dev = 0;
  while (dev < plan_.devices.size() && plan_.devices[dev] != p.device) ++dev;
  if (dev == plan_.devices.size()) return;
  int64_t added = 0;
  for (int32_t o = 0; o < p.num_outputs; ++o) {
    const TensorValue& v = slots_[p.output_base + o];
    if (!v.buffer || v.buffer->is_state || v.device() != p.device) continue;
    // A forwarded input (Identity, Reshape) is no new memory: its count
    // moves to the output, which now keeps the buffer alive (exact unless
    // the output is released before the input).
    int32_t alias = -1;
    for (int32_t s : p.input_slots)
      if (s >= 0 && slots_[s].buffer.get() == v.buffer.get()) alias = s;
    if (alias >= 0) {
      slot_bytes_[p.output_base + o].store(
          slot_bytes_[alias].exchange(0, std::memory_order_relaxed),
          std::memory_order_relaxed);
      continue;
    }
    int64_t bytes = static_cast<int64_t>(v.byte_size());
    slot_bytes_[p.output_base + o].store(bytes, std::memory_order_relaxed);
    added += bytes;
  }
  if (added == 0) return;
  int64_t now = live_[dev].fetch_add(added, std::memory_order_relaxed) + added;
  int64_t peak = peak_[dev].load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_[dev].compare_exchange_weak(peak, now,
                                           std::memory_order_relaxed)) {
  }
}

void Run::Release(TensorValue& v) {
  Device* d = v.device();
  if (d != nullptr && d->has_streams()) {
    // Work enqueued on a stream may still read it: free after the sync.
    // Dropped now, it would go to the device's buffer cache, and the next
    // allocation could overwrite it before that work has run.
    std::lock_guard<std::mutex> lock(mu_);
    deferred_.push_back(std::move(v.buffer));
  }
  v.buffer.reset();
}

void Run::Dispatch(int32_t id) {
  if (session_->pool) session_->pool->Schedule([this, id] { Process(id); });
  else local_ready_.push_back(id);
}

void Run::Process(int32_t id) {
  for (;;) {
    const PlanNode& p = plan_.nodes[id];
    if (!failed_.load(std::memory_order_acquire)) {
      if (weft_status* st =
              ExecuteNode(p, slots_.data(), slots_.data() + p.output_base))
        Fail(st);
      else Account(p);
    }
    for (int32_t s : p.input_slots)
      if (s >= 0 && uses_[s].fetch_sub(1, std::memory_order_acq_rel) == 1)
        ReleaseSlot(s);
    // Keep one ready successor on this thread: a chain then runs without
    // touching the queue at all.
    int32_t next = -1;
    for (int32_t succ : p.successors)
      if (pending_[succ].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (next < 0) next = succ;
        else Dispatch(succ);
      }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      cv_.notify_all();  // under the lock: the waiter may destroy us next
      return;
    }
    if (next < 0) return;
    id = next;
  }
}

weft_status* Run::CopyInto(const TensorValue& v, Device* d, RunStream* rs,
                           TensorValue* out, bool mark_state) {
  out->dtype = v.dtype;
  out->dims = v.dims;
  out->offset = 0;
  size_t bytes = v.byte_size();
  WEFT_RETURN_IF_ERROR(d->Allocate(bytes, &out->buffer));
  if (bytes == 0) return nullptr;
  if (mark_state) out->buffer->is_state = true;
  weft_plugin_stream* stream = rs ? rs->stream : nullptr;
  Device* src = v.device();
  if (src == d) {
    // Other threads of this run may be queuing kernels on the same stream,
    // and a stream takes one host thread at a time.
    std::unique_lock<std::mutex> lock;
    if (rs) lock = std::unique_lock<std::mutex>(rs->mu);
    return d->api->copy_device_to_device(d->handle, stream, v.buffer->handle,
                                         v.offset, out->buffer->handle, 0,
                                         bytes);
  }
  if (src != nullptr && !src->host_memory()) {
    // Another device: make its pending work visible, then stage via host.
    if (RunStream* srs = StreamFor(src)) {
      std::lock_guard<std::mutex> lock(srs->mu);
      WEFT_RETURN_IF_ERROR(
          src->api->stream_synchronize(src->handle, srs->stream));
    }
    BufferRef staging = AllocateHostBuffer(bytes);
    if (!staging) return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
    WEFT_RETURN_IF_ERROR(src->api->copy_device_to_host(
        src->handle, nullptr, v.buffer->handle, v.offset, staging->handle,
        bytes));
    return d->api->copy_host_to_device(d->handle, nullptr, staging->handle,
                                       out->buffer->handle, 0, bytes);
  }
  if (d->host_memory()) {
    std::memcpy(out->buffer->handle, v.host_data(), bytes);
    return nullptr;
  }
  // Host memory to a device: synchronous, so the source may go right after.
  return d->api->copy_host_to_device(d->handle, nullptr, v.host_data(),
                                     out->buffer->handle, 0, bytes);
}

weft_status* Run::CheckOutputs(const PlanNode& p, const weft_node* n,
                               const KernelReg* kernel,
                               const TensorValue* outputs) {
  for (int32_t o = 0; o < p.num_outputs; ++o) {
    const TensorValue& v = outputs[o];
    if (v.dtype != n->output_dtypes[o])
      return Errorf(WEFT_INTERNAL,
                    "node '%s' (%s): the %s kernel of plugin '%s' produced "
                    "output %d as %s, expected %s", n->name.c_str(),
                    n->op_type.c_str(), kernel->device_type.c_str(),
                    p.device->plugin ? p.device->api->name : "?", o,
                    weft_dtype_name(v.dtype),
                    weft_dtype_name(n->output_dtypes[o]));
    const ShapeInfo& s = n->output_shapes[o];
    bool ok = s.rank < 0 || s.rank == v.dims.rank();
    for (int32_t i = 0; ok && i < s.rank; ++i)
      ok = s.dims[i] < 0 || s.dims[i] == v.dims[i];
    if (!ok)
      return Errorf(WEFT_INTERNAL,
                    "node '%s' (%s): the kernel produced output %d of shape "
                    "%s where %s was inferred", n->name.c_str(),
                    n->op_type.c_str(), o, v.dims.ToString().c_str(),
                    s.ToString().c_str());
  }
  return nullptr;
}

weft_status* Run::RunKernel(const PlanNode& p, const weft_node* node,
                            const KernelReg* kernel,
                            const TensorValue* const* inputs, int32_t n_in,
                            TensorValue* outputs, int32_t n_out) {
  weft_kernel_context ctx;
  ctx.node = node;
  ctx.device = p.device;
  ctx.intra_op_threads = session_->intra_op_threads;
  ctx.inputs = inputs;
  ctx.num_inputs = n_in;
  ctx.outputs = outputs;
  ctx.num_outputs = n_out;
  if (p.run_counter != nullptr)
    ctx.run_counter = p.run_counter->fetch_add(1, std::memory_order_relaxed);
  weft_status* st;
  if (RunStream* rs = StreamFor(p.device)) {
    std::lock_guard<std::mutex> lock(rs->mu);
    ctx.stream = rs->stream;
    st = kernel->compute(kernel->arg, &ctx);
  } else {
    st = kernel->compute(kernel->arg, &ctx);
  }
  if (st != nullptr) {
    // Kernels usually name the node already; say which op and device.
    std::string msg = weft_status_message(st);
    if (msg.find(node->name) == std::string::npos)
      st = Annotate(st, "node '" + node->name + "' (" + node->op_type +
                            ") on " + p.device->name);
    return st;
  }
  return CheckOutputs(p, node, kernel, outputs);
}

weft_status* Run::ExecuteNode(const PlanNode& p, TensorValue* in,
                              TensorValue* outputs) {
  const int32_t n_in = static_cast<int32_t>(p.input_slots.size());
  switch (p.kind) {
    case ExecKind::kKernel: {
      const TensorValue* inline_inputs[kInlineInputs];
      std::vector<const TensorValue*> many;
      const TensorValue** inputs = inline_inputs;
      if (n_in > kInlineInputs) {
        many.resize(n_in);
        inputs = many.data();
      }
      for (int32_t i = 0; i < n_in; ++i) {
        const TensorValue& v = in[p.input_slots[i]];
        // Partitioning put a Recv before every input from other memory.
        if (!Accessible(v, p.device))
          return Errorf(WEFT_INTERNAL,
                        "node '%s': input %d is on %s, which %s cannot read "
                        "(a missing Send/Recv)", p.node->name.c_str(), i,
                        v.device() ? v.device()->name.c_str() : "the host",
                        p.device->name.c_str());
        inputs[i] = &v;
      }
      return RunKernel(p, p.node, p.kernel, inputs, n_in, outputs,
                       p.num_outputs);
    }
    case ExecKind::kConst:
      outputs[0] = p.const_value;
      return nullptr;
    case ExecKind::kVariable: {
      std::lock_guard<std::mutex> lock(p.variable->mu);
      if (!p.variable->initialized)
        return Errorf(WEFT_FAILED_PRECONDITION,
                      "variable '%s' is read before it is initialized: run "
                      "its initializer ('%s/initializer') first",
                      p.node->name.c_str(), p.node->name.c_str());
      outputs[0] = p.variable->value;
      return nullptr;
    }
    case ExecKind::kAssign: {
      const TensorValue& v = in[p.input_slots[1]];
      const ShapeInfo& want = p.node->output_shapes[0];
      Dims want_dims(want.dims.data(), want.rank);
      if (!(v.dims == want_dims))
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (Assign): value of shape %s does not fit a "
                      "variable of shape %s", p.node->name.c_str(),
                      v.dims.ToString().c_str(), want_dims.ToString().c_str());
      // A private copy: the value may be a constant, a feed or the caller's
      // memory, none of which the variable may alias.
      TensorValue copy;
      WEFT_RETURN_IF_ERROR(
          CopyInto(v, p.device, StreamFor(p.device), &copy, true));
      // Other runs read the variable as soon as it is published, from their
      // own streams: the write must be complete first.
      if (weft_status* st = DrainStream(p.device)) {
        Release(copy);
        return st;
      }
      std::lock_guard<std::mutex> lock(p.variable->mu);
      Release(p.variable->value);  // queued work may still read it
      p.variable->value = copy;
      p.variable->initialized = true;
      outputs[0] = std::move(copy);
      return nullptr;
    }
    case ExecKind::kAssignAdd: {
      TensorValue delta_moved;
      const TensorValue* delta = &in[p.input_slots[1]];
      if (!Accessible(*delta, p.device)) {
        WEFT_RETURN_IF_ERROR(CopyInto(*delta, p.device, StreamFor(p.device),
                                      &delta_moved, false));
        delta = &delta_moved;
      }
      std::lock_guard<std::mutex> lock(p.variable->mu);
      if (!p.variable->initialized)
        return Errorf(WEFT_FAILED_PRECONDITION,
                      "node '%s' (AssignAdd): variable '%s' is not "
                      "initialized", p.node->name.c_str(),
                      p.node->inputs[0].node->name.c_str());
      const TensorValue* ins[2] = {&p.variable->value, delta};
      TensorValue sum;
      weft_status* st = RunKernel(p, p.node, p.kernel, ins, 2, &sum, 1);
      // As for Assign: the sum is published only once it is written.
      if (st == nullptr) st = DrainStream(p.device);
      if (st == nullptr && !(sum.dims == p.variable->value.dims))
        st = Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (AssignAdd): adding %s would change the "
                    "variable's shape %s", p.node->name.c_str(),
                    delta->dims.ToString().c_str(),
                    p.variable->value.dims.ToString().c_str());
      // The Add may be queued still, reading the delta and the old value
      // and writing the sum: none of them is freed before the sync.
      Release(delta_moved);
      if (st != nullptr) {
        Release(sum);
        return st;
      }
      if (sum.buffer) sum.buffer->is_state = true;
      Release(p.variable->value);
      p.variable->value = sum;
      outputs[0] = std::move(sum);
      return nullptr;
    }
    case ExecKind::kUpdate:
      return Update(p, in, outputs);
    case ExecKind::kForward:
    case ExecKind::kLoopCond:
      outputs[0] = in[p.input_slots[0]];
      return nullptr;
    case ExecKind::kSend:
      return Send(p, in, outputs);
    case ExecKind::kRecv:
      return Recv(p, in, outputs);
    case ExecKind::kSwitch:
    case ExecKind::kMerge:
    case ExecKind::kEnter:
    case ExecKind::kExit:
    case ExecKind::kNextIteration:
      // The frame executor moves these values itself.
      return Errorf(WEFT_INTERNAL, "node '%s' (%s) reached the kernel path",
                    p.node->name.c_str(), p.node->op_type.c_str());
    case ExecKind::kRuntime:
      return Errorf(WEFT_UNIMPLEMENTED,
                    "node '%s' (%s): runtime ops are not executed yet",
                    p.node->name.c_str(), p.node->op_type.c_str());
    case ExecKind::kNoOp:
    case ExecKind::kPlaceholder:
      return nullptr;
  }
  return nullptr;
}

// An update op: reads its variables' values and its data inputs, and
// publishes its outputs as the variables' new values once they are written.
// The variables are locked for the whole update (in address order, so two
// updates sharing variables cannot deadlock): updates of one variable are
// serialized, and a read sees a value before or after an update, never
// between.
weft_status* Run::Update(const PlanNode& p, TensorValue* in,
                         TensorValue* outputs) {
  const int32_t refs = static_cast<int32_t>(p.ref_variables.size());
  // Held for the whole update: a few locks, no heap work for the usual
  // counts (optimizers update up to three variables from up to ten inputs).
  constexpr size_t kInlineLocks = 4;
  std::unique_lock<std::mutex> inline_locks[kInlineLocks];
  std::vector<std::unique_lock<std::mutex>> more_locks;
  for (size_t i = 0; i < p.lock_order.size(); ++i) {
    std::mutex& mu = p.lock_order[i]->mu;
    if (i < kInlineLocks) inline_locks[i] = std::unique_lock<std::mutex>(mu);
    else more_locks.emplace_back(mu);
  }
  const int32_t n_in = static_cast<int32_t>(p.input_slots.size());
  constexpr int kInlineUpdateInputs = 16;
  const TensorValue* inline_inputs[kInlineUpdateInputs];
  std::vector<const TensorValue*> many;
  const TensorValue** inputs = inline_inputs;
  if (n_in > kInlineUpdateInputs) {
    many.resize(n_in);
    inputs = many.data();
  }
  for (int32_t i = 0; i < n_in; ++i) {
    if (i < refs) {
      VariableState* v = p.ref_variables[i];
      if (!v->initialized)
        return Errorf(WEFT_FAILED_PRECONDITION,
                      "node '%s' (%s): variable '%s' is not initialized",
                      p.node->name.c_str(), p.node->op_type.c_str(),
                      p.node->inputs[i].node->name.c_str());
      inputs[i] = &v->value;
    } else {
      inputs[i] = &in[p.input_slots[i]];
    }
  }
  weft_status* st =
      RunKernel(p, p.node, p.kernel, inputs, n_in, outputs,
                p.num_outputs);
  // Published only once written: other runs read from their own streams.
  if (st == nullptr) st = DrainStream(p.device);
  if (st != nullptr) return st;
  for (int32_t r = 0; r < refs && r < p.num_outputs; ++r) {
    VariableState* v = p.ref_variables[r];
    TensorValue& out = outputs[r];
    if (!(out.dims == v->value.dims))
      return Errorf(WEFT_INTERNAL,
                    "node '%s' (%s): new value of '%s' has shape %s, the "
                    "variable %s", p.node->name.c_str(),
                    p.node->op_type.c_str(),
                    p.node->inputs[r].node->name.c_str(),
                    out.dims.ToString().c_str(),
                    v->value.dims.ToString().c_str());
    if (out.buffer) out.buffer->is_state = true;
    Release(v->value);  // queued work of this run may still read it
    v->value = out;
  }
  return nullptr;
}

// Send, on the value's device: narrows it for a lossy transfer, and marks
// the point in the device's stream after which the value is complete.
weft_status* Run::Send(const PlanNode& p, TensorValue* in, TensorValue* out) {
  const TensorValue& v = in[p.input_slots[0]];
  if (p.cast_node != nullptr) {
    const TensorValue* narrowed = &v;
    WEFT_RETURN_IF_ERROR(RunKernel(p, p.cast_node, p.kernel, &narrowed, 1, out, 1));
  } else {
    *out = v;
  }
  RunStream* rs = StreamFor(p.device);
  if (rs == nullptr) return nullptr;
  // In a loop a transfer runs once per iteration, and iterations overlap:
  // one event per transfer cannot tell them apart, so the Send waits for
  // its value instead.
  if (plan_.control_flow) return DrainStream(p.device);
  Device* d = p.device;
  weft_plugin_event* e = nullptr;
  WEFT_RETURN_IF_ERROR(d->api->event_create(d->handle, &e));
  events_[p.transfer] = e;  // destroyed in Finish, after the streams sync
  std::lock_guard<std::mutex> lock(rs->mu);
  return d->api->event_record(d->handle, e, rs->stream);
}

// Recv, on the destination device: waits for the Send's point, copies the
// value over (through host memory between two devices that both have their
// own), and widens a lossy value back.
weft_status* Run::Recv(const PlanNode& p, TensorValue* in, TensorValue* out) {
  const Transfer& t = plan_.transfers[p.transfer];
  const TensorValue& wire = in[p.input_slots[0]];
  Device* src = t.src;
  Device* dst = p.device;
  if (weft_plugin_event* e = events_[p.transfer])
    WEFT_RETURN_IF_ERROR(Annotate(src->api->event_synchronize(src->handle, e),
                                  "work on " + src->name + " before a Send"));
  TensorValue received;
  TensorValue* into = p.cast_node ? &received : out;
  into->dtype = wire.dtype;
  into->dims = wire.dims;
  into->offset = 0;
  size_t bytes = wire.byte_size();
  WEFT_RETURN_IF_ERROR(dst->Allocate(bytes, &into->buffer));
  if (bytes > 0) {
    const void* host_src = nullptr;
    BufferRef keep;  // host memory an asynchronous copy reads from
    if (src == nullptr || src->host_memory()) {
      host_src = wire.host_data();
      keep = wire.buffer;
    } else {
      keep = AllocateHostBuffer(bytes);
      if (!keep) return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
      WEFT_RETURN_IF_ERROR(src->api->copy_device_to_host(
          src->handle, nullptr, wire.buffer->handle, wire.offset,
          keep->handle, bytes));
      host_src = keep->handle;
    }
    if (dst->host_memory()) {
      std::memcpy(into->buffer->handle, host_src, bytes);
    } else {
      RunStream* rs = StreamFor(dst);
      std::unique_lock<std::mutex> lock;
      if (rs) lock = std::unique_lock<std::mutex>(rs->mu);
      WEFT_RETURN_IF_ERROR(dst->api->copy_host_to_device(
          dst->handle, rs ? rs->stream : nullptr, host_src,
          into->buffer->handle, 0, bytes));
      if (rs) {
        // The copy reads host memory until the stream passes it.
        std::lock_guard<std::mutex> dlock(mu_);
        deferred_.push_back(std::move(keep));
      }
    }
  }
  if (p.cast_node == nullptr) return nullptr;
  const TensorValue* widened = &received;
  weft_status* st = RunKernel(p, p.cast_node, p.kernel, &widened, 1, out, 1);
  Release(received);
  return st;
}

weft_status* Run::Finish() {
  weft_status* first = nullptr;
  for (size_t i = 0; i < plan_.async_devices.size(); ++i) {
    RunStream& rs = streams_[i];
    if (rs.stream == nullptr) continue;
    weft_status* st = rs.device->api->stream_synchronize(rs.device->handle,
                                                         rs.stream);
    if (st && !first) first = Annotate(st, "work on " + rs.device->name);
    else weft_status_destroy(st);
    session_->StreamsFor(rs.device)->Release(rs.stream);
    rs.stream = nullptr;
  }
  for (size_t i = 0; i < events_.size(); ++i)
    if (events_[i] != nullptr) {
      Device* d = plan_.transfers[i].src;
      d->api->event_destroy(d->handle, events_[i]);
      events_[i] = nullptr;
    }
  deferred_.clear();
  return first;
}

// ---------------------------------------------------------------------------
// Control flow.

std::string Run::FrameDescription(const Iteration* it) const {
  std::string s;
  for (const FrameInstance* f = it->frame; f != nullptr && f->frame != 0;
       f = f->parent) {
    std::string here = "frame '" + plan_.frames[f->frame].name +
                       "' iteration " + std::to_string(it->number);
    s = s.empty() ? here : here + " (in " + s + ")";
    it = f->parent_iter;
  }
  return s;
}

// What a runtime op sees: its node's iteration of its frame.
class CfRuntimeContext : public RuntimeOpContext {
 public:
  CfRuntimeContext(Run* run, const PlanNode& p, Iteration* it)
      : run_(run), p_(p), it_(it) {
    for (const Iteration* i = it; i != nullptr && i->frame->frame != 0;
         i = i->frame->parent_iter)
      path_.insert(path_.begin(), i->number);
  }
  const weft_node* node() const override { return p_.node; }
  Device* device() const override { return p_.device; }
  RunResources* resources() override { return &run_->resources_; }
  int32_t frame_depth() const override {
    return static_cast<int32_t>(path_.size());
  }
  int64_t iteration(int32_t level) const override { return path_[level]; }
  std::string FrameDescription() const override {
    return run_->FrameDescription(it_);
  }
  int32_t num_inputs() const override {
    return static_cast<int32_t>(p_.input_slots.size());
  }
  const TensorValue& input(int32_t i) const override {
    return it_->slots[p_.input_slots[i]];
  }
  int32_t num_outputs() const override { return p_.num_outputs; }
  void set_output(int32_t i, TensorValue value) override {
    it_->slots[p_.output_base + i] = std::move(value);
  }
  void set_dead() override { dead_ = true; }
  bool dead() const { return dead_; }
  weft_status* Allocate(weft_dtype dtype, const Dims& dims,
                        TensorValue* out) override {
    out->dtype = dtype;
    out->dims = dims;
    out->offset = 0;
    return p_.device->Allocate(out->byte_size(), &out->buffer);
  }
  weft_status* Copy(const TensorValue& src, uint64_t src_offset,
                    TensorValue* dst, uint64_t dst_offset,
                    uint64_t bytes) override {
    Device* d = p_.device;
    if (bytes == 0) return nullptr;
    if (src.device() == d)
      return d->api->copy_device_to_device(
          d->handle, nullptr, src.buffer->handle, src.offset + src_offset,
          dst->buffer->handle, dst->offset + dst_offset, bytes);
    const void* host = src.host_data();
    if (host == nullptr)
      return Errorf(WEFT_UNIMPLEMENTED,
                    "node '%s': copying between two devices' memories",
                    p_.node->name.c_str());
    const char* from = static_cast<const char*>(host) + src_offset;
    if (d->host_memory()) {
      std::memcpy(static_cast<char*>(dst->buffer->handle) + dst->offset +
                      dst_offset, from, bytes);
      return nullptr;
    }
    return d->api->copy_host_to_device(d->handle, nullptr, from,
                                       dst->buffer->handle,
                                       dst->offset + dst_offset, bytes);
  }
  weft_status* ReadToHost(const TensorValue& src, void* dst,
                          uint64_t bytes) override {
    if (const void* host = src.host_data()) {
      std::memcpy(dst, host, bytes);
      return nullptr;
    }
    Device* d = src.device();
    WEFT_RETURN_IF_ERROR(run_->DrainStream(d));
    return d->api->copy_device_to_host(d->handle, nullptr, src.buffer->handle,
                                       src.offset, dst, bytes);
  }
  weft_status* FromHost(weft_dtype dtype, const Dims& dims, const void* data,
                        TensorValue* out) override {
    WEFT_RETURN_IF_ERROR(Allocate(dtype, dims, out));
    Device* d = p_.device;
    size_t bytes = out->byte_size();
    if (bytes == 0) return nullptr;
    if (d->host_memory()) {
      std::memcpy(out->buffer->handle, data, bytes);
      return nullptr;
    }
    return d->api->copy_host_to_device(d->handle, nullptr, data,
                                       out->buffer->handle, 0, bytes);
  }
  weft_status* Localize(const TensorValue& v, TensorValue* out) override {
    if (Accessible(v, p_.device)) {
      *out = v;
      return nullptr;
    }
    return run_->CopyInto(v, p_.device, run_->StreamFor(p_.device), out,
                          false);
  }
  weft_status* RunKernel(const weft_node* helper,
                         const TensorValue* const* inputs, int32_t num_inputs,
                         TensorValue* outputs, int32_t num_outputs) override {
    const KernelReg* kernel = Registry::Get().FindKernel(
        helper->op_type, p_.device->type, helper->attrs);
    if (kernel == nullptr)
      return Errorf(WEFT_UNIMPLEMENTED,
                    "node '%s' (%s) needs a %s kernel on %s, which has none",
                    p_.node->name.c_str(), p_.node->op_type.c_str(),
                    helper->op_type.c_str(), p_.device->name.c_str());
    for (int32_t i = 0; i < num_inputs; ++i)
      if (!Accessible(*inputs[i], p_.device))
        return Errorf(WEFT_INTERNAL, "node '%s': helper input %d is not on "
                      "%s", p_.node->name.c_str(), i,
                      p_.device->name.c_str());
    PlanNode h;
    h.node = helper;
    h.device = p_.device;
    h.num_outputs = num_outputs;
    return run_->RunKernel(h, helper, kernel, inputs, num_inputs, outputs,
                           num_outputs);
  }

 private:
  Run* run_;
  const PlanNode& p_;
  Iteration* it_;
  std::vector<int64_t> path_;
  bool dead_ = false;
};

weft_status* Run::RunRuntimeOp(const PlanNode& p, Iteration* it,
                               bool* dead) {
  CfRuntimeContext ctx(this, p, it);
  weft_status* st = p.node->def->runtime(&ctx);
  *dead = ctx.dead();
  if (st != nullptr && std::string(weft_status_message(st))
                               .find(p.node->name) == std::string::npos)
    st = Annotate(st, "node '" + p.node->name + "' (" + p.node->op_type + ")");
  return st;
}

weft_status* Run::ReadPred(const PlanNode& p, const TensorValue& v,
                           bool* pred) {
  if (v.dtype != WEFT_BOOL || v.elements() != 1)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): the predicate must be one bool, got %s %s",
                  p.node->name.c_str(), p.node->op_type.c_str(),
                  weft_dtype_name(v.dtype), v.dims.ToString().c_str());
  uint8_t b = 0;
  if (const void* host = v.host_data()) {
    std::memcpy(&b, host, 1);
  } else {
    Device* src = v.device();
    WEFT_RETURN_IF_ERROR(DrainStream(src));
    WEFT_RETURN_IF_ERROR(src->api->copy_device_to_host(
        src->handle, nullptr, v.buffer->handle, v.offset, &b, 1));
  }
  *pred = b != 0;
  return nullptr;
}

Iteration* Run::CfNewIteration(FrameInstance* f, int64_t number) {
  const PlanFrame& pf = plan_.frames[f->frame];
  std::vector<Iteration*>& free_list = cf_free_[f->frame];
  Iteration* it;
  if (!free_list.empty()) {
    it = free_list.back();
    free_list.pop_back();
  } else {
    it = new Iteration;
    it->slots.resize(pf.num_slots);
    it->state.resize(pf.num_slots);
    it->pending.resize(pf.num_nodes);
    it->dead_in.resize(pf.num_nodes);
    it->fired.resize(pf.num_nodes);
  }
  it->number = number;
  it->frame = f;
  it->outstanding = 0;
  std::fill(it->state.begin(), it->state.end(), kAbsent);
  std::fill(it->dead_in.begin(), it->dead_in.end(), 0);
  std::fill(it->fired.begin(), it->fired.end(), 0);
  for (const PlanNode& p : plan_.nodes)
    if (p.frame == f->frame)
      it->pending[p.local] = number == 0 ? p.pending : p.pending_next;
  if (f->count == static_cast<int64_t>(f->ring.size())) {
    // Grow the ring, keeping iterations at number % size.
    std::vector<Iteration*> bigger(std::max<size_t>(4, f->ring.size() * 2));
    for (int64_t k = 0; k < f->count; ++k) {
      int64_t n = f->base + k;
      bigger[static_cast<size_t>(n % static_cast<int64_t>(bigger.size()))] =
          f->At(n);
    }
    f->ring.swap(bigger);
  }
  f->ring[static_cast<size_t>(number % static_cast<int64_t>(f->ring.size()))] =
      it;
  f->count++;
  cf_iterations_[f->frame]++;
  cf_max_in_flight_[f->frame] = std::max(
      cf_max_in_flight_[f->frame], static_cast<int32_t>(f->count));
  return it;
}

FrameInstance* Run::CfEnterFrame(Iteration* parent, int32_t frame) {
  auto key = std::make_tuple(static_cast<const FrameInstance*>(parent->frame),
                             parent->number, frame);
  auto found = cf_frames_.find(key);
  if (found != cf_frames_.end()) return found->second;
  auto* f = new FrameInstance;
  f->frame = frame;
  f->parent = parent->frame;
  f->parent_iter = parent;
  f->parent_number = parent->number;
  const PlanFrame& pf = plan_.frames[frame];
  f->pending_enters = pf.num_enters;
  f->exit_values.resize(pf.exits.size());
  f->exit_live.assign(pf.exits.size(), 0);
  cf_frames_.emplace(key, f);
  parent->outstanding++;  // the parent iteration waits for the frame's exits
  CfNewIteration(f, 0);
  return f;
}

void Run::CfReady(Iteration* it, int32_t node, bool dead, int32_t merge_input) {
  it->outstanding++;
  CfItem item;
  item.node = node;
  item.iter = it;
  item.dead = dead;
  item.merge_input = merge_input;
  cf_queue_.push_back(item);
}

// One edge into `node` in `it` has delivered.
void Run::CfArrive(Iteration* it, int32_t node) {
  const PlanNode& q = plan_.nodes[node];
  if (q.kind == ExecKind::kMerge) {
    if (it->fired[q.local]) return;
    --it->pending[q.local];
    for (size_t k = 0; k < q.input_slots.size(); ++k)
      if (it->state[q.input_slots[k]] == kLive) {
        it->fired[q.local] = 1;
        CfReady(it, node, false, static_cast<int32_t>(k));
        return;
      }
    if (it->pending[q.local] == 0) {
      it->fired[q.local] = 1;
      CfReady(it, node, true, -1);
    }
    return;
  }
  if (--it->pending[q.local] != 0) return;
  bool dead = it->dead_in[q.local] > 0;
  for (int32_t s : q.input_slots)
    if (s >= 0 && it->state[s] == kDead) dead = true;
  CfReady(it, node, dead, -1);
}

// Puts `p`'s outputs into `it` and tells its successors there.
void Run::CfDeliver(Iteration* it, const PlanNode& p,
                    const TensorValue* values, uint8_t state,
                    int32_t dead_output, bool node_dead) {
  for (int32_t o = 0; o < p.num_outputs; ++o) {
    if (values != nullptr) it->slots[p.output_base + o] = values[o];
    it->state[p.output_base + o] = o == dead_output ? static_cast<uint8_t>(kDead) : state;
  }
  for (int32_t succ : p.successors) {
    if (node_dead) it->dead_in[plan_.nodes[succ].local]++;
    CfArrive(it, succ);
  }
}

void Run::CfGiveInvariants(FrameInstance* f, Iteration* it) {
  for (size_t k = 0; k < f->invariants.size(); ++k) {
    const PlanNode& e = plan_.nodes[f->invariants[k].first];
    uint8_t st = f->invariant_dead[k] ? kDead : kLive;
    CfDeliver(it, e, &f->invariants[k].second, st, -1, st == kDead);
  }
}

// Under cf_mu_: the bookkeeping after `item` ran.  `carried` is the value
// an Enter, Exit or NextIteration moves; `pred` a Switch's predicate.
void Run::CfComplete(const CfItem& item, TensorValue* carried, bool pred) {
  Iteration* it = item.iter;
  FrameInstance* f = it->frame;
  const PlanNode& p = plan_.nodes[item.node];
  const bool dead = item.dead;
  const uint8_t state = dead ? kDead : kLive;
  switch (p.kind) {
    case ExecKind::kEnter: {
      FrameInstance* child = CfEnterFrame(it, p.out_frame);
      bool invariant = FindAttr(p.node->attrs, "is_constant")->i != 0;
      if (invariant) {
        child->invariants.emplace_back(item.node, *carried);
        child->invariant_dead.push_back(dead);
        for (int64_t k = 0; k < child->count; ++k)
          CfDeliver(child->At(child->base + k), p, carried, state, -1, dead);
      } else if (Iteration* first = child->At(0)) {
        CfDeliver(first, p, carried, state, -1, dead);
      }
      child->pending_enters--;
      CfCheckDone(child);
      break;
    }
    case ExecKind::kExit: {
      if (!dead) {
        const std::vector<int32_t>& exits = plan_.frames[f->frame].exits;
        size_t k = std::find(exits.begin(), exits.end(), item.node) -
                   exits.begin();
        f->exit_values[k] = *carried;
        f->exit_live[k] = 1;
      }
      break;
    }
    case ExecKind::kNextIteration: {
      if (dead) break;  // the loop ends on this path
      int64_t next = it->number + 1;
      Iteration* target = f->At(next);
      if (target == nullptr && next == f->base + f->count &&
          f->count < plan_.frames[f->frame].parallel_iterations) {
        target = CfNewIteration(f, next);
        CfGiveInvariants(f, target);
      }
      if (target != nullptr)
        CfDeliver(target, p, carried, kLive, -1, false);
      else
        f->deferred.push_back({item.node, std::move(*carried), next});
      break;
    }
    case ExecKind::kSwitch:
      CfDeliver(it, p, nullptr, state, dead ? -1 : (pred ? 0 : 1), dead);
      break;
    default:
      CfDeliver(it, p, nullptr, state, -1, dead);
      break;
  }
  it->outstanding--;
  CfCheckDone(f);
}

// Retires finished iterations, oldest first, starts deferred ones, and
// finishes the frame when nothing is left.
void Run::CfCheckDone(FrameInstance* f) {
  if (f->frame == 0) {
    if (f->At(0)->outstanding == 0) cf_done_ = true;
    return;
  }
  if (f->pending_enters > 0) return;
  for (;;) {
    while (f->count > 0 && f->At(f->base)->outstanding == 0) {
      Iteration* old = f->At(f->base);
      for (TensorValue& v : old->slots) Release(v);
      cf_free_[f->frame].push_back(old);
      f->base++;
      f->count--;
    }
    // Values that waited for room go to their iterations in order.
    bool started = false;
    const int32_t limit = plan_.frames[f->frame].parallel_iterations;
    for (size_t k = 0; k < f->deferred.size();) {
      auto& d = f->deferred[k];
      Iteration* target = f->At(d.number);
      if (target == nullptr && d.number == f->base + f->count &&
          f->count < limit) {
        target = CfNewIteration(f, d.number);
        CfGiveInvariants(f, target);
      }
      if (target == nullptr) {
        ++k;
        continue;
      }
      TensorValue v = std::move(d.value);
      int32_t node = d.node;
      f->deferred.erase(f->deferred.begin() + static_cast<long>(k));
      CfDeliver(target, plan_.nodes[node], &v, kLive, -1, false);
      started = true;
    }
    if (!started) break;
  }
  if (f->count == 0 && f->deferred.empty()) CfFinishFrame(f);
}

// The frame instance has finished: its Exits deliver to the parent.
void Run::CfFinishFrame(FrameInstance* f) {
  Iteration* parent = f->parent_iter;
  const std::vector<int32_t>& exits = plan_.frames[f->frame].exits;
  cf_frames_.erase(std::make_tuple(static_cast<const FrameInstance*>(
                                       f->parent),
                                   f->parent_number, f->frame));
  for (size_t k = 0; k < exits.size(); ++k) {
    uint8_t st = f->exit_live[k] ? kLive : kDead;
    CfDeliver(parent, plan_.nodes[exits[k]], &f->exit_values[k], st, -1,
              st == kDead);
  }
  delete f;
  parent->outstanding--;
  CfCheckDone(parent->frame);
}

void Run::CfDispatch() {
  while (cf_tasks_ < cf_queue_.size()) {
    cf_tasks_++;
    session_->pool->Schedule([this] { CfRunQueued(); });
  }
}

// A pool task: runs queued items until none is left for it.  Its last act
// is to count itself out, under the lock, so the run outlives it.
void Run::CfRunQueued() {
  CfItem item;
  bool have = false;
  {
    std::lock_guard<std::mutex> lock(cf_mu_);
    if (!cf_queue_.empty()) {
      item = cf_queue_.back();
      cf_queue_.pop_back();
      have = true;
    }
  }
  if (have) CfProcess(item);
  std::lock_guard<std::mutex> lock(cf_mu_);
  if (--cf_tasks_ == 0) cf_cv_.notify_all();
}

void Run::CfProcess(CfItem item) {
  for (;;) {
    const PlanNode& p = plan_.nodes[item.node];
    Iteration* it = item.iter;
    TensorValue carried;
    bool pred = false;
    if (!item.dead && failed_.load(std::memory_order_acquire))
      item.dead = true;  // after an error, everything left drains as dead
    if (!item.dead) {
      TensorValue* slots = it->slots.data();
      weft_status* st = nullptr;
      switch (p.kind) {
        case ExecKind::kEnter:
        case ExecKind::kExit:
        case ExecKind::kNextIteration:
          carried = slots[p.input_slots[0]];
          break;
        case ExecKind::kSwitch:
          st = ReadPred(p, slots[p.input_slots[1]], &pred);
          if (st == nullptr)
            slots[p.output_base + (pred ? 1 : 0)] = slots[p.input_slots[0]];
          break;
        case ExecKind::kMerge:
          slots[p.output_base] = slots[p.input_slots[item.merge_input]];
          slots[p.output_base + 1] = p.merge_indices[item.merge_input];
          break;
        case ExecKind::kRuntime: {
          bool dead = false;
          st = RunRuntimeOp(p, it, &dead);
          if (st == nullptr && dead) item.dead = true;
          break;
        }
        default:
          st = ExecuteNode(p, slots, slots + p.output_base);
          break;
      }
      if (st != nullptr) {
        std::string where = FrameDescription(it);
        if (!where.empty())
          st = Annotate(st, "node '" + p.node->name + "' (" +
                                p.node->op_type + ") in " + where);
        Fail(st);
        item.dead = true;
      }
    }
    bool more;
    {
      std::lock_guard<std::mutex> lock(cf_mu_);
      CfComplete(item, &carried, pred);
      if (cf_done_ || cf_queue_.empty()) {
        more = false;
      } else {
        // Keep one ready item on this thread; hand the rest to the pool.
        item = cf_queue_.back();
        cf_queue_.pop_back();
        more = true;
        if (session_->pool) CfDispatch();
      }
      if (cf_done_ && cf_tasks_ == 0) cf_cv_.notify_all();
    }
    if (!more) return;
  }
}

weft_status* Run::ExecuteFrames(std::vector<TensorValue>& feeds,
                                std::vector<TensorValue>* fetched) {
  cf_free_.resize(plan_.frames.size());
  cf_iterations_.assign(plan_.frames.size(), 0);
  cf_max_in_flight_.assign(plan_.frames.size(), 0);
  root_frame_ = new FrameInstance;
  Iteration* root = CfNewIteration(root_frame_, 0);
  for (size_t i = 0; i < feeds.size(); ++i) {
    root->slots[plan_.feed_slots[i]] = std::move(feeds[i]);
    root->state[plan_.feed_slots[i]] = kLive;
  }
  {
    std::lock_guard<std::mutex> lock(cf_mu_);
    root->outstanding++;  // held until every root is queued
    for (size_t i = plan_.roots.size(); i-- > 0;)
      CfReady(root, plan_.roots[i], false, -1);
    root->outstanding--;
    CfCheckDone(root_frame_);
  }
  if (session_->pool) {
    std::unique_lock<std::mutex> lock(cf_mu_);
    CfDispatch();
    cf_cv_.wait(lock, [this] {
      return (cf_done_ || cf_queue_.empty()) && cf_tasks_ == 0;
    });
  } else {
    for (;;) {
      CfItem item;
      {
        std::lock_guard<std::mutex> lock(cf_mu_);
        if (cf_queue_.empty()) break;
        item = cf_queue_.back();
        cf_queue_.pop_back();
      }
      CfProcess(item);
    }
  }
  weft_status* sync = Finish();
  if (error_ != nullptr) {
    weft_status_destroy(sync);
    return std::exchange(error_, nullptr);
  }
  if (sync) return sync;
  if (!cf_done_)
    return Errorf(WEFT_INTERNAL,
                  "the run stopped with work left: a loop waits for a value "
                  "that never comes");
  fetched->resize(plan_.fetch_slots.size());
  for (size_t i = 0; i < plan_.fetch_slots.size(); ++i) {
    int32_t s = plan_.fetch_slots[i];
    if (root->state[s] != kLive)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "fetch %zu is dead: its value comes from a branch that "
                    "was not taken", i);
    (*fetched)[i] = root->slots[s];
  }
  return nullptr;
}

weft_status* Run::Execute(std::vector<TensorValue>& feeds,
                          std::vector<TensorValue>* fetched,
                          RunStats* stats) {
  for (size_t i = 0; i < plan_.async_devices.size(); ++i) {
    streams_[i].device = plan_.async_devices[i];
    weft_status* st = session_->StreamsFor(streams_[i].device)
                          ->Acquire(&streams_[i].stream);
    if (st) {
      weft_status_destroy(Finish());
      return st;
    }
  }
  if (plan_.control_flow) {
    weft_status* st = ExecuteFrames(feeds, fetched);
    if (stats != nullptr) {
      stats->peak_bytes.assign(plan_.devices.size(), 0);
      stats->frame_iterations = cf_iterations_;
      stats->frame_max_in_flight = cf_max_in_flight_;
    }
    return st;
  }
  for (size_t i = 0; i < feeds.size(); ++i)
    slots_[plan_.feed_slots[i]] = std::move(feeds[i]);

  if (!plan_.nodes.empty()) {
    const std::vector<int32_t>& roots = plan_.roots;
    if (session_->pool) {
      for (size_t i = 1; i < roots.size(); ++i) Dispatch(roots[i]);
      Process(roots[0]);
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return finished_; });
    } else {
      for (size_t i = roots.size(); i-- > 0;) local_ready_.push_back(roots[i]);
      while (!local_ready_.empty()) {
        int32_t id = local_ready_.back();
        local_ready_.pop_back();
        Process(id);
      }
    }
  }
  weft_status* sync = Finish();
  if (stats != nullptr) {
    stats->peak_bytes.resize(plan_.devices.size());
    for (size_t i = 0; i < plan_.devices.size(); ++i)
      stats->peak_bytes[i] =
          static_cast<uint64_t>(peak_[i].load(std::memory_order_relaxed));
  }
  if (error_ != nullptr) {
    weft_status_destroy(sync);
    return std::exchange(error_, nullptr);
  }
  if (sync) return sync;
  fetched->resize(plan_.fetch_slots.size());
  for (size_t i = 0; i < plan_.fetch_slots.size(); ++i)
    (*fetched)[i] = slots_[plan_.fetch_slots[i]];
  return nullptr;
}

}  // namespace

weft_status* Execute(weft_session* session, const Plan& plan,
                     std::vector<TensorValue> feeds,
                     std::vector<TensorValue>* fetched, RunStats* stats) {
  Run run(session, plan);
  return run.Execute(feeds, fetched, stats);
}

}  // namespace weft
