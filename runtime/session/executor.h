// Runs a plan: dataflow with pending counts, a ready queue on the session's
// inter-op pool, and asynchronous device work through plugin streams.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "session/plan.h"
#include "session/session.h"

namespace weft {

// What a run measured.
struct RunStats {
  // Per device of plan.devices: the most bytes of run values (outputs and
  // transfer buffers, not state) held at once.
  std::vector<uint64_t> peak_bytes;
  // Per frame of the plan (index 0, the root, unused): iterations started
  // over the run, and the most alive at once in one frame instance.
  std::vector<int64_t> frame_iterations;
  std::vector<int32_t> frame_max_in_flight;
  // Update ops that wrote a variable's new value over its old buffer:
  // (update node, variable node), in the order they ran.
  std::vector<std::pair<const weft_node*, const weft_node*>> in_place;
  // The threads a kernel of the run could use.
  int32_t intra_op_threads = 0;
};

namespace exec {
class Run;
}
class TraceCollector;

// Ends one run from another thread, whether it has started yet or not (a
// message that arrives before the run begins must still end it): Cancel
// ends the run now if it is going, else as soon as Execute starts it.
class RunCanceller {
 public:
  ~RunCanceller();
  void Cancel(const weft_status* why);  // copies `why`; the first one wins

 private:
  friend weft_status* Execute(weft_session*, const Plan&, TensorValue*,
                              size_t, TensorValue*, struct RunStats*,
                              const struct RunControl&);
  void Attach(exec::Run* run);
  void Detach();
  std::mutex mu_;
  weft_status* why_ = nullptr;
  exec::Run* run_ = nullptr;
};

// What the caller asks of one run beyond its plan.
struct RunControl {
  // A run still going at `deadline` ends with DEADLINE_EXCEEDED: parked
  // ops are cancelled and nodes not yet started are skipped (a kernel
  // already running finishes first).
  bool has_deadline = false;
  std::chrono::steady_clock::time_point deadline;
  // Runs started for one owner (a queue runner) share a group, which
  // CancelRuns can end alone; null for none.
  const void* group = nullptr;
  // An asynchronous cluster's run: the <run> of its transfers' keys (the
  // running task's count); -1 elsewhere.
  int64_t task_run = -1;
  // Null, or how another thread may end this run.
  RunCanceller* canceller = nullptr;
  // Null (no trace, and no clock read per node), or where a traced run
  // records what each node did (trace.h).
  TraceCollector* trace = nullptr;
};

// `feeds` (`num_feeds` values, moved from) are placed in the plan's feed
// slots; on success `fetched[i]` (room for the plan's fetches) is the value
// of fetch i (on whatever device produced it).  `stats` may be null.  The
// run can be cancelled while it goes (weft_session_cancel).
weft_status* Execute(weft_session* session, const Plan& plan,
                     TensorValue* feeds, size_t num_feeds,
                     TensorValue* fetched, RunStats* stats,
                     const RunControl& control = RunControl());
// The same over vectors: `fetched` is resized to the plan's fetches.
weft_status* Execute(weft_session* session, const Plan& plan,
                     std::vector<TensorValue> feeds,
                     std::vector<TensorValue>* fetched, RunStats* stats,
                     const RunControl& control = RunControl());

// `n` values, on the stack when there are few (a run's feeds and fetches):
// only the `n` are constructed.
class ValueArray {
 public:
  explicit ValueArray(size_t n)
      : n_(n),
        data_(n <= kInline ? reinterpret_cast<TensorValue*>(inline_)
                           : static_cast<TensorValue*>(::operator new(
                                 n * sizeof(TensorValue)))) {
    // Default-initialized: `TensorValue()` would clear all 104 bytes first.
    for (size_t i = 0; i < n; ++i) new (data_ + i) TensorValue;
  }
  ~ValueArray() {
    for (size_t i = 0; i < n_; ++i) data_[i].~TensorValue();
    if (n_ > kInline) ::operator delete(data_);
  }
  ValueArray(const ValueArray&) = delete;
  ValueArray& operator=(const ValueArray&) = delete;
  TensorValue* data() { return data_; }
  size_t size() const { return n_; }
  TensorValue& operator[](size_t i) { return data_[i]; }

 private:
  static constexpr size_t kInline = 4;
  size_t n_;
  alignas(TensorValue) unsigned char inline_[kInline * sizeof(TensorValue)];
  TensorValue* data_;
};

// Lists `run` among the session's runs in flight (run_registry.cc);
// returns its entry of run_slots, or null when it went to the locked list.
std::atomic<exec::Run*>* ListRun(weft_session* session, exec::Run* run);
// Takes `run` out of the list (`slot`: what ListRun returned) before it
// ends: CancelRuns may be reaching it until then.
void UnlistRun(weft_session* session, std::atomic<exec::Run*>* slot,
               exec::Run* run);

// Ends every run of `session` in flight (of `group` only, when not null)
// with a copy of `why` (CANCELLED), as a deadline would.  Returns how many
// runs it reached.
int32_t CancelRuns(weft_session* session, const weft_status* why,
                   const void* group = nullptr);

// weft_session_run_with_options once the options are read: plans (or finds
// the plan) and executes under `control`.
weft_status* RunSession(weft_session* session, const RunControl& control,
                        const weft_output* feeds,
                        weft_tensor* const* feed_values, int32_t num_feeds,
                        const weft_output* fetches, int32_t num_fetches,
                        weft_node* const* targets, int32_t num_targets,
                        weft_tensor** out_values,
                        weft_run_metadata* metadata);

}  // namespace weft
