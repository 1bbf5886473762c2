// The frame executor: plans with loop frames or runtime ops.  Each frame
// instance (one per parent instance, parent iteration and frame) keeps its
// live iterations in a ring of per-iteration state (slots, live/dead per
// slot, dependency counts, Merge flags) recycled through per-frame free
// lists; Switch, Merge, Enter, Exit and NextIteration move values between
// them under cf_mu_, kernels run outside the lock.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>

#include "base/status.h"
#include "device/kernel_context.h"
#include "device/registry.h"
#include "session/run.h"
#include "session/trace.h"

namespace weft {
namespace exec {

std::string Run::FrameDescription(const Iteration* it) const {
  std::string s;
  if (it == nullptr) return s;  // a flat plan: no frames
  for (const FrameInstance* f = it->frame; f != nullptr && f->frame != 0;
       f = f->parent) {
    std::string here = "frame '" + plan_.frames[f->frame].name +
                       "' iteration " + std::to_string(it->number);
    s = s.empty() ? here : here + " (in " + s + ")";
    it = f->parent_iter;
  }
  return s;
}

// A parked runtime op: its node's item (iter null in a flat plan), waiting
// for Done.
class ParkedOp : public AsyncDone {
 public:
  ParkedOp(Run* run, const PlanNode& p, const CfItem& item, CancelFn cancel)
      : run_(run), p_(p), item_(item), cancel_(std::move(cancel)),
        where_(NodeWhere(p.node)) {}
  void set_output(int32_t i, TensorValue value) override {
    run_->SlotsOf(item_)[p_.output_base + i] = std::move(value);
  }
  void Done(weft_status* status) override {
    if (done_.exchange(true)) {
      weft_status_destroy(status);  // a second Done: the first one counts
      return;
    }
    run_->ParkedDone(this, status);
  }
  const std::string& where() const override { return where_; }
  void set_dead() override { item_.dead = true; }
  bool done() const { return done_.load(std::memory_order_acquire); }
  void Cancel(weft_status* why) {
    if (done()) {
      weft_status_destroy(why);
      return;
    }
    cancel_(why);
  }

 private:
  friend class Run;
  Run* run_;
  const PlanNode& p_;
  CfItem item_;
  CancelFn cancel_;
  std::string where_;
  std::atomic<bool> done_{false};
};

// What a runtime op sees: its node's iteration of its frame, or the run's
// slots in a flat plan (item.iter null).
class CfRuntimeContext : public RuntimeOpContext {
 public:
  CfRuntimeContext(Run* run, const PlanNode& p, const CfItem& item)
      : run_(run), p_(p), it_(item.iter), slots_(run->SlotsOf(item)),
        item_(item) {
    Iteration* it = item.iter;
    for (const Iteration* i = it; i != nullptr && i->frame->frame != 0;
         i = i->frame->parent_iter)
      path_.insert(path_.begin(), i->number);
  }
  const weft_node* node() const override { return p_.node; }
  Device* device() const override { return p_.device; }
  RunResources* resources() override { return &run_->resources_; }
  const std::vector<const weft_node*>& plan_collectives() const override {
    return run_->plan_.collectives;
  }
  bool plan_has_control_flow() const override {
    return run_->plan_.control_flow;
  }
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
    return slots_[p_.input_slots[i]];
  }
  int32_t num_outputs() const override { return p_.num_outputs; }
  void set_output(int32_t i, TensorValue value) override {
    slots_[p_.output_base + i] = std::move(value);
  }
  void set_dead() override { dead_ = true; }
  bool dead() const { return dead_; }
  bool inputs_dead() const override { return inputs_dead_; }
  void set_inputs_dead() { inputs_dead_ = true; }
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
        helper->op_type, p_.device, helper->attrs);
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
  SessionResources* session_resources() override {
    return &run_->session_->resources;
  }
  std::shared_ptr<AsyncDone> Park(CancelFn cancel) override {
    parked_ = true;
    return run_->Park(p_, item_, std::move(cancel));
  }
  DeviceQueue device_queue() override {
    Run* run = run_;
    Device* d = p_.device;
    RunStream* rs = run_->StreamFor(d);
    DeviceQueue q;
    q.enqueue = [rs](const std::function<weft_status*(weft_plugin_stream*)>&
                         work) -> weft_status* {
      if (rs == nullptr) return work(nullptr);
      std::lock_guard<std::mutex> lock(rs->mu);
      return work(rs->stream);
    };
    q.keep = [run, d, rs](BufferRef buffer) {
      if (rs != nullptr) run->Defer(d, std::move(buffer));
    };
    return q;
  }
  bool parked() const { return parked_; }

