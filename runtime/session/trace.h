// Execution traces (weft_run_options.trace_level): what the executor
// records while a traced run goes, and how run metadata turns it into
// events and Chrome trace-event JSON.  An untraced run has no collector
// (RunControl::trace is null) and touches nothing here.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "session/plan.h"

namespace weft {

// A small number naming the calling thread, the same for its whole life
// (process-wide, first come first numbered).
uint32_t TraceThread();

// One execution of a plan node, as the executor saw it.
struct TraceRecord {
  const PlanNode* node = nullptr;
  int32_t frame = 0;       // the node's plan frame (0: outside loops)
  int64_t iteration = 0;   // in that frame
  uint32_t thread = 0;     // TraceThread() of the thread that started it
  bool on_stream = false;  // timed on its device's stream (to completion)
  bool parked = false;     // waited without a thread; ended by its Done
  int64_t start_ns = 0, end_ns = 0;  // since the run began
  uint64_t bytes = 0;  // outputs newly allocated, or bytes transferred
};

// What one traced run records.  Thread-safe once started.
class TraceCollector {
 public:
  // The run begins now, on the calling thread; called before execution.
  void Start() {
    start_ = std::chrono::steady_clock::now();
    caller_ = TraceThread();
  }
  int64_t Now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - start_)
        .count();
  }
  void Add(const TraceRecord& r) {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(r);
  }
  // After the run: what was recorded, and the thread that called run.
  const std::vector<TraceRecord>& records() const { return records_; }
  uint32_t caller() const { return caller_; }

 private:
  std::chrono::steady_clock::time_point start_;
  uint32_t caller_ = 0;
  std::mutex mu_;
  std::vector<TraceRecord> records_;
};

// The bytes node `p` newly allocated on its device: its outputs `out`
// that are neither state (variables, constants) nor one of its inputs
// `in` forwarded (0 for `out` null: outputs that went elsewhere).  For a
// transfer, the bytes it moved.
uint64_t TraceBytes(const PlanNode& p, const TensorValue* in,
                    const TensorValue* out);

}  // namespace weft
