// Run metadata: a plan's placement, transfers and merges, and what a run
// measured, kept as strings so the C accessors can hand out pointers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "session/executor.h"
#include "session/trace.h"
#include "weft/session.h"

struct weft_run_metadata {
  struct Node {
    std::string name, op, device, reason, frame;
  };
  struct Frame {
    std::string name, parent;
    int32_t parallel_iterations;
    int64_t iterations;     // started in this run, over all its instances
    int32_t max_in_flight;  // the most alive at once in one instance
  };
  struct Transfer {
    std::string value, src, dst;
    int32_t wire_dtype;
    uint64_t bytes;
  };
  std::vector<Node> nodes;
  std::vector<Transfer> transfers;
  std::vector<Frame> frames;
  std::vector<std::pair<std::string, std::string>> merged;  // removed, kept
  std::vector<std::pair<std::string, std::string>> fused;  // node, what
  std::vector<std::pair<std::string, std::string>> recomputed;  // node, what
  // Updates that wrote over their variable: update node, variable.
  std::vector<std::pair<std::string, std::string>> in_place;
  std::vector<std::string> devices;
  std::vector<uint64_t> peak_bytes;
  // A traced run's events (trace.cc), in order of their start.
  struct TraceEvent {
    int32_t kind;  // weft_trace_event_kind
    std::string name, op, device, lane, frame;
    std::string from, to;  // Send, Recv: the transfer's devices
    int64_t iteration, start_ns, end_ns;
    uint64_t bytes;
  };
  std::vector<TraceEvent> trace;
  bool traced = false;
  mutable std::string chrome_trace;  // built on the first request
  int32_t schedule_edges = 0;
  int32_t intra_op_threads = 0;
  mutable std::string text;

  void Clear();
  void Describe(const weft::Plan& plan);
  void SetPeaks(const weft::Plan& plan, const weft::RunStats& stats);
  void SetTrace(const weft::Plan& plan, const weft::TraceCollector& collector);
};
