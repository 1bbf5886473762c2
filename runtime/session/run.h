// The executor's run: one Session::Run of a plan.  Internal to
// runtime/session: executor.cc runs plans without control flow (the flat
// path: atomic dependency counts, one slot per value) and what every plan
// shares (kernels, Send/Recv, variables, memory accounting);
// frame_executor.cc runs plans with loop frames and runtime ops
// (per-iteration state, deadness, parallel_iterations).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "session/executor.h"

namespace weft {
namespace exec {

constexpr int kInlineInputs = 8;
static_assert(kInlineInputs >= kDescribedMaxInputs,
              "ExecuteKernel's inputs fit compute_described's array");

// Can a kernel on `d` read `v` where it is?
inline bool Accessible(const TensorValue& v, const Device* d) {
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
  // A traced run: held from a node's first enqueue until the stream has
  // finished its work, so the stream's events follow one another.
  std::mutex trace_mu;
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
  int64_t trace_start = 0;   // a traced run's runtime op: when it started
};

class ParkedOp;

// A kernel's error `st`, naming the node, its op and `device` unless the
// kernel named the node already.
weft_status* KernelError(weft_status* st, const weft_node* node,
                         const Device* device);

class Run {
 public:
  // A run lives in its arena (RunArena::run), made with it once and used
  // by every run that takes the arena: a run() constructs and destroys no
  // Run, only Begin and End reset what one run leaves.
  static Run& In(RunArena& arena, weft_session* s, const Plan& p);
  Run(weft_session* s, const Plan& p, RunArena& arena)
      : session_(s),
        plan_(p),
        arena_(arena),
        slots_(arena.slots),
        pending_(arena.pending.get()),
        uses_(arena.uses.get()),
        streams_(p.async_devices.empty()
                     ? nullptr
                     : new RunStream[p.async_devices.size()]),
        events_(p.transfers.size(), nullptr),
        slot_bytes_(arena.slot_bytes.get()),
        live_(arena.live.get()),
        peak_(arena.peak.get()),
        cv_(arena.cv),
        local_ready_(arena.ready),
        cf_cv_(arena.cf_cv) {}
  ~Run() { End(); }

  // Readies the run for Execute: what one run counts, from the plan.
  void Begin(int32_t intra_op_threads, const RunControl& control) {
    intra_op_threads_ = intra_op_threads;
    control_ = control;
    remaining_ = static_cast<int32_t>(plan_.nodes.size());
    shared_.store(false, std::memory_order_relaxed);
    finished_ = false;
    failed_.store(false, std::memory_order_relaxed);
    drain_wanted_.store(false, std::memory_order_relaxed);
    cf_tasks_ = 0;
    cf_done_ = false;
    cf_parked_ = 0;
    for (size_t i = 0; i < plan_.devices.size(); ++i) {
      live_[i].store(0, std::memory_order_relaxed);
      peak_[i].store(0, std::memory_order_relaxed);
    }
    // A straight-line plan's plain run counts nothing (ExecuteSequence);
    // Execute sets the counts for its other runs.
    if (plan_.sequence.empty()) SetCounts();
  }
  void SetCounts() {
    const PlanNode* nodes = plan_.nodes.data();
    for (size_t i = 0; i < plan_.nodes.size(); ++i)
      pending_[i] = nodes[i].pending;
    const int32_t* slot_uses = plan_.slot_uses.data();
    for (int32_t i = 0; i < plan_.num_slots; ++i) uses_[i] = slot_uses[i];
  }
  // After Execute (and once nothing can reach the run): empties the slots
  // and drops what the run made (frames, resources, a late cancellation's
  // reason), keeping the containers' capacity for the next run.
  void End();

  // See weft::Execute.
  weft_status* Execute(TensorValue* feeds, size_t num_feeds,
                       TensorValue* fetched, RunStats* stats);

  RunResources* resources() { return &resources_; }
  const void* group() const { return control_.group; }
  // Ends the run early with `why` (taken over) unless it has failed
  // already: nodes not yet started are skipped and parked ops cancelled.
  // Thread-safe; the run must still be in Execute.
  void Cancel(weft_status* why);

