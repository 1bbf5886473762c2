// The session's resource container: the current value of each variable, and
// how often each stateful node has run.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "graph/graph.h"
#include "tensor/tensor_value.h"

namespace weft {

class Device;

struct VariableState {
  std::mutex mu;
  bool initialized = false;
  TensorValue value;  // a buffer only this state holds for writing
  // Where the value lives: chosen by the first plan that places the
  // variable (under `mu`), so that every plan of the session agrees.
  Device* device = nullptr;
  std::string device_reason;
};

class VariableStore {
 public:
  // The state for Variable node `var`, created on first use.  The pointer
  // lives as long as the store.
  VariableState* Get(const weft_node* var) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = states_[var];
    if (!slot) slot = std::make_unique<VariableState>();
    return slot.get();
  }

  // The run counter of a stateful node (random ops), created on first use.
  std::atomic<uint64_t>* RunCounter(const weft_node* node) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = counters_[node];
    if (!slot) slot = std::make_unique<std::atomic<uint64_t>>(0);
    return slot.get();
  }

 private:
  std::mutex mu_;
  std::unordered_map<const weft_node*, std::unique_ptr<VariableState>> states_;
  std::unordered_map<const weft_node*, std::unique_ptr<std::atomic<uint64_t>>>
      counters_;
};

}  // namespace weft