 private:
  Run* run_;
  const PlanNode& p_;
  Iteration* it_;
  TensorValue* slots_;
  CfItem item_;
  std::vector<int64_t> path_;
  bool dead_ = false;
  bool parked_ = false;
  bool inputs_dead_ = false;
};

std::shared_ptr<ParkedOp> Run::Park(const PlanNode& p, const CfItem& item,
                                    CancelFn cancel) {
  auto op = std::make_shared<ParkedOp>(this, p, item, std::move(cancel));
  {
    // Counted before anyone can call Done, so the run never looks finished
    // while the op waits.
    std::lock_guard<std::mutex> lock(cf_mu_);
    cf_parked_++;
  }
  std::lock_guard<std::mutex> lock(parked_mu_);
  parked_.push_back(op);
  return op;
}

void Run::ParkedDone(ParkedOp* op, weft_status* st) {
  if (control_.trace != nullptr) {
    // Recorded before the node completes: once it has, the run may end.
    const TensorValue* slots = SlotsOf(op->item_);
    TraceAdd(op->p_, op->item_.iter, op->item_.trace_start, false, true,
             st == nullptr ? TraceBytes(op->p_, slots,
                                        slots + op->p_.output_base)
                           : 0);
  }
  std::shared_ptr<ParkedOp> keep;  // alive to the end of this function
  {
    std::lock_guard<std::mutex> lock(parked_mu_);
    for (size_t i = 0; i < parked_.size(); ++i)
      if (parked_[i].get() == op) {
        keep = std::move(parked_[i]);
        parked_.erase(parked_.begin() + static_cast<long>(i));
        break;
      }
  }
  if (st != nullptr) {
    if (std::string(weft_status_message(st)).find(op->p_.node->name) ==
        std::string::npos)
      st = Annotate(st, op->where_);
    std::string where = FrameDescription(op->item_.iter);
    if (!where.empty()) st = Annotate(st, "in " + where);
    Fail(st);
    op->item_.dead = true;
    CancelParked();  // the run is over: nothing else may wait on
  }
  if (op->item_.iter == nullptr) {
    // A flat plan: the node completes as Process would have completed it.
    FlatComplete(static_cast<int32_t>(&op->p_ - plan_.nodes.data()));
    return;
  }
  std::lock_guard<std::mutex> lock(cf_mu_);
  TensorValue carried;
  CfComplete(op->item_, &carried, false);
  cf_parked_--;
  if (session_->pool) CfDispatch();
  cf_cv_.notify_all();  // under the lock: the waiter may destroy us next
}

weft_status* Run::CancelReason() {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_ == nullptr)
    return Error(WEFT_CANCELLED, "the run was cancelled");
  return Error(weft_status_code(error_), weft_status_message(error_));
}

void Run::CancelParked() {
  std::vector<std::shared_ptr<ParkedOp>> ops;
  {
    std::lock_guard<std::mutex> lock(parked_mu_);
    ops = parked_;
  }
  for (const std::shared_ptr<ParkedOp>& op : ops)
    if (!op->done()) op->Cancel(CancelReason());
}

void Run::Cancel(weft_status* why) {
  Fail(why);
  CancelParked();
}

void Run::Expire() {
  static const char kWhy[] =
      "the run passed its deadline (run option timeout_ms) with work left";
  // Parked ops hear of the deadline before the run fails with it: one that
  // knows better why it was still waiting (a collective: the other ranks
  // did not come) then fails the run with that reason instead.
  std::vector<std::shared_ptr<ParkedOp>> ops;
  {
    std::lock_guard<std::mutex> lock(parked_mu_);
    ops = parked_;
  }
  for (const std::shared_ptr<ParkedOp>& op : ops)
    if (!op->done()) op->Cancel(Error(WEFT_DEADLINE_EXCEEDED, kWhy));
  {
    // An op that answered with a plain CANCELLED of its own (an
    // asynchronous kernel's wording) was cancelled by the deadline: say so.
    std::lock_guard<std::mutex> lock(mu_);
    if (error_ != nullptr && weft_status_code(error_) == WEFT_CANCELLED) {
      weft_status_destroy(error_);
      error_ = Error(WEFT_DEADLINE_EXCEEDED, kWhy);
    }
  }
  Cancel(Error(WEFT_DEADLINE_EXCEEDED, kWhy));
}

