// Control-flow frames: each node's frame from its inputs (Enter and Exit
// change frames), the graphs this refuses, and the per-frame numbering of
// the executor's per-iteration state.
#include "session/planner.h"

#include "base/status.h"

namespace weft {
namespace planning {

std::string Planner::FrameName(int32_t f) const {
  return f == 0 ? std::string("the root frame")
                : "frame '" + plan_->frames[f].name + "'";
}

// Each node's frame, from its inputs': an Enter's output is in the child
// frame it names (one per parent frame and name), an Exit's in the parent;
// everything else stays in its inputs' frame.  Values cross frames only
// through Enter and Exit.
weft_status* Planner::AnalyzeFrames() {
  const size_t n = order_.size();
  exec_frame_.assign(n, 0);
  out_frame_.assign(n, 0);
  plan_->control_flow = false;
  // Runtime ops run on both executors (outside loops their iteration path
  // is empty).
  for (const weft_node* node : order_)
    if (IsControlFlow(node->def->exec)) plan_->control_flow = true;
  if (!plan_->control_flow) return nullptr;
  plan_->frames.assign(1, PlanFrame{});
  std::map<std::pair<int32_t, std::string>, int32_t> by_name;
  for (int32_t i : topo_) {
    const weft_node* node = order_[i];
    int32_t f = -1;
    const weft_node* first = nullptr;
    auto see = [&](const weft_node* from, int32_t frame) -> weft_status* {
      if (f < 0) {
        f = frame;
        first = from;
        return nullptr;
      }
      if (f == frame) return nullptr;
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s) reads '%s' from %s and '%s' from %s: a "
                    "value from outside a loop must come in through an "
                    "Enter, and leave through an Exit",
                    node->name.c_str(), node->op_type.c_str(),
                    first->name.c_str(), FrameName(f).c_str(),
                    from->name.c_str(), FrameName(frame).c_str());
    };
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      if (IsRefInput(node, k)) continue;
      const weft_output& in = node->inputs[k];
      int32_t frame =
          IsFed(in.node, in.index) ? 0 : out_frame_[index_.at(Rep(in.node))];
      WEFT_RETURN_IF_ERROR(see(in.node, frame));
    }
    for (const weft_node* c : node->control_inputs)
      WEFT_RETURN_IF_ERROR(see(c, out_frame_[index_.at(Rep(c))]));
    if (f < 0) f = 0;
    exec_frame_[i] = out_frame_[i] = f;
    if (node->def->exec == ExecKind::kEnter) {
      const std::string& name = FindAttr(node->attrs, "frame_name")->s;
      auto [it, added] = by_name.emplace(std::make_pair(f, name),
                                         static_cast<int32_t>(
                                             plan_->frames.size()));
      if (added) {
        PlanFrame frame;
        frame.name = name;
        frame.parent = f;
        frame.parallel_iterations = static_cast<int32_t>(
            FindAttr(node->attrs, "parallel_iterations")->i);
        plan_->frames.push_back(std::move(frame));
      }
      out_frame_[i] = it->second;
      plan_->frames[it->second].num_enters++;
    } else if (node->def->exec == ExecKind::kExit) {
      if (f == 0)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (Exit) is not inside a loop frame: its "
                      "input '%s' is in the root frame", node->name.c_str(),
                      node->inputs[0].node->name.c_str());
      out_frame_[i] = plan_->frames[f].parent;
      plan_->frames[f].exits.push_back(i);
    }
  }
  WEFT_RETURN_IF_ERROR(CheckEntersAfterExits());
  return CheckFrameEdges();
}

// A frame instance finishes (and its Exits deliver) only once all its
// Enters have run, so an Enter whose input is computed from an Exit of its
// own frame could never run: refused here rather than found stuck at run
// time.  One forward pass per frame with Exits, in topological order.
weft_status* Planner::CheckEntersAfterExits() {
  const std::vector<PlanFrame>& frames = plan_->frames;
  std::vector<int32_t> via(order_.size());  // the Exit reaching it, or -1
  for (size_t f = 1; f < frames.size(); ++f) {
    if (frames[f].exits.empty()) continue;
    std::fill(via.begin(), via.end(), -1);
    for (int32_t e : frames[f].exits) via[e] = e;
    for (int32_t i : topo_) {
      const weft_node* node = order_[i];
      int32_t from = via[i];
      for (size_t k = 0; from < 0 && k < node->inputs.size(); ++k) {
        const weft_output& in = node->inputs[k];
        if (IsRefInput(node, k) || IsFed(in.node, in.index)) continue;
        from = via[index_.at(Rep(in.node))];
      }
      for (const weft_node* c : node->control_inputs)
        if (from < 0) from = via[index_.at(Rep(c))];
      via[i] = from;
      if (from >= 0 && node->def->exec == ExecKind::kEnter &&
          out_frame_[i] == static_cast<int32_t>(f))
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "Enter '%s' into %s reads a value computed from that "
                      "frame's Exit '%s': a frame ends only after all its "
                      "Enters have run, so this Enter could never run",
                      node->name.c_str(),
                      FrameName(static_cast<int32_t>(f)).c_str(),
                      order_[from]->name.c_str());
    }
  }
  return nullptr;
}