 private:
  // Control flow (plans with frames).
  weft_status* ExecuteFrames(TensorValue* feeds, size_t num_feeds,
                             TensorValue* fetched);
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
  weft_status* RunRuntimeOp(const PlanNode& p, const CfItem& item, bool* dead,
                            bool* parked);
  // The slots an item's node reads and writes: its iteration's, or the
  // run's in a flat plan (item.iter null).
  TensorValue* SlotsOf(const CfItem& item) {
    return item.iter != nullptr ? item.iter->slots.data() : slots_.data();
  }
  // Flat plans: what Process does after node `id` has run, for a runtime
  // op that parked and is done now (on whatever thread called Done):
  // releases its inputs, hands what it makes ready to the pool or the
  // caller's thread, and counts it out.
  void FlatComplete(int32_t id);
  // Counts a node out of remaining_; true when it was the last: the run is
  // finished, and its caller may destroy it at once (touch nothing after).
  bool CountOut(bool serial) {
    return CountDown(remaining_, serial) && Finished(serial);
  }
  // After the last node: wakes the caller (in a serial run, the caller is
  // this thread: nothing to wake).  Returns true.
  bool Finished(bool serial);
  // Until something of the run reaches another thread (a node handed to
  // the pool, a runtime op that may complete on another thread), only the
  // caller's thread touches its counts, and they change by a plain
  // decrement: a locked read-modify-write costs ~20 cycles, several per
  // node.  Share() is called before that first hand-off, on the caller's
  // thread (the hand-off itself publishes the counts); once shared, every
  // thread counts atomically (the __atomic builtins: what C++20 calls
  // atomic_ref).  True when the count reaches zero.
  static bool CountDown(int32_t& c, bool serial) {
    if (serial) return --c == 0;
    return __atomic_sub_fetch(&c, 1, __ATOMIC_ACQ_REL) == 0;
  }
  bool Serial() const { return !shared_.load(std::memory_order_relaxed); }
  void Share() {
    if (!shared_.load(std::memory_order_relaxed))
      shared_.store(true, std::memory_order_relaxed);
  }
  // An asynchronous kernel (compute_async), run as a runtime op is.
  weft_status* RunAsyncKernel(const PlanNode& p, const CfItem& item,
                              bool* parked);
  friend class CfRuntimeContext;
  friend class ParkedOp;
  friend class KernelCall;
  // Parked (asynchronous) runtime ops.
  std::shared_ptr<ParkedOp> Park(const PlanNode& p, const CfItem& item,
                                 CancelFn cancel);
  void ParkedDone(ParkedOp* op, weft_status* st);
  // Cancels every parked op with the run's error.
  void CancelParked();
  // The run's error, copied, for a parked op's cancellation.
  weft_status* CancelReason();
  // Waits on cf_cv_ until `done` holds, ending the run at its deadline.
  template <typename Pred>
  void CfWait(std::unique_lock<std::mutex>& lock, Pred done);
  // After the deadline: ends the run with DEADLINE_EXCEEDED.
  void Expire();
  weft_status* ReadPred(const PlanNode& p, const TensorValue& v, bool* pred);
  void Process(int32_t id);
  void Process(const int32_t* ids, size_t n);
  void Dispatch(int32_t id);
  // `in`: the slots the node's input_slots index; `out`: its outputs.
  weft_status* ExecuteNode(const PlanNode& p, TensorValue* in,
                           TensorValue* out);
  // The kKernel case of ExecuteNode, on its own (the hot path).
  weft_status* CallDescribed(const PlanNode& p, weft_kernel_context* ctx,
                             const TensorValue* const* inputs, int32_t n_in,
                             TensorValue* outputs, int32_t n_out);
  weft_status* ExecuteKernel(const PlanNode& p, TensorValue* in,
                             TensorValue* out);
  // ExecuteKernel's body.  kSequence: in a straight-line run, which knows
  // from the plan which inputs the node reads last (`last_read`) and keeps
  // no use counts.
  template <bool kSequence>
  weft_status* ExecuteKernelImpl(const PlanNode& p, TensorValue* in,
                                 TensorValue* out, uint32_t last_read);
  // A straight-line plan's plain run (Plan::sequence), on this thread.
  void ExecuteSequence();
  weft_status* RunKernel(const PlanNode& p, const weft_node* node,
                         const KernelReg* kernel,
                         const TensorValue* const* inputs, int32_t n_in,
                         TensorValue* outputs, int32_t n_out,
                         uint32_t writable_inputs = 0);
  // RunKernel's body, inlined into ExecuteKernel (one call frame less per
  // node on the hot path).
  inline weft_status* RunKernelInline(const PlanNode& p,
                                      const weft_node* node,
                                      const KernelReg* kernel,
                                      const TensorValue* const* inputs,
                                      int32_t n_in, TensorValue* outputs,
                                      int32_t n_out,
                                      uint32_t writable_inputs);
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
  // The run's error (taken over), or null: at the end of Execute.
  weft_status* TakeError();
  void Release(TensorValue& v);
  // Waits for the work this run queued on `d` (no-op on synchronous
  // devices).  Used before state becomes visible to other runs.
  weft_status* DrainStream(Device* d);
  void ReleaseSlot(int32_t s);
  bool Forwardable(const PlanNode& p, int32_t s, const TensorValue& v) const;
  // What Forwardable checks besides the use count.
  static bool OnlySlotHolds(const PlanNode& p, const TensorValue& v);
  weft_status* Finish();
  // Tracing (executor_trace.cc; only when control_.trace is set).
  // ExecuteNode (or ExecuteKernel, in a flat plan: `it` null), timed; on
  // a device with streams, to the end of the node's work there.
  weft_status* TracedExecute(const PlanNode& p, TensorValue* slots,
                             TensorValue* out, const Iteration* it);
  // Records node `p` of iteration `it` (null: a flat plan), run from
  // `start` until now.
  void TraceAdd(const PlanNode& p, const Iteration* it, int64_t start,
                bool on_stream, bool parked, uint64_t bytes);

