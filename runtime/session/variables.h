// The session's resource container: the current value of each variable.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

#include "graph/graph.h"
#include "tensor/tensor_value.h"

namespace weft {

struct VariableState {
  std::mutex mu;
  bool initialized = false;
  TensorValue value;  // a buffer only this state holds for writing
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

 private:
  std::mutex mu_;
  std::unordered_map<const weft_node*, std::unique_ptr<VariableState>> states_;
};

}  // namespace weft