template <typename Pred>
void Run::CfWait(std::unique_lock<std::mutex>& lock, Pred done) {
  while (!done()) {
    if (!control_.has_deadline || failed_.load(std::memory_order_acquire)) {
      cf_cv_.wait(lock, done);
      return;
    }
    if (cf_cv_.wait_until(lock, control_.deadline, done)) return;
    lock.unlock();
    Expire();
    lock.lock();
  }
}

// One call of an asynchronous kernel (compute_async): its context and
// what the context points at, alive until the kernel is done (`self`).
class KernelCall : public AsyncKernelCall {
 public:
  KernelCall(Run* run, const PlanNode& p, const CfItem& item)
      : run_(run), p_(p), item_(item) {}

  weft_status* Defer(void (*cancel)(void*), void* cancel_arg) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!in_compute_ || deferred_)
        return Errorf(WEFT_FAILED_PRECONDITION,
                      "node '%s': kernel_defer %s", p_.node->name.c_str(),
                      deferred_ ? "called twice"
                                : "after compute_async returned");
      deferred_ = true;
      cancel_ = cancel;
      cancel_arg_ = cancel_arg;
      ctx.stream = nullptr;  // the stream is the run's again
    }
    std::shared_ptr<KernelCall> me = self;
    done_ = run_->Park(p_, item_, [me](weft_status* why) {
      me->Cancel();
      weft_status_destroy(why);
    });
    return nullptr;
  }

  void Done(weft_status* st) override {
    std::shared_ptr<KernelCall> keep;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!deferred_ || finished_) {
        // A kernel bug: done without deferring (the call then fails), or
        // a second done (ignored: the node has completed).
        if (!deferred_) misused_ = true;
        lock.unlock();
        weft_status_destroy(st);
        return;
      }
      finished_ = true;
      cv_.wait(lock, [this] { return !cancelling_; });
      keep = std::move(self);
    }
    if (st == nullptr)
      st = run_->CheckOutputs(p_, p_.node, p_.kernel, outputs.data());
    else
      st = KernelError(st, p_.node, p_.device);
    if (st == nullptr)
      for (size_t o = 0; o < outputs.size(); ++o)
        done_->set_output(static_cast<int32_t>(o), std::move(outputs[o]));
    std::shared_ptr<AsyncDone> done = std::move(done_);
    done->Done(st);  // the run may end here: nothing of it is touched after
  }

  // After compute_async returned: whether it deferred (then nothing more
  // is read here), else the node's outputs are taken.
  bool Returned() {
    std::lock_guard<std::mutex> lock(mu_);
    in_compute_ = false;
    return deferred_;
  }
  bool misused() const { return misused_; }  // after Returned

  weft_kernel_context ctx;
  std::vector<TensorValue> inputs;
  std::vector<const TensorValue*> input_ptrs;
  std::vector<TensorValue> outputs;
  std::shared_ptr<KernelCall> self;  // until Done

 private:
  void Cancel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_ || cancelled_ || cancel_ == nullptr) return;
      cancelled_ = cancelling_ = true;
    }
    cancel_(cancel_arg_);
    std::lock_guard<std::mutex> lock(mu_);
    cancelling_ = false;
    cv_.notify_all();
  }

  Run* run_;
  const PlanNode& p_;
  CfItem item_;
  std::shared_ptr<AsyncDone> done_;  // from Park
  std::mutex mu_;
  std::condition_variable cv_;
  bool in_compute_ = true, deferred_ = false, finished_ = false;
  bool misused_ = false;
  bool cancelled_ = false, cancelling_ = false;
  void (*cancel_)(void*) = nullptr;
  void* cancel_arg_ = nullptr;
};

