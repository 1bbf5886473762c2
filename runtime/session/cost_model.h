// The placer's cost model: how long a node would take on a device, and how
// long moving a value between devices takes.
//
// Estimates, not measurements of the node itself: compute time is the
// node's floating-point work at the device's rate (GFLOP/s) plus the bytes
// it touches at a memory rate, plus a launch overhead; a transfer costs a
// latency plus bytes at the device's host<->device rate.  The rate of a
// device is, in order: the session's override (device_gflops or
// WEFT_DEVICE_GFLOPS), the estimate its plugin gives, or one measured once
// per process by timing a 256x256x256 MatMul on it.  Copy rates are
// measured once per device (8 MiB each way) for devices whose memory is not
// the host's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"

namespace weft {

class CostModel {
 public:
  // `overrides`: "PATTERN=GFLOPS,..." (device patterns as for the session's
  // `devices`); validated here.  With `every_term_matches` (the session's
  // own option) a term that matches none of `devices` is an error; without
  // it (WEFT_DEVICE_GFLOPS, which every session of the process reads,
  // some with fewer devices) it is ignored.
  static weft_status* Create(const std::string& overrides,
                             const std::vector<Device*>& devices,
                             bool every_term_matches,
                             std::unique_ptr<CostModel>* out);

  // Microseconds for `n` on `d`.
  double ComputeUs(const weft_node* n, Device* d);
  // Microseconds to move `bytes` from `src` (null: host memory) to `dst`.
  double TransferUs(uint64_t bytes, Device* src, Device* dst);
  // The rate used for `d`, and where it came from ("plugin estimate",
  // "measured", "session override").
  double Gflops(Device* d, const char** source = nullptr);

 private:
  std::vector<std::pair<Device*, double>> overrides_;
};

// Floating-point operations per output element of one execution of `n`,
// by the estimate ComputeUs uses (MatMul and convolutions by their shapes,
// everything else a few per element in or out); infinite when the output
// has no elements or unknown rank.
double FlopsPerOutputElement(const weft_node* n);

// Bytes of output `index` of `n` when its shape is known at build time (a
// dim of unknown size counts as 1); 0 when the rank is unknown.
uint64_t StaticBytes(const weft_node* n, int32_t index);

}  // namespace weft