// What frames alone do not say: a back edge stays in its loop's frame, a
// loop-variable Enter feeds only its Merge (its value exists in iteration 0
// alone, so any other reader would wait forever in later iterations), and
// a loop-invariant one feeds no Merge (which would then fire twice).
weft_status* Planner::CheckFrameEdges() {
  for (size_t i = 0; i < order_.size(); ++i) {
    const weft_node* node = order_[i];
    if (node->def->exec == ExecKind::kNextIteration) {
      const weft_node* merge =
          node->graph->Find(FindAttr(node->attrs, "merge")->s);
      int32_t m = index_.at(Rep(merge));
      if (exec_frame_[m] != exec_frame_[i] || exec_frame_[i] == 0)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (NextIteration) is in %s but its Merge "
                      "'%s' is in %s: a back edge must stay inside one loop "
                      "frame", node->name.c_str(),
                      FrameName(exec_frame_[i]).c_str(), merge->name.c_str(),
                      FrameName(exec_frame_[m]).c_str());
    }
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const weft_output& in = node->inputs[k];
      if (IsRefInput(node, k) || IsFed(in.node, in.index)) continue;
      const weft_node* src = Rep(in.node);
      if (src->def->exec != ExecKind::kEnter) continue;
      bool invariant = FindAttr(src->attrs, "is_constant")->i != 0;
      bool merge = node->def->exec == ExecKind::kMerge;
      if (!invariant && !merge)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (%s) reads Enter '%s', which is not "
                      "is_constant: its value exists only in the first "
                      "iteration, so only a Merge may read it (mark "
                      "loop-invariant values is_constant)",
                      node->name.c_str(), node->op_type.c_str(),
                      src->name.c_str());
      if (invariant && merge)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "Merge '%s' reads Enter '%s', which is is_constant: a "
                      "loop variable's Enter must not be", node->name.c_str(),
                      src->name.c_str());
    }
  }
  return nullptr;
}

// Numbers nodes and slots per frame, the indexes of per-iteration state.
weft_status* Planner::LocalizeFrames() {
  std::vector<PlanFrame>& frames = plan_->frames;
  // Enters counted again: a cluster session keeps its own task's, and
  // adds copies of invariants' and its control loops' (tasks.cc).
  for (PlanFrame& f : frames) f.num_nodes = f.num_slots = f.num_enters = 0;
  for (const PlanNode& p : plan_->nodes)
    if (p.kind == ExecKind::kEnter) frames[p.out_frame].num_enters++;
  std::vector<int32_t> local(plan_->num_slots);
  for (int32_t s = 0; s < plan_->num_slots; ++s)
    local[s] = frames[slot_frame_[s]].num_slots++;
  for (PlanNode& p : plan_->nodes) {
    p.local = frames[p.frame].num_nodes++;
    if (p.frame != 0 && p.pending == 0 && p.kind != ExecKind::kMerge)
      return Errorf(WEFT_INTERNAL,
                    "node '%s' (%s) in %s has no inputs there, so nothing "
                    "would start it", p.node->name.c_str(),
                    p.node->op_type.c_str(), FrameName(p.frame).c_str());
    for (int32_t& s : p.input_slots) {
      if (s < 0) continue;
      if (slot_frame_[s] != p.frame)
        return Errorf(WEFT_INTERNAL,
                      "node '%s' (%s) in %s reads slot '%s' of %s",
                      p.node->name.c_str(), p.node->op_type.c_str(),
                      FrameName(p.frame).c_str(), slot_name_[s].c_str(),
                      FrameName(slot_frame_[s]).c_str());
      s = local[s];
    }
    if (p.num_outputs > 0) p.output_base = local[p.output_base];
  }
  for (int32_t& s : plan_->feed_slots) s = local[s];
  for (int32_t& s : plan_->fetch_slots) s = local[s];
  return nullptr;
}

}  // namespace planning
}  // namespace weft