weft_status* Run::RunAsyncKernel(const PlanNode& p, const CfItem& item,
                                 bool* parked) {
  auto call = std::make_shared<KernelCall>(this, p, item);
  const TensorValue* slots = SlotsOf(item);
  const size_t n_in = p.input_slots.size();
  call->inputs.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const TensorValue& v = slots[p.input_slots[i]];
    if (!Accessible(v, p.device))
      return Errorf(WEFT_INTERNAL, "node '%s': input %zu is on %s, which %s "
                    "cannot read (a missing Send/Recv)",
                    p.node->name.c_str(), i,
                    v.device() ? v.device()->name.c_str() : "the host",
                    p.device->name.c_str());
    call->inputs.push_back(v);  // a reference the call keeps
  }
  for (const TensorValue& v : call->inputs) call->input_ptrs.push_back(&v);
  call->outputs.resize(static_cast<size_t>(p.num_outputs));
  weft_kernel_context& ctx = call->ctx;
  ctx.node = p.node;
  ctx.device = p.device;
  ctx.intra_op_threads = intra_op_threads_;
  ctx.inputs = call->input_ptrs.data();
  ctx.num_inputs = static_cast<int32_t>(n_in);
  ctx.outputs = call->outputs.data();
  ctx.num_outputs = p.num_outputs;
  ctx.async = call.get();
  if (p.run_counter != nullptr)
    ctx.run_counter = p.run_counter->fetch_add(1, std::memory_order_relaxed);
  call->self = call;
  weft_status* st;
  if (RunStream* rs = StreamFor(p.device)) {
    std::lock_guard<std::mutex> lock(rs->mu);
    ctx.stream = rs->stream;
    st = p.kernel->compute_async(p.kernel->arg, &ctx);
  } else {
    st = p.kernel->compute_async(p.kernel->arg, &ctx);
  }
  if (call->Returned()) {
    // Deferred: kernel_done completes the node (perhaps it already has).
    weft_status_destroy(st);
    *parked = true;
    return nullptr;
  }
  call->self.reset();
  if (call->misused()) {
    weft_status_destroy(st);
    return Errorf(WEFT_INTERNAL, "node '%s' (%s): its kernel called "
                  "kernel_done without kernel_defer", p.node->name.c_str(),
                  p.node->op_type.c_str());
  }
  if (st != nullptr) return KernelError(st, p.node, p.device);
  WEFT_RETURN_IF_ERROR(
      CheckOutputs(p, p.node, p.kernel, call->outputs.data()));
  TensorValue* out = SlotsOf(item) + p.output_base;
  for (int32_t o = 0; o < p.num_outputs; ++o)
    out[o] = std::move(call->outputs[static_cast<size_t>(o)]);
  return nullptr;
}

weft_status* Run::RunRuntimeOp(const PlanNode& p, const CfItem& item,
                               bool* dead, bool* parked) {
  if (p.kernel != nullptr) return RunAsyncKernel(p, item, parked);
  CfRuntimeContext ctx(this, p, item);
  weft_status* st = p.node->def->runtime(&ctx);
  *dead = ctx.dead();
  *parked = ctx.parked();
  if (st == nullptr && *dead && item.iter == nullptr)
    st = Errorf(WEFT_INTERNAL, "a runtime op made its outputs dead outside "
                "control flow");
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
  if (cf_frames_ == nullptr) cf_frames_ = std::make_unique<FrameMap>();
  auto found = cf_frames_->find(key);
  if (found != cf_frames_->end()) return found->second;
  auto* f = new FrameInstance;
  f->frame = frame;
  f->parent = parent->frame;
  f->parent_iter = parent;
  f->parent_number = parent->number;
  const PlanFrame& pf = plan_.frames[frame];
  f->pending_enters = pf.num_enters;
  f->exit_values.resize(pf.exits.size());
  f->exit_live.assign(pf.exits.size(), 0);
  cf_frames_->emplace(key, f);
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
  if (cf_frames_ != nullptr)
    cf_frames_->erase(std::make_tuple(
        static_cast<const FrameInstance*>(f->parent), f->parent_number,
        f->frame));
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
// is to count itself out, under the lock, so the run outlives it.  An item
// queued after CfProcess last looked (a parked op's Done on another thread,
// whose CfDispatch counted on this task) gets a task of its own here;
// without that it would wait forever.
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
  --cf_tasks_;
  if (!cf_done_) CfDispatch();
  if (cf_tasks_ == 0) cf_cv_.notify_all();
}

