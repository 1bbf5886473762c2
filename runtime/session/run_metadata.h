// Run metadata: a plan's placement, transfers and merges, and what a run
// measured, kept as strings so the C accessors can hand out pointers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "session/executor.h"
#include "weft/session.h"

struct weft_run_metadata {
  struct Node {
    std::string name, op, device, reason;
  };
  struct Transfer {
    std::string value, src, dst;
    int32_t wire_dtype;
    uint64_t bytes;
  };
  std::vector<Node> nodes;
  std::vector<Transfer> transfers;
  std::vector<std::pair<std::string, std::string>> merged;  // removed, kept
  std::vector<std::string> devices;
  std::vector<uint64_t> peak_bytes;
  int32_t schedule_edges = 0;
  mutable std::string text;

  void Clear();
  void Describe(const weft::Plan& plan);
  void SetPeaks(const weft::Plan& plan, const weft::RunStats& stats);
};
