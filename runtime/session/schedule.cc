// Memory-aware scheduling: delays nodes whose large outputs would
// otherwise wait long for their consumers.
#include "session/planner.h"

#include <algorithm>

namespace weft {
namespace planning {

// Is `to` reachable from `from` along successors?  Bounded: a search that
// grows too large answers "yes", which only forgoes an optimization.
bool Planner::Reaches(int32_t from, int32_t to) const {
  std::vector<int32_t> stack{from};
  std::unordered_set<int32_t> seen{from};
  size_t budget = 20000;
  while (!stack.empty()) {
    int32_t n = stack.back();
    stack.pop_back();
    if (n == to) return true;
    for (int32_t s : plan_->nodes[n].successors)
      if (seen.insert(s).second) {
        if (--budget == 0) return true;
        stack.push_back(s);
      }
  }
  return false;
}

// Memory-aware scheduling.  A node that is ready long before its consumer
// would hold its output through all the work in between; instead it waits
// (by an added dependency edge) for the last-finishing other input of its
// earliest consumer, so it runs as late as that consumer allows and its
// output lives briefly.  Only nodes with large outputs are delayed: for
// small ones the lost parallelism costs more than the memory saved.
void Planner::ScheduleForMemory() {
  constexpr uint64_t kMinBytes = 64 << 10;
  const size_t n = plan_->nodes.size();
  // Longest path from a root, in nodes (ASAP level).
  std::vector<int32_t> level(n, 0), pending(n);
  std::vector<int32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    pending[i] = plan_->nodes[i].pending;
    if (pending[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  std::vector<int32_t> topo;
  while (!ready.empty()) {
    int32_t i = ready.back();
    ready.pop_back();
    topo.push_back(i);
    for (int32_t s : plan_->nodes[i].successors) {
      level[s] = std::max(level[s], level[i] + 1);
      if (--pending[s] == 0) ready.push_back(s);
    }
  }
  // Producers of each node (data and control), from the successor lists.
  std::vector<std::vector<int32_t>> preds(n);
  for (size_t i = 0; i < n; ++i)
    for (int32_t s : plan_->nodes[i].successors)
      preds[s].push_back(static_cast<int32_t>(i));
  for (int32_t v : topo) {
    PlanNode& p = plan_->nodes[v];
    if (p.kind != ExecKind::kKernel && p.kind != ExecKind::kRecv) continue;
    if (p.successors.empty() || p.frame != 0) continue;
    uint64_t bytes = 0;
    if (p.kind == ExecKind::kRecv) {
      bytes = plan_->transfers[p.transfer].bytes;
    } else {
      for (int32_t o = 0; o < p.num_outputs; ++o)
        if (p.node->output_shapes[o].fully_known())
          bytes += StaticBytes(p.node, o);
    }
    if (bytes < kMinBytes) continue;
    int32_t consumer = p.successors[0];
    for (int32_t s : p.successors)
      if (level[s] < level[consumer]) consumer = s;
    int32_t gate = -1;
    for (int32_t q : preds[consumer])
      if (q != v && (gate < 0 || level[q] > level[gate])) gate = q;
    if (gate < 0 || level[gate] <= level[v]) continue;  // no slack
    // Within the root frame only: an edge into or out of a loop would tie
    // every iteration to one node.
    if (plan_->nodes[gate].frame != 0) continue;
    if (Reaches(v, gate)) continue;                      // would cycle
    plan_->nodes[gate].successors.push_back(v);
    p.pending++;
    preds[v].push_back(gate);
    plan_->schedule_edges++;
  }
}

// A straight-line plan's order (Plan::sequence).  The run is simulated as
// Process would run it on one thread: nodes that run no kernel as soon as
// they are ready, then the one ready kernel.  Two kernels ready at once
// means work the pool could share: then the plan keeps the dynamic
// executor, and so does any node that may wait, park or use a stream.
void Planner::Sequence() {
  plan_->sequence.clear();
  plan_->releases.clear();
  if (plan_->control_flow || !plan_->transfers.empty() ||
      !plan_->async_devices.empty() || !plan_->task_peers.empty())
    return;
  // Every value is then in host memory, where every kernel reads it: the
  // walk checks no input's place.
  for (const Device* d : plan_->devices)
    if (!d->host_memory()) return;
  const std::vector<PlanNode>& nodes = plan_->nodes;
  for (const PlanNode& p : nodes) {
    switch (p.kind) {
      case ExecKind::kKernel:
      case ExecKind::kConst:
      case ExecKind::kVariable:
      case ExecKind::kNoOp:
        break;
      default:
        return;
    }
  }
  std::vector<int32_t> pending(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) pending[i] = nodes[i].pending;
  std::vector<int32_t> uses = plan_->slot_uses;
  std::vector<int32_t> cheap;  // ready, running no kernel
  int32_t kernel = -1;         // the ready kernel
  auto ready = [&](int32_t id) {
    if (nodes[id].kind != ExecKind::kKernel) {
      cheap.push_back(id);
      return true;
    }
    if (kernel >= 0) return false;
    kernel = id;
    return true;
  };
  std::vector<SequenceStep> sequence;
  std::vector<int32_t> releases;
  for (int32_t r : plan_->roots)
    if (!ready(r)) return;
  for (;;) {
    int32_t id;
    if (!cheap.empty()) {
      id = cheap.back();
      cheap.pop_back();
    } else if (kernel >= 0) {
      id = kernel;
      kernel = -1;
    } else {
      break;
    }
    const PlanNode& p = nodes[id];
    SequenceStep step;
    step.node = id;
    step.release_begin = static_cast<int32_t>(releases.size());
    for (size_t i = 0; i < p.input_slots.size(); ++i) {
      const int32_t s = p.input_slots[i];
      if (s < 0 || --uses[s] != 0) continue;
      releases.push_back(s);
      if (i < 32) step.last_read |= 1u << i;
    }
    step.release_end = static_cast<int32_t>(releases.size());
    sequence.push_back(step);
    for (int32_t succ : p.successors)
      if (--pending[succ] == 0 && !ready(succ)) return;
  }
  if (sequence.size() != nodes.size()) return;
  plan_->sequence = std::move(sequence);
  plan_->releases = std::move(releases);
}

}  // namespace planning
}  // namespace weft
