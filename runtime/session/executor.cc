// The executor: plans without control flow on the flat path (atomic
// dependency counts, one slot per value), and what every plan shares
// (kernels, variables, memory accounting).  Plans with frames run in
// frame_executor.cc; streams and Send/Recv are in executor_transfer.cc,
// the registry of runs in flight in run_registry.cc.
#include "session/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/hot.h"
#include "base/status.h"
#include "device/kernel_context.h"
#include "distributed/transfer.h"
#include "session/run.h"
#include "session/trace.h"

namespace weft {
namespace exec {

namespace {

// An arena of the plan's pool, or a new one.
WEFT_HOT std::unique_ptr<RunArena> TakeArena(const Plan& p) {
  if (p.arenas) {
    if (RunArena* a =
            p.arenas->spare.exchange(nullptr, std::memory_order_acquire))
      return std::unique_ptr<RunArena>(a);
    std::lock_guard<std::mutex> lock(p.arenas->mu);
    if (!p.arenas->free.empty()) {
      std::unique_ptr<RunArena> a = std::move(p.arenas->free.back());
      p.arenas->free.pop_back();
      return a;
    }
  }
  auto a = std::make_unique<RunArena>();
  a->slots.resize(p.num_slots);
  a->pending.reset(new int32_t[p.nodes.size()]);
  a->uses.reset(new int32_t[p.num_slots]);
  a->slot_bytes.reset(new std::atomic<int64_t>[p.num_slots]);
  a->live.reset(new std::atomic<int64_t>[p.devices.size()]);
  a->peak.reset(new std::atomic<int64_t>[p.devices.size()]);
  for (int32_t i = 0; i < p.num_slots; ++i)
    a->slot_bytes[i].store(0, std::memory_order_relaxed);
  return a;
}

// Gives an arena (its run ended) back to the plan's pool, or frees it.
WEFT_HOT void ReturnArena(const Plan& p, std::unique_ptr<RunArena> arena) {
  if (!p.arenas) return;
  RunArena* none = nullptr;
  if (p.arenas->spare.compare_exchange_strong(none, arena.get(),
                                              std::memory_order_release,
                                              std::memory_order_relaxed)) {
    arena.release();
    return;
  }
  std::lock_guard<std::mutex> lock(p.arenas->mu);
  if (p.arenas->free.size() < RunArenaPool::kMaxKept)
    p.arenas->free.push_back(std::move(arena));
}

}  // namespace

Run& Run::In(RunArena& arena, weft_session* s, const Plan& p) {
  if (arena.run == nullptr) arena.run = std::make_unique<Run>(s, p, arena);
  return *arena.run;
}

WEFT_HOT void Run::End() {
  // A cancellation that came after the run's last look at its error
  // (CancelRuns between the end of Execute and the run leaving the
  // session's list): the run finished, so its result stands and the
  // reason goes.  Nothing reaches the run by now (Execute below).
  if (error_ != nullptr) {
    weft_status_destroy(error_);
    error_ = nullptr;
  }
  // The slots (fetched values, outputs nothing read, what an error left
  // behind) and the memory counts.
  for (TensorValue& v : slots_)
    if (v.buffer) v.buffer.reset();
  if (accounting_)
    for (int32_t i = 0; i < plan_.num_slots; ++i)
      slot_bytes_[i].store(0, std::memory_order_relaxed);
  local_ready_.clear();
  // What only control flow, parked ops and accounting leave.
  if (!cf_free_.empty()) {
    for (auto& list : cf_free_)
      for (Iteration* it : list) delete it;
    cf_free_.clear();
  }
  if (cf_frames_ != nullptr) {
    for (auto& kv : *cf_frames_) {
      for (int64_t k = 0; k < kv.second->count; ++k)
        delete kv.second->At(kv.second->base + k);
      delete kv.second;
    }
    cf_frames_.reset();
  }
  if (root_frame_ != nullptr) {
    delete root_frame_->At(0);
    delete root_frame_;
    root_frame_ = nullptr;
  }
  cf_queue_.clear();
  cf_iterations_.clear();
  cf_max_in_flight_.clear();
  async_ready_.clear();
  in_place_.clear();
  resources_.Clear();
  if (!parked_.empty()) parked_.clear();
}

}  // namespace exec

RunArena::RunArena() = default;
RunArena::~RunArena() = default;

namespace exec {

// A canceller may be failing the run while it ends (CancelRuns reaches a
// run until it has left the session's list): error_ is read under mu_,
// once failed_ says there is one.  A cancellation after this look leaves
// the run's result standing (~Run drops its reason).
weft_status* Run::TakeError() {
  if (!failed_.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(error_, nullptr);
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

WEFT_HOT void Run::ReleaseSlot(int32_t s) {
  if (accounting_) {
    int64_t bytes = slot_bytes_[s].exchange(0, std::memory_order_relaxed);
    if (bytes != 0)
      for (size_t i = 0; i < plan_.devices.size(); ++i)
        if (plan_.devices[i] == slots_[s].device())
          live_[i].fetch_sub(bytes, std::memory_order_relaxed);
  }
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
    Defer(d, std::move(v.buffer));
  }
  v.buffer.reset();
}

weft_status* KernelError(weft_status* st, const weft_node* node,
                         const Device* device) {
  // Kernels usually name the node already; say which op and device.
  if (std::string(weft_status_message(st)).find(node->name) ==
      std::string::npos)
    st = Annotate(st, "node '" + node->name + "' (" + node->op_type +
                          ") on " + device->name);
  return st;
}

void Run::Dispatch(int32_t id) {
  if (session_->pool) {
    Share();
    session_->pool->Schedule([this, id] { Process(id); });
  } else {
    local_ready_.push_back(id);
  }
}

namespace {

// Nodes that run no kernel: reading a constant or a variable, forwarding a
// value.  Handing one to another thread costs far more than running it.
bool RunsInline(ExecKind kind) {
  switch (kind) {
    case ExecKind::kConst:
    case ExecKind::kVariable:
    case ExecKind::kForward:
    case ExecKind::kNoOp:
    case ExecKind::kPlaceholder:
      return true;
    default:
      return false;
  }
}

// Whether whoever holds `b` holds it alone and may write over it: a
// buffer with no other reference, and not memory a caller wrapped (the
// caller may still look at it).  Update ops ask it of a variable's value,
// buffer forwarding of a slot's.
bool OnlyHolder(const BufferRef& b) {
  return b && b.use_count() == 1 && b->kind != Buffer::Kind::kHostWrapped;
}

// The ready nodes one Process call keeps for itself, as a stack: a few
// inline, more on the heap (a node with many cheap successors).
class LocalReady {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  int32_t operator[](size_t i) const { return data_[i]; }
  void push(int32_t id) {
    if (size_ == capacity_) Grow();
    data_[size_++] = id;
  }
  int32_t pop() { return data_[--size_]; }
  // Puts `id` at depth `pos` from the bottom, under what was pushed since.
  void insert(size_t pos, int32_t id) {
    push(id);
    // A chain's next kernel goes on top of nothing: no move at all.
    if (pos + 1 == size_) return;
    std::memmove(data_ + pos + 1, data_ + pos,
                 (size_ - 1 - pos) * sizeof(int32_t));
    data_[pos] = id;
  }

 private:
  void Grow() {
    std::unique_ptr<int32_t[]> bigger(new int32_t[capacity_ * 2]);
    std::memcpy(bigger.get(), data_, size_ * sizeof(int32_t));
    heap_ = std::move(bigger);
    data_ = heap_.get();
    capacity_ *= 2;
  }
  static constexpr size_t kInline = 16;
  int32_t inline_[kInline];
  int32_t* data_ = inline_;
  size_t size_ = 0, capacity_ = kInline;
  std::unique_ptr<int32_t[]> heap_;
};

}  // namespace

void Run::Process(int32_t id) { Process(&id, 1); }

// Runs `ids` and what they make ready.  Of the kernel nodes made ready, one
// stays on this thread and the others go to the pool; nodes that run no
// kernel stay here and run first (they are what the kept kernel and the
// pool's work wait for).  A chain therefore runs without touching the
// queue, and a graph of one chain (inference at batch 1) never wakes a
// pool thread for its variable reads.
WEFT_HOT void Run::Process(const int32_t* ids, size_t n) {
  // `drain`: true when this thread is done (the run may be gone: touch
  // nothing), false when a serial loop must go on shared.  While the run is still the caller's alone (kSerial, see
  // CountDown), nodes for the pool are held back in `handoff` until the
  // node that made them ready has done its counting, then handed over
  // (which shares the run).
  auto drain = [this](auto serial_tag, LocalReady& ready,
                      const int32_t* first, size_t count) -> bool {
    constexpr bool kSerial = decltype(serial_tag)::value;
    int32_t kept = -1;
    LocalReady handoff;
    // Ready node `id`: onto this thread's stack, kept as its next kernel,
    // or to the pool.
    auto route = [&](int32_t id) {
      if (RunsInline(plan_.nodes[id].kind)) ready.push(id);
      else if (kept < 0) kept = id;
      else if (kSerial && session_->pool) handoff.push(id);
      else Dispatch(id);
    };
    auto hand_off = [&] {
      for (size_t i = 0; i < handoff.size(); ++i) Dispatch(handoff[i]);
    };
    for (size_t i = 0; i < count; ++i) route(first[i]);
    if (kept >= 0) ready.insert(0, kept);  // under the cheap ones
    if (kSerial && !handoff.empty()) {
      hand_off();
      return false;
    }
    while (!ready.empty()) {
      const int32_t id = ready.pop();
      const PlanNode& p = plan_.nodes[id];
      if (plain_ && p.kind == ExecKind::kKernel) {
        // The common case, with one check: a kernel in a run with no
        // deadline, trace or accounting.
        if (!failed_.load(std::memory_order_acquire)) {
          if (weft_status* st = ExecuteKernel(p, slots_.data(),
                                              slots_.data() + p.output_base))
            Fail(st);
        }
      } else if (plain_ && p.kind == ExecKind::kConst) {
        // ExecuteNode's constant, without its call.
        if (!failed_.load(std::memory_order_acquire))
          slots_[p.output_base] = p.const_value;
      } else {
        if (kSerial && p.kind == ExecKind::kRuntime) {
          // Its Done may come on another thread: the run is shared from
          // here, and the node runs in the shared loop.
          ready.push(id);
          Share();
          return false;
        }
        // A deadline is checked between nodes (one clock read each, only when
        // the run has one): a kernel that has started finishes first.
        if (control_.has_deadline && !failed_.load(std::memory_order_relaxed) &&
            std::chrono::steady_clock::now() >= control_.deadline)
          Expire();
        if (!failed_.load(std::memory_order_acquire)) {
          TensorValue* out = slots_.data() + p.output_base;
          if (p.kind == ExecKind::kRuntime) {
            // A runtime op (a queue's dequeue, an iterator's get_next) may
            // park: its Done completes the node later, on another thread,
            // perhaps before the op returns.  This thread holds a count of
            // remaining_ meanwhile, so that completion cannot end the run (and
            // let the caller destroy it) while this thread still reads it.
            __atomic_fetch_add(&remaining_, 1, __ATOMIC_RELAXED);
            bool dead = false, parked = false;
            CfItem item;
            item.node = id;
            if (control_.trace != nullptr)
              item.trace_start = control_.trace->Now();
            weft_status* st = RunRuntimeOp(p, item, &dead, &parked);
            if (control_.trace != nullptr && !parked)
              TraceAdd(p, nullptr, item.trace_start, false, false,
                       st == nullptr ? TraceBytes(p, slots_.data(), out) : 0);
            if (st != nullptr) Fail(st);
            if (parked) {
              // A failure or cancellation that came before the op registered
              // its wait finds it here.
              if (failed_.load(std::memory_order_acquire)) CancelParked();
              if (CountOut(false)) return true;
              continue;
            }
            __atomic_fetch_sub(&remaining_, 1, __ATOMIC_RELAXED);
          } else if (control_.trace != nullptr) {
            if (weft_status* st = TracedExecute(p, slots_.data(), out, nullptr))
              Fail(st);
            else if (accounting_)
              Account(p);
          } else if (weft_status* st =
                         p.kind == ExecKind::kKernel
                             ? ExecuteKernel(p, slots_.data(), out)
                             : ExecuteNode(p, slots_.data(), out)) {
            Fail(st);
          } else if (accounting_) {
            Account(p);
          }
        }
      }
      for (int32_t s : p.input_slots)
        if (s >= 0 && CountDown(uses_[s], kSerial)) ReleaseSlot(s);
      kept = -1;
      const size_t base = ready.size();
      for (int32_t succ : p.successors)
        if (CountDown(pending_[succ], kSerial)) route(succ);
      if (CountOut(kSerial)) return true;
      if (kept >= 0) ready.insert(base, kept);  // under the cheap ones
      if (kSerial && !handoff.empty()) {
        hand_off();
        return false;
      }
    }
    return true;
  };
  LocalReady ready;
  if (Serial()) {
    if (drain(std::true_type{}, ready, ids, n)) return;
    n = 0;
  }
  drain(std::false_type{}, ready, ids, n);
}

bool Run::Finished(bool serial) {
  if (serial) {  // nothing else has seen the run: no one waits
    finished_ = true;
    return true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  cv_.notify_all();  // under the lock: the waiter may destroy us next
  return true;
}

void Run::FlatComplete(int32_t id) {
  const PlanNode& p = plan_.nodes[id];
  for (int32_t s : p.input_slots)
    if (s >= 0 && CountDown(uses_[s], false)) ReleaseSlot(s);
  int32_t inline_ready[kInlineInputs];
  std::vector<int32_t> more;
  size_t n = 0;
  for (int32_t succ : p.successors)
    if (CountDown(pending_[succ], false)) {
      if (n < kInlineInputs) inline_ready[n++] = succ;
      else more.push_back(succ);
    }
  // Handed on before this node is counted out: until then the run cannot
  // finish, so it is still there to take them.
  if (n != 0) {
    if (session_->pool) {
      for (size_t i = 0; i < n; ++i) Dispatch(inline_ready[i]);
      for (int32_t succ : more) Dispatch(succ);
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      async_ready_.insert(async_ready_.end(), inline_ready, inline_ready + n);
      async_ready_.insert(async_ready_.end(), more.begin(), more.end());
      cv_.notify_all();
    }
  }
  CountOut(false);  // shared since the op started
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
                            TensorValue* outputs, int32_t n_out,
                            uint32_t writable_inputs) {
  return RunKernelInline(p, node, kernel, inputs, n_in, outputs, n_out,
                         writable_inputs);
}

__attribute__((always_inline)) inline weft_status* Run::RunKernelInline(
    const PlanNode& p, const weft_node* node, const KernelReg* kernel,
    const TensorValue* const* inputs, int32_t n_in, TensorValue* outputs,
    int32_t n_out, uint32_t writable_inputs) {
  weft_kernel_context ctx;
  ctx.writable_inputs = writable_inputs;
  ctx.node = node;
  ctx.device = p.device;
  ctx.intra_op_threads = intra_op_threads_;
  ctx.inputs = inputs;
  ctx.num_inputs = n_in;
  ctx.outputs = outputs;
  ctx.num_outputs = n_out;
  if (p.run_counter != nullptr)
    ctx.run_counter = p.run_counter->fetch_add(1, std::memory_order_relaxed);
  if (p.described && kernel == p.kernel && node == p.node)
    return CallDescribed(p, &ctx, inputs, n_in, outputs, n_out);
  weft_status* st;
  if (RunStream* rs = StreamFor(p.device)) {
    std::lock_guard<std::mutex> lock(rs->mu);
    ctx.stream = rs->stream;
    st = kernel->compute(kernel->arg, &ctx);
  } else {
    st = kernel->compute(kernel->arg, &ctx);
  }
  if (st != nullptr) return KernelError(st, node, p.device);
  // What CheckOutputs checks, inline for the outputs that pass; it words
  // the error for one that does not.
  for (int32_t o = 0; o < p.num_outputs; ++o) {
    const TensorValue& v = outputs[o];
    const ShapeInfo& s = node->output_shapes[o];
    bool ok = v.dtype == node->output_dtypes[o] &&
              (s.rank < 0 || s.rank == v.dims.rank());
    if (ok && s.rank > 0) {
      const int64_t* want = s.dims.data();
      const int64_t* got = v.dims.data();
      for (int32_t i = 0; ok && i < s.rank; ++i)
        ok = want[i] < 0 || want[i] == got[i];
    }
    if (!ok) return CheckOutputs(p, node, kernel, outputs);
  }
  return nullptr;
}

// A kernel node through compute_described (plugin interface 1.8; planned
// by DescribedCall in place.cc): the outputs are made here with the dtypes
// and shapes inferred at plan time (output 0 over an input the kernel may
// overwrite, when ctx->writable_inputs lets it, as
// kernel_forward_input_or_allocate would), every tensor is described once,
// and the kernel is called once.  Nothing to check after: the outputs are
// the host's.
__attribute__((always_inline)) inline weft_status* Run::CallDescribed(
    const PlanNode& p, weft_kernel_context* ctx,
    const TensorValue* const* inputs, int32_t n_in, TensorValue* outputs,
    int32_t n_out) {
  const weft_node* node = p.node;
  const KernelReg* kernel = p.kernel;
  weft_kernel_tensor in[kDescribedMaxInputs];
  weft_kernel_tensor out[kDescribedMaxOutputs];
  for (int32_t i = 0; i < n_in; ++i) {
    in[i].struct_size = sizeof(weft_kernel_tensor);
    DescribeValue(*inputs[i], &in[i]);
  }
  uint32_t over = ctx->writable_inputs & kernel->output_overwrites;
  // Output o made and described; nullptr or the allocation's failure.
  auto make = [&](int32_t o) __attribute__((always_inline)) -> weft_status* {
    const ShapeInfo& s = node->output_shapes[o];
    const weft_dtype dtype = node->output_dtypes[o];
    TensorValue& v = outputs[o];
    bool handed = false;
    for (; o == 0 && over != 0; over &= over - 1) {
      const TensorValue& src = *inputs[__builtin_ctz(over)];
      bool same = src.dtype == dtype && src.dims.rank() == s.rank;
      const int64_t* have = src.dims.data();
      for (int32_t d = 0; same && d < s.rank; ++d) same = have[d] == s.dims[d];
      if (same) {
        v.dtype = dtype;
        v.dims = src.dims;
        // The input's slot was the buffer's only holder and this node its
        // last reader (Forwardable): in a plain run the buffer moves, with
        // no count taken here and none dropped when the slot is released
        // (its description above stays valid: the buffer lives on in the
        // output).  Accounting and traces find a forwarded output by the
        // buffer the input's slot still holds, so those runs share it.
        if (plain_)
          v.buffer = std::move(const_cast<TensorValue&>(src).buffer);
        else
          v.buffer = src.buffer;
        v.offset = src.offset;
        handed = true;
        break;
      }
    }
    if (!handed) {
      int64_t count = 1;
      for (int32_t d = 0; d < s.rank; ++d) count *= s.dims[d];
      v.dtype = dtype;
      v.dims.assign(s.dims.data(), s.rank);
      v.offset = 0;
      // Sizes were checked for overflow at plan time.
      if (weft_status* st = p.device->Allocate(
              static_cast<size_t>(count) * weft_dtype_size_of(dtype),
              &v.buffer))
        return KernelError(st, node, p.device);
    }
    out[o].struct_size = sizeof(weft_kernel_tensor);
    DescribeValue(v, &out[o]);
    return nullptr;
  };
  // One output (element-wise ops) in straight-line code.
  if (n_out == 1) {
    if (weft_status* st = make(0)) return st;
  } else {
    for (int32_t o = 0; o < n_out; ++o)
      if (weft_status* st = make(o)) return st;
  }
  ctx->writable_inputs = 0;
  ctx->described = true;
  weft_status* st;
  if (RunStream* rs = StreamFor(p.device)) {
    std::lock_guard<std::mutex> lock(rs->mu);
    ctx->stream = rs->stream;
    st = kernel->compute_described(kernel->arg, ctx, in, n_in, out, n_out);
  } else {
    st = kernel->compute_described(kernel->arg, ctx, in, n_in, out, n_out);
  }
  if (st != nullptr) return KernelError(st, node, p.device);
  return nullptr;
}

// ExecuteNode's kernel case without the rest of its frame: nearly every
// node a run executes takes this path.
template <bool kSequence>
__attribute__((always_inline)) inline weft_status* Run::ExecuteKernelImpl(
    const PlanNode& p, TensorValue* in, TensorValue* outputs,
    uint32_t last_read) {
  const int32_t n_in = static_cast<int32_t>(p.input_slots.size());
  if (n_in > kInlineInputs) return ExecuteNode(p, in, outputs);
  const TensorValue* inputs[kInlineInputs];
  const int32_t* slots = p.input_slots.data();
  for (int32_t i = 0; i < n_in; ++i) {
    const TensorValue& v = in[slots[i]];
    // A sequence's plan uses host memory only (Planner::Sequence).
    if (!kSequence && !Accessible(v, p.device))
      return ExecuteNode(p, in, outputs);
    inputs[i] = &v;
  }
  uint32_t writable = 0;
  const uint32_t candidates =
      kSequence ? p.forward_candidates & last_read : p.forward_candidates;
  for (uint32_t c = candidates; c != 0; c &= c - 1) {
    const int32_t i = __builtin_ctz(c);
    if (kSequence ? OnlySlotHolds(p, *inputs[i])
                  : Forwardable(p, slots[i], *inputs[i]))
      writable |= 1u << i;
  }
  return RunKernelInline(p, p.node, p.kernel, inputs, n_in, outputs,
                         p.num_outputs, writable);
}

WEFT_HOT weft_status* Run::ExecuteKernel(const PlanNode& p, TensorValue* in,
                                         TensorValue* outputs) {
  return ExecuteKernelImpl<false>(p, in, outputs, 0);
}

// The straight-line walk: each node in the plan's order, then the slots it
// read last.  What Process does for such a plan on one thread, without the
// dependency and use counts (the order is the one Process would take) and
// without a ready stack.  A failure or a cancellation (another thread's
// Fail) stops the walk; End empties what is left.
WEFT_HOT void Run::ExecuteSequence() {
  const SequenceStep* step = plan_.sequence.data();
  const SequenceStep* end = step + plan_.sequence.size();
  const int32_t* releases = plan_.releases.data();
  TensorValue* slots = slots_.data();
  for (; step != end; ++step) {
    if (failed_.load(std::memory_order_acquire)) return;
    const PlanNode& p = plan_.nodes[step->node];
    TensorValue* out = slots + p.output_base;
    if (p.kind == ExecKind::kKernel) {
      if (weft_status* st =
              ExecuteKernelImpl<true>(p, slots, out, step->last_read)) {
        Fail(st);
        return;
      }
    } else if (p.kind == ExecKind::kConst) {
      out[0] = p.const_value;
    } else if (weft_status* st = ExecuteNode(p, slots, out)) {
      Fail(st);
      return;
    }
    // Plain runs keep no accounting (ReleaseSlot's first half), and a slot
    // whose buffer moved to a node's output (CallDescribed) has nothing
    // to release.
    for (int32_t r = step->release_begin; r < step->release_end; ++r) {
      TensorValue& v = slots[releases[r]];
      if (v.buffer) Release(v);
    }
  }
}

// Whether the kernel may write its output over the value in slot `s`, one
// of its forward_candidates (the host's kernel_forward_input_or_allocate;
// element-wise kernels ask): this node is the value's last reader (every
// other reader has finished), and nothing but the slot holds its buffer
// (not a variable's value, a constant, a feed the caller holds, a view
// another slot shares), on this node's device.
bool Run::Forwardable(const PlanNode& p, int32_t s,
                      const TensorValue& v) const {
  return __atomic_load_n(&uses_[s], __ATOMIC_ACQUIRE) == 1 &&
         OnlySlotHolds(p, v);
}

bool Run::OnlySlotHolds(const PlanNode& p, const TensorValue& v) {
  return OnlyHolder(v.buffer) && !v.buffer->is_state &&
         v.device() == p.device;
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
    case ExecKind::kRuntime:
      // The frame executor moves these values itself; Process and
      // CfProcess run runtime ops (RunRuntimeOp).
      return Errorf(WEFT_INTERNAL, "node '%s' (%s) reached the kernel path",
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
  uint32_t writable = 0;
  for (int32_t i = 0; i < n_in; ++i) {
    if (i < refs) {
      VariableState* v = p.ref_variables[i];
      if (!v->initialized)
        return Errorf(WEFT_FAILED_PRECONDITION,
                      "node '%s' (%s): variable '%s' is not initialized",
                      p.node->name.c_str(), p.node->op_type.c_str(),
                      p.node->inputs[i].node->name.c_str());
      inputs[i] = &v->value;
      // The kernel may write the new value over the old one when nothing
      // but the variable references its buffer: no read of it is pending
      // (a pending read holds a reference, deferred until its stream
      // syncs), no fetch or feed shares it, the variable is named once, and
      // the lock we hold keeps others out.  Caller-wrapped memory is never
      // written: the caller may still look at it.
      if (i < 32 && OnlyHolder(v->value.buffer) &&
          std::count(p.ref_variables.begin(), p.ref_variables.end(), v) == 1)
        writable |= 1u << i;
    } else {
      inputs[i] = &in[p.input_slots[i]];
    }
  }
  weft_status* st =
      RunKernel(p, p.node, p.kernel, inputs, n_in, outputs,
                p.num_outputs, writable);
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
    if (accounting_ && out.buffer && out.buffer.get() == v->value.buffer.get()) {
      std::lock_guard<std::mutex> lock(mu_);
      in_place_.emplace_back(p.node, p.node->inputs[r].node);
    }
    Release(v->value);  // queued work of this run may still read it
    v->value = out;
  }
  return nullptr;
}

WEFT_HOT weft_status* Run::Finish() {
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
  deferred_bytes_ = 0;
  return first;
}

WEFT_HOT weft_status* Run::Execute(TensorValue* feeds, size_t num_feeds,
                                   TensorValue* fetched, RunStats* stats) {
  accounting_ = stats != nullptr;
  plain_ = !accounting_ && !control_.has_deadline && control_.trace == nullptr;
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
    weft_status* st = ExecuteFrames(feeds, num_feeds, fetched);
    if (stats != nullptr) {
      stats->peak_bytes.assign(plan_.devices.size(), 0);
      stats->frame_iterations = cf_iterations_;
      stats->frame_max_in_flight = cf_max_in_flight_;
      stats->in_place = in_place_;
    }
    return st;
  }
  for (size_t i = 0; i < num_feeds; ++i)
    slots_[plan_.feed_slots[i]] = std::move(feeds[i]);

  const bool sequence = !plan_.sequence.empty();
  if (sequence && plain_) {
    ExecuteSequence();
  } else if (!plan_.nodes.empty()) {
    if (sequence) SetCounts();  // Begin left them
    const std::vector<int32_t>& roots = plan_.roots;
    if (session_->pool) {
      // Routed as Process routes what a node makes ready.
      Process(roots.data(), roots.size());
      // A run this thread ran alone (Serial) has finished here.
      if (!(Serial() && finished_)) {
        std::unique_lock<std::mutex> lock(mu_);
        if (control_.has_deadline &&
            !cv_.wait_until(lock, control_.deadline,
                            [this] { return finished_; })) {
          lock.unlock();
          Expire();  // what has not started is skipped
          lock.lock();
        }
        cv_.wait(lock, [this] { return finished_; });
      }
    } else {
      for (size_t i = roots.size(); i-- > 0;) local_ready_.push_back(roots[i]);
      for (;;) {
        while (!local_ready_.empty()) {
          int32_t id = local_ready_.back();
          local_ready_.pop_back();
          Process(id);
        }
        if (Serial() && finished_) break;  // no op parked: nothing to wait for
        // What is left waits on parked ops, whose Done hands this thread
        // the nodes it makes ready.
        std::unique_lock<std::mutex> lock(mu_);
        auto woken = [this] { return finished_ || !async_ready_.empty(); };
        if (control_.has_deadline &&
            !cv_.wait_until(lock, control_.deadline, woken)) {
          lock.unlock();
          Expire();
          lock.lock();
        }
        cv_.wait(lock, woken);
        if (async_ready_.empty()) break;
        local_ready_.insert(local_ready_.end(), async_ready_.rbegin(),
                            async_ready_.rend());
        async_ready_.clear();
      }
    }
  }
  weft_status* sync = Finish();
  if (stats != nullptr) {
    stats->peak_bytes.resize(plan_.devices.size());
    for (size_t i = 0; i < plan_.devices.size(); ++i)
      stats->peak_bytes[i] =
          static_cast<uint64_t>(peak_[i].load(std::memory_order_relaxed));
  stats->in_place = in_place_;
  }
  if (weft_status* error = TakeError()) {
    weft_status_destroy(sync);
    return error;
  }
  if (sync) return sync;
  // Every node has run: the slots are emptied next (ReturnArena).
  for (size_t i = 0; i < plan_.fetch_slots.size(); ++i) {
    TensorValue& v = slots_[plan_.fetch_slots[i]];
    if (plan_.fetch_moves[i]) fetched[i] = std::move(v);
    else fetched[i] = v;
  }
  return nullptr;
}

}  // namespace exec

weft_status* Execute(weft_session* session, const Plan& plan,
                     std::vector<TensorValue> feeds,
                     std::vector<TensorValue>* fetched, RunStats* stats,
                     const RunControl& control) {
  fetched->resize(plan.fetch_slots.size());
  weft_status* st = Execute(session, plan, feeds.data(), feeds.size(),
                            fetched->data(), stats, control);
  if (st != nullptr) fetched->clear();
  return st;
}

WEFT_HOT weft_status* Execute(weft_session* session, const Plan& plan,
                              TensorValue* feeds, size_t num_feeds,
                     TensorValue* fetched, RunStats* stats,
                     const RunControl& control) {
  ThreadTuner* tuner = session->intra_op_auto ? plan.tuner.get() : nullptr;
  bool timed = false;
  const int32_t threads = tuner ? tuner->Choose(session->intra_op_threads,
                                                &timed)
                                : session->intra_op_threads;
  std::chrono::steady_clock::time_point start;
  if (timed) start = std::chrono::steady_clock::now();
  weft_status* st;
  {
    std::unique_ptr<RunArena> arena = exec::TakeArena(plan);
    exec::Run& run = exec::Run::In(*arena, session, plan);
    run.Begin(threads, control);
    if (control.task_run >= 0)
      distributed::SetTaskRun(run.resources(),
                              static_cast<uint64_t>(control.task_run));
    std::atomic<exec::Run*>* listed = ListRun(session, &run);
    if (control.canceller != nullptr) control.canceller->Attach(&run);
    st = run.Execute(feeds, num_feeds, fetched, stats);
    if (control.canceller != nullptr) control.canceller->Detach();
    // Out of the list before it ends: CancelRuns may be reaching it.
    UnlistRun(session, listed, &run);
    run.End();
    exec::ReturnArena(plan, std::move(arena));
  }
  if (timed && st == nullptr)
    tuner->Report(threads, std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count());
  if (stats != nullptr) stats->intra_op_threads = threads;
  return st;
}

}  // namespace weft
