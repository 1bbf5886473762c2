// From (feeds, fetches, targets) to a plan:
//  1. prune to what is needed, stopping at feeds;
//  2. merge common subexpressions, and prune again through the survivors;
//     fuse Conv2D + BiasAdd + Relu chains (fuse.cc), and prune again;
//     when the session asks, recompute cheap values the gradient reads
//     (recompute.cc), and prune again;
//  3. place: variables once per session, kernels by constraint, kernel
//     availability and cost (argmin over devices of compute time plus the
//     time to bring inputs over), state with its variable, constants and
//     NoOps with their consumers;
//  3b. in a cluster session, first split by task (tasks.cc): every rank
//     decides alike which task runs each node and keeps its own;
//  4. partition: one Send/Recv pair per (value, destination device) for
//     values that cross memories; constants are copied to each device that
//     reads them once, at plan time, instead; a TaskSend/TaskRecv pair
//     per (value, task) for values crossing tasks;
//  5. schedule for memory: delay nodes whose outputs would otherwise wait
//     for their consumers;
//  6. lay out value slots and dependency counts, per control-flow frame
//     when the plan has loops or conds.
// One file per pass (planner.h lists them); this one runs them in order.

#include "base/status.h"
#include "session/planner.h"
#include "weft/session.h"

namespace weft {
namespace planning {

weft_status* Planner::Build() {
  for (size_t i = 0; i < req_.feeds->size(); ++i) {
    const weft_output& f = (*req_.feeds)[i];
    if (!fed_.emplace(OutputKey{f.node, f.index}, static_cast<int32_t>(i))
             .second)
      return Errorf(WEFT_INVALID_ARGUMENT, "output %s:%d is fed twice",
                    f.node->name.c_str(), f.index);
  }
  Prune();
  if (opts_.optimizations & WEFT_OPTIMIZE_CSE) {
    cse_ = EliminateCommonSubexpressions(
        order_, [this](const weft_node* n, int32_t i) { return IsFed(n, i); });
    if (!cse_.replaced.empty()) Prune();
    plan_->merged = cse_.merges;
  }
  if (opts_.optimizations & WEFT_OPTIMIZE_FUSION) Fuse();
  TopologicalOrder();
  if (opts_.recompute != WEFT_RECOMPUTE_OFF && Recompute()) {
    Prune();
    TopologicalOrder();
  }
  WEFT_RETURN_IF_ERROR(AnalyzeFrames());
  if (req_.cluster != nullptr) WEFT_RETURN_IF_ERROR(SplitTasks());
  WEFT_RETURN_IF_ERROR(Place());
  WEFT_RETURN_IF_ERROR(Partition());
  Link();
  if (opts_.optimizations & WEFT_OPTIMIZE_MEMORY_SCHEDULE) ScheduleForMemory();
  if (plan_->control_flow) WEFT_RETURN_IF_ERROR(LocalizeFrames());

  for (size_t i = 0; i < plan_->nodes.size(); ++i)
    if (plan_->nodes[i].pending == 0 && plan_->nodes[i].frame == 0)
      plan_->roots.push_back(static_cast<int32_t>(i));
  for (const PlanNode& p : plan_->nodes) {
    auto add = [](std::vector<Device*>* v, Device* d) {
      if (std::find(v->begin(), v->end(), d) == v->end()) v->push_back(d);
    };
    add(&plan_->devices, p.device);
    if (p.device->has_streams()) add(&plan_->async_devices, p.device);
    if (p.kind == ExecKind::kRuntime && p.node != nullptr &&
        p.node->def->collective)
      plan_->collectives.push_back(p.node);
  }
  std::sort(plan_->collectives.begin(), plan_->collectives.end(),
            [](const weft_node* a, const weft_node* b) { return a->id < b->id; });
  Sequence();
  const std::vector<int32_t>& fetches = plan_->fetch_slots;
  plan_->fetch_moves.assign(fetches.size(), 1);
  for (size_t i = 0; i < fetches.size(); ++i)
    if (std::find(fetches.begin() + i + 1, fetches.end(), fetches[i]) !=
        fetches.end())
      plan_->fetch_moves[i] = 0;
  return nullptr;
}

}  // namespace planning

weft_status* BuildPlan(const PlanRequest& req, std::shared_ptr<Plan>* out) {
  auto plan = std::make_shared<Plan>();
  plan->arenas = std::make_shared<RunArenaPool>();
  plan->tuner = std::make_shared<ThreadTuner>();
  planning::Planner planner(req, plan.get());
  WEFT_RETURN_IF_ERROR(planner.Build());
  *out = std::move(plan);
  return nullptr;
}

}  // namespace weft