  weft_session* session_;
  const Plan& plan_;
  RunArena& arena_;  // the arena this run lives in
  int32_t intra_op_threads_ = 1;  // what kernels of this run may use
  std::vector<TensorValue>& slots_;
  // Dependency counts (see CountDown): plain ints, atomic only through
  // the __atomic builtins once the run is shared.
  int32_t* pending_;
  int32_t* uses_;
  int32_t remaining_ = 0;
  std::atomic<bool> shared_{false};  // see CountDown
  std::unique_ptr<RunStream[]> streams_;
  std::vector<weft_plugin_event*> events_;  // per transfer, on its sender
  // Run memory: bytes each slot's value counts for, live and peak bytes
  // per device of the plan.
  std::atomic<int64_t>* slot_bytes_;  // in arena_; zero between runs
  std::atomic<int64_t>* live_;  // in arena_, zeroed by Begin
  std::atomic<int64_t>* peak_;

  std::mutex mu_;
  std::condition_variable& cv_;  // arena_'s
  bool finished_ = false;
  std::atomic<bool> failed_{false};
  weft_status* error_ = nullptr;
  // Buffers that work queued on an async device's stream may still read:
  // freed once that stream has been synchronized after they were deferred
  // (DrainStream: a loop reads its predicate back each iteration, so a
  // long loop frees as it goes), or at the end.  As a backstop for work
  // that never syncs, a run holding more than kDeferredLimit bytes asks
  // the frame executor to drain.
  struct Deferred {
    Device* stream_device;
    BufferRef buffer;
  };
  static constexpr size_t kDeferredLimit = size_t{64} << 20;
  void Defer(Device* stream_device, BufferRef buffer);
  // Synchronizes every async stream that has deferred buffers, freeing
  // them.
  weft_status* DrainDeferred();
  std::vector<Deferred> deferred_;  // under mu_
  size_t deferred_bytes_ = 0;       // under mu_
  std::atomic<bool> drain_wanted_{false};
  // Per-node memory accounting (live and peak bytes per device) is kept
  // only when the caller asked for run metadata.
  bool accounting_ = false;
  // No deadline, no trace and no accounting: Process runs a kernel node
  // with no other check (set by Execute).
  bool plain_ = false;
  // With accounting: the updates written in place (RunStats::in_place).
  std::vector<std::pair<const weft_node*, const weft_node*>> in_place_;
  // Without a pool: the caller's queue (arena_'s, emptied by End).
  std::vector<int32_t>& local_ready_;
  // Without a pool: nodes a parked op's Done made ready, for the caller's
  // thread (under mu_; cv_ tells it).
  std::vector<int32_t> async_ready_;

  // Control flow.
  std::mutex cf_mu_;
  FrameInstance* root_frame_ = nullptr;
  // Live frame instances but the root, by (parent frame instance, parent
  // iteration, frame); made by the first (a flat run never has one, and
  // an empty std::map still costs an out-of-line call to destroy).
  using FrameMap = std::map<std::tuple<const FrameInstance*, int64_t, int32_t>,
                            FrameInstance*>;
  std::unique_ptr<FrameMap> cf_frames_;
  std::vector<std::vector<Iteration*>> cf_free_;  // per frame, for reuse
  std::vector<CfItem> cf_queue_;  // ready items waiting for a thread
  size_t cf_tasks_ = 0;  // pool tasks scheduled and not yet finished
  std::condition_variable& cf_cv_;  // arena_'s: cf_done_ with no task left
  bool cf_done_ = false;
  RunResources resources_;  // runtime ops' state for this run
  int32_t cf_parked_ = 0;   // under cf_mu_: parked ops not yet done
  std::mutex parked_mu_;
  std::vector<std::shared_ptr<ParkedOp>> parked_;  // under parked_mu_
  RunControl control_;
  std::vector<int64_t> cf_iterations_;     // per frame, for RunStats
  std::vector<int32_t> cf_max_in_flight_;  // per frame, for RunStats
};

}  // namespace exec
}  // namespace weft