void Run::CfProcess(CfItem item) {
  for (;;) {
    const PlanNode& p = plan_.nodes[item.node];
    Iteration* it = item.iter;
    TensorValue carried;
    bool pred = false;
    bool parked = false;  // a runtime op that completes later
    if (control_.has_deadline && !failed_.load(std::memory_order_relaxed) &&
        std::chrono::steady_clock::now() >= control_.deadline)
      Expire();
    if (!item.dead && failed_.load(std::memory_order_acquire))
      item.dead = true;  // after an error, everything left drains as dead
    if (!item.dead) {
      TensorValue* slots = it->slots.data();
      weft_status* st = nullptr;
      bool traced = control_.trace != nullptr;
      if (traced) item.trace_start = control_.trace->Now();
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
          st = RunRuntimeOp(p, item, &dead, &parked);
          if (st == nullptr && dead) item.dead = true;
          break;
        }
        default:
          if (traced) {
            st = TracedExecute(p, slots, slots + p.output_base, it);
            traced = false;  // recorded
          } else {
            st = ExecuteNode(p, slots, slots + p.output_base);
          }
          break;
      }
      // Control flow and runtime ops (a parked one is recorded when done).
      if (traced && !parked)
        TraceAdd(p, it, item.trace_start, false, false,
                 st == nullptr && p.kind == ExecKind::kRuntime
                     ? TraceBytes(p, slots, slots + p.output_base)
                     : 0);
      // A long loop on an async device: free what its stream is done with.
      if (st == nullptr && drain_wanted_.load(std::memory_order_relaxed) &&
          drain_wanted_.exchange(false))
        st = DrainDeferred();
      if (st != nullptr) {
        std::string where = FrameDescription(it);
        if (!where.empty())
          st = Annotate(st, "node '" + p.node->name + "' (" +
                                p.node->op_type + ") in " + where);
        Fail(st);
        item.dead = true;
      }
    } else if (p.kind == ExecKind::kRuntime && p.node->def->runs_dead &&
               !failed_.load(std::memory_order_acquire)) {
      // A value of an untaken branch that another task waits for: the op
      // (a TaskSend) tells it so.  Its outputs stay dead.
      CfRuntimeContext ctx(this, p, item);
      ctx.set_inputs_dead();
      weft_status* st = p.node->def->runtime(&ctx);
      parked = ctx.parked();
      if (st != nullptr) Fail(st);
    }
    if (parked) {
      // Its Done completes the item.  A failure or cancellation that came
      // before the op registered its wait finds it here.
      if (failed_.load(std::memory_order_acquire)) CancelParked();
    }
    bool more;
    {
      std::lock_guard<std::mutex> lock(cf_mu_);
      if (!parked) CfComplete(item, &carried, pred);
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

weft_status* Run::ExecuteFrames(TensorValue* feeds, size_t num_feeds,
                                TensorValue* fetched) {
  cf_free_.resize(plan_.frames.size());
  cf_iterations_.assign(plan_.frames.size(), 0);
  cf_max_in_flight_.assign(plan_.frames.size(), 0);
  root_frame_ = new FrameInstance;
  Iteration* root = CfNewIteration(root_frame_, 0);
  for (size_t i = 0; i < num_feeds; ++i) {
    root->slots[plan_.feed_slots[i]] = std::move(feeds[i]);
    root->state[plan_.feed_slots[i]] = kLive;
  }
  {
    std::lock_guard<std::mutex> lock(cf_mu_);
    root->outstanding++;  // held until every root is queued
    for (size_t i = plan_.roots.size(); i-- > 0;) {
      const int32_t r = plan_.roots[i];
      const PlanNode& q = plan_.nodes[r];
      if (q.kind != ExecKind::kMerge) {
        CfReady(root, r, false, -1);
        continue;
      }
      // A Merge whose inputs are all fed (no plan node feeds it) fires at
      // once with its first live input, as a Merge does when that input
      // arrives; with none live it is dead.
      int32_t live = -1;
      for (size_t k = 0; k < q.input_slots.size() && live < 0; ++k)
        if (q.input_slots[k] >= 0 && root->state[q.input_slots[k]] == kLive)
          live = static_cast<int32_t>(k);
      root->fired[q.local] = 1;
      CfReady(root, r, live < 0, live);
    }
    root->outstanding--;
    CfCheckDone(root_frame_);
  }
  if (session_->pool) {
    std::unique_lock<std::mutex> lock(cf_mu_);
    CfDispatch();
    CfWait(lock, [this] {
      return (cf_done_ || cf_queue_.empty()) && cf_tasks_ == 0 &&
             cf_parked_ == 0;
    });
  } else {
    for (;;) {
      CfItem item;
      {
        std::unique_lock<std::mutex> lock(cf_mu_);
        // Parked ops complete on other threads and queue what they make
        // ready here.
        CfWait(lock, [this] { return !cf_queue_.empty() || cf_parked_ == 0; });
        if (cf_queue_.empty()) break;
        item = cf_queue_.back();
        cf_queue_.pop_back();
      }
      CfProcess(item);
    }
  }
  weft_status* sync = Finish();
  if (weft_status* error = TakeError()) {
    weft_status_destroy(sync);
    return error;
  }
  if (sync) return sync;
  if (!cf_done_)
    return Errorf(WEFT_INTERNAL,
                  "the run stopped with work left: a loop waits for a value "
                  "that never comes");
  for (size_t i = 0; i < plan_.fetch_slots.size(); ++i) {
    int32_t s = plan_.fetch_slots[i];
    if (root->state[s] != kLive)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "fetch %zu is dead: its value comes from a branch that "
                    "was not taken", i);
    fetched[i] = root->slots[s];
  }
  return nullptr;
}


}  // namespace exec
}  // namespace weft
