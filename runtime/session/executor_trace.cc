// The executor's side of execution traces: timing a node for a traced run
// (weft_run_options.trace_level).  Untraced runs never come here.
#include "session/run.h"
#include "session/trace.h"

namespace weft {
namespace exec {

namespace {

// Kinds whose work goes onto the device's stream (on devices with
// streams); the others (constants, variable reads, forwarding) are the
// host's bookkeeping.
bool EnqueuesDeviceWork(ExecKind kind) {
  switch (kind) {
    case ExecKind::kKernel:
    case ExecKind::kAssign:
    case ExecKind::kAssignAdd:
    case ExecKind::kUpdate:
    case ExecKind::kSend:
    case ExecKind::kRecv:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Run::TraceAdd(const PlanNode& p, const Iteration* it, int64_t start,
                   bool on_stream, bool parked, uint64_t bytes) {
  TraceRecord r;
  r.node = &p;
  if (it != nullptr) {
    r.frame = it->frame->frame;
    r.iteration = it->number;
  }
  r.thread = TraceThread();
  r.on_stream = on_stream;
  r.parked = parked;
  r.start_ns = start;
  r.end_ns = control_.trace->Now();
  r.bytes = bytes;
  control_.trace->Add(r);
}

weft_status* Run::TracedExecute(const PlanNode& p, TensorValue* slots,
                                TensorValue* out, const Iteration* it) {
  RunStream* rs = EnqueuesDeviceWork(p.kind) ? StreamFor(p.device) : nullptr;
  std::unique_lock<std::mutex> serial;
  if (rs != nullptr) serial = std::unique_lock<std::mutex>(rs->trace_mu);
  const int64_t start = control_.trace->Now();
  weft_status* st = it == nullptr && p.kind == ExecKind::kKernel
                        ? ExecuteKernel(p, slots, out)
                        : ExecuteNode(p, slots, out);
  // The node ends when the stream has done its work (which also frees
  // what that work was the last to read).
  if (st == nullptr && rs != nullptr) st = DrainStream(p.device);
  TraceAdd(p, it, start, rs != nullptr, false,
           st == nullptr ? TraceBytes(p, slots, out) : 0);
  return st;
}

}  // namespace exec
}  // namespace weft
