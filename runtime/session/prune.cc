// Pruning: the nodes the fetches and targets need (through data, control,
// back edges and keep_alive), stopping at fed values, and a creation-order
// topological order of them.
#include "session/planner.h"

namespace weft {
namespace planning {

void Planner::Prune() {
  index_.clear();
  order_.clear();
  std::vector<const weft_node*> stack;
  auto want = [&](const weft_node* n) {
    n = Rep(n);
    if (index_.emplace(n, static_cast<int32_t>(order_.size())).second) {
      order_.push_back(n);
      stack.push_back(n);
    }
  };
  for (const weft_output& f : *req_.fetches)
    if (!IsFed(f.node, f.index)) want(f.node);
  for (const weft_node* t : *req_.targets) want(t);
  while (!stack.empty()) {
    const weft_node* n = stack.back();
    stack.pop_back();
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const weft_output& in = n->inputs[i];
      if (!IsRefInput(n, i) && !IsFed(in.node, in.index)) want(in.node);
    }
    for (const weft_node* c : n->control_inputs) want(c);
    for (const weft_node* k : n->keep_alive) want(k);
    // A loop Merge needs the values its back edges bring.
    if (n->def->exec == ExecKind::kMerge)
      for (const weft_node* b : n->graph->BackEdges(n)) want(b);
  }
}

void Planner::TopologicalOrder() {
  const size_t n = order_.size();
  std::vector<int32_t> pending(n, 0);
  std::vector<std::vector<int32_t>> succ(n);
  for (size_t i = 0; i < n; ++i) {
    const weft_node* node = order_[i];
    auto edge = [&](const weft_node* from) {
      succ[index_.at(Rep(from))].push_back(static_cast<int32_t>(i));
      pending[i]++;
    };
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const weft_output& in = node->inputs[k];
      if (!IsRefInput(node, k) && !IsFed(in.node, in.index)) edge(in.node);
    }
    for (const weft_node* c : node->control_inputs) edge(c);
  }
  topo_.clear();
  for (size_t i = n; i-- > 0;)
    if (pending[i] == 0) topo_.push_back(static_cast<int32_t>(i));
  for (size_t h = 0; h < topo_.size(); ++h)
    for (int32_t s : succ[topo_[h]])
      if (--pending[s] == 0) topo_.push_back(s);
}

}  // namespace planning
}  // namespace weft
