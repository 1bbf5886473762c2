// An execution plan: the pruned, placed subgraph for one (feeds, fetches,
// targets) signature, laid out as flat arrays so that a run does no graph
// work at all.
#pragma once

#include <memory>
#include <vector>

#include "device/registry.h"
#include "graph/graph.h"
#include "session/variables.h"

namespace weft {

struct PlanNode {
  const weft_node* node = nullptr;
  ExecKind kind = ExecKind::kKernel;
  Device* device = nullptr;
  const KernelReg* kernel = nullptr;  // kKernel, and Add for kAssignAdd
  std::vector<int32_t> input_slots;
  int32_t output_base = 0;
  int32_t num_outputs = 0;
  std::vector<int32_t> successors;  // one entry per edge into a plan node
  int32_t pending = 0;              // edges from plan nodes
  TensorValue const_value;          // kConst: on `device`
  VariableState* variable = nullptr;  // kVariable, kAssign, kAssignAdd
  std::atomic<uint64_t>* run_counter = nullptr;  // stateful kernels
};

struct Plan {
  std::vector<PlanNode> nodes;
  std::vector<int32_t> roots;
  int32_t num_slots = 0;
  std::vector<int32_t> feed_slots;   // per feed
  std::vector<int32_t> fetch_slots;  // per fetch
  // Reads of each slot by plan nodes, plus one per fetch (so fetched values
  // are never released early).
  std::vector<int32_t> slot_uses;
  std::vector<Device*> async_devices;  // devices with streams in the plan
};

struct PlanRequest {
  const std::vector<weft_output>* feeds;
  const std::vector<weft_output>* fetches;
  const std::vector<weft_node*>* targets;
  const std::vector<Device*>* devices;  // allowed, in preference order
  VariableStore* variables;
};

weft_status* BuildPlan(const PlanRequest& request, std::shared_ptr<Plan>* out);

}  // namespace weft
