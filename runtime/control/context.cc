#include "control/context.h"

#include <algorithm>

#include "base/status.h"

namespace weft {
namespace {

// Open contexts of this thread, innermost last.
thread_local std::vector<ControlContext*> open_contexts;
thread_local std::vector<const Graph*> open_graphs;

}  // namespace

ControlContext* ControlContext::Current(const Graph* graph) {
  for (size_t i = open_contexts.size(); i-- > 0;)
    if (open_graphs[i] == graph) return open_contexts[i];
  return nullptr;
}

int32_t ControlContext::LoopDepth(const Graph* graph) {
  int32_t n = 0;
  for (size_t i = 0; i < open_contexts.size(); ++i)
    if (open_graphs[i] == graph && open_contexts[i]->is_loop()) ++n;
  return n;
}

void ControlContext::Open() {
  open_contexts.push_back(this);
  open_graphs.push_back(graph_->impl.get());
}

void ControlContext::Close() {
  for (size_t i = open_contexts.size(); i-- > 0;)
    if (open_contexts[i] == this) {
      open_contexts.erase(open_contexts.begin() + static_cast<long>(i));
      open_graphs.erase(open_graphs.begin() + static_cast<long>(i));
      return;
    }
}

std::vector<ControlContext*> ControlContext::Suspend(const Graph* graph) {
  std::vector<ControlContext*> closed;
  for (size_t i = 0; i < open_contexts.size(); ++i)
    if (open_graphs[i] == graph) closed.push_back(open_contexts[i]);
  for (ControlContext* c : closed) c->Close();
  return closed;
}

void ControlContext::Resume(const std::vector<ControlContext*>& contexts) {
  for (ControlContext* c : contexts) c->Open();
}

void ControlContext::Added(const Graph* graph, const weft_node* n) {
  for (size_t i = 0; i < open_contexts.size(); ++i)
    if (open_graphs[i] == graph) open_contexts[i]->MarkInside(n);
}

weft_status* ControlContext::Bring(weft_output v, weft_output* out) {
  if (Inside(v.node)) {
    *out = v;
    return nullptr;
  }
  auto key = std::make_pair(static_cast<const weft_node*>(v.node), v.index);
  auto it = captured_.find(key);
  if (it != captured_.end()) {
    *out = it->second;
    return nullptr;
  }
  // The capturing node is made with this context closed, so the contexts
  // around it bring `v` in to where this one starts.
  Close();
  weft_status* st = Capture(v, out);
  Open();
  if (st != nullptr) return st;
  MarkInside(out->node);
  captured_.emplace(key, *out);
  return nullptr;
}

weft_status* ControlContext::Prepare(weft_node* n) {
  const OpDef* def = OpRegistry::Global().Find(n->op_type);
  for (size_t k = 0; k < n->inputs.size(); ++k) {
    if (def != nullptr && def->IsRefInput(k)) continue;
    if (n->inputs[k].node == nullptr) continue;
    WEFT_RETURN_IF_ERROR(Bring(n->inputs[k], &n->inputs[k]));
  }
  for (const weft_node* c : n->control_inputs)
    if (!Inside(c))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s) in %s has a control input from '%s', "
                    "which is outside it: depend on a value brought in "
                    "instead", n->name.empty() ? "<unnamed>" : n->name.c_str(),
                    n->op_type.c_str(), what_.c_str(), c->name.c_str());
  bool has_input = !n->control_inputs.empty();
  for (size_t k = 0; k < n->inputs.size(); ++k)
    if (def == nullptr || !def->IsRefInput(k)) has_input = true;
  if (!has_input && pivot_ != nullptr) n->control_inputs.push_back(pivot_);
  return nullptr;
}

}  // namespace weft
