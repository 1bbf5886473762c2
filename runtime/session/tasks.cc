// Tasks (cluster sessions only): which task of the cluster runs each node,
// decided from the graph alone so that every rank, planning the same graph,
// decides alike; then this rank keeps its own task's nodes, and the edges
// that cross tasks become TaskSend/TaskRecv pairs (partition.cc makes
// them, distributed/transfer.h moves the bytes).
//
// The rule, in order:
//  - a constraint's "/job:NAME/task:N" part (wildcards: "/job:worker",
//    "/task:*") limits a node to those tasks;
//  - a variable goes to the first task its constraint allows (task 0 of the
//    cluster when unconstrained), and what writes it (Assign, the
//    optimizers' updates) goes with it;
//  - any other node goes where most of its input bytes are, among the tasks
//    it may use (ties: its first input's task);
//  - a node no input decides (constants, random ops, nodes whose inputs are
//    all fed) goes with its first consumer, else the first task it may use;
//  - a loop's unconstrained nodes (and those of the loops inside it) go
//    where its LoopCond is: a loop stays whole unless constraints spread it;
//  - a loop variable's Enter, Merge and NextIteration (the back edge never
//    crosses tasks), and the ops of one accumulator or TensorArray (a
//    loop's gradient reads what the loop saved), stay on one task: that of
//    the group's first node.
// In an asynchronous cluster (serving jobs, session/serve.h) a run uses
// the task that makes it (the client) and the serving tasks: constraints
// are narrowed to those (a node left with none is INVALID_ARGUMENT), an
// unconstrained node runs on the client (a constant with its first
// consumer, an op writing a variable with the variable), a serving task's
// node may not read a feed, and fetched values go to the client alone.
// A value of a conditional's branch crosses dead when the branch is not
// taken (TaskSend runs on dead inputs and says so), so the receiving
// task's plan runs on the executor that tracks deadness.
//
// Loops split over tasks.  A value crossing inside a loop crosses once per
// iteration, keyed by the iteration numbers of its frame and the frames
// around it (transfer.cc).  Every task with nodes of such a loop (or of a
// loop inside it) runs a control loop of its own for the frame, as
// TensorFlow's partitioner does: Enter -> Merge -> Switch(pred) ->
// NextIteration -> Merge, whose predicate is the loop's LoopCond, sent
// each iteration by the task that computes it.  The control loop makes the
// task's iterations those of the loop; its Merge, which fires as each
// iteration starts, is what starts that iteration's TaskRecvs (they have
// no input of their own).  A loop-invariant value (an is_constant Enter)
// read on another task is entered there by a copy of its Enter, so it
// crosses once per entry of the frame rather than once per iteration.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "base/status.h"
#include "distributed/cluster.h"
#include "distributed/transfer.h"
#include "session/planner.h"

namespace weft {
namespace planning {

namespace {

// "/job:ps/task:0, /job:worker/task:1": the tasks of `ranks`.
template <typename Ranks>
std::string TaskList(const distributed::Cluster& c, const Ranks& ranks) {
  std::string s;
  for (int32_t r : ranks) s += (s.empty() ? "" : ", ") + c.TaskName(r);
  return s;
}

}  // namespace

weft_status* Planner::SplitTasks() {
  const distributed::Cluster& c = *req_.cluster;
  const int32_t n = static_cast<int32_t>(order_.size());
  std::vector<int32_t> task(static_cast<size_t>(n), -1);
  std::vector<std::vector<int32_t>> allowed(static_cast<size_t>(n));
  // Asynchronous clusters: the tasks this run may use, the running task
  // (the client) and the serving ones (none for a serving task's own
  // runs).
  const bool async = c.async();
  const int32_t client = req_.client;
  std::vector<int32_t> participants;
  if (async) {
    for (int32_t r = 0; r < c.size(); ++r)
      if (r == client || (!c.Serves(client) && c.Serves(r)))
        participants.push_back(r);
  }
  auto ranks_of = [&](const weft_node* node,
                      std::vector<int32_t>* out) -> weft_status* {
    out->clear();
    if (node->device.empty()) {
      // Unconstrained nodes run on the running task; constants go with
      // their first consumer.
      if (async)
        *out = node->def->exec == ExecKind::kConst
                   ? participants
                   : std::vector<int32_t>{client};
      return nullptr;
    }
    WEFT_RETURN_IF_ERROR(
        Annotate(c.RanksOf(node->device, out),
                 "node '" + node->name + "' (" + node->op_type + ")"));
    if (!async) return nullptr;
    std::vector<int32_t> kept;
    for (int32_t r : *out)
      if (std::find(participants.begin(), participants.end(), r) !=
          participants.end())
        kept.push_back(r);
    if (kept.empty()) {
      const std::string may = TaskList(c, participants);
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s) is constrained to '%s', which a run of "
                    "%s cannot use: in an asynchronous cluster (serving "
                    "jobs) a run uses only %s",
                    node->name.c_str(), node->op_type.c_str(),
                    node->device.c_str(), c.TaskName(client).c_str(),
                    may.c_str());
    }
    *out = std::move(kept);
    return nullptr;
  };
  auto may = [&](int32_t i, int32_t t) {
    const auto& a = allowed[static_cast<size_t>(i)];
    return a.empty() || std::find(a.begin(), a.end(), t) != a.end();
  };
  auto variable_task = [&](const weft_node* var,
                           int32_t* out) -> weft_status* {
    std::vector<int32_t> r;
    WEFT_RETURN_IF_ERROR(ranks_of(var, &r));
    *out = r.empty() ? 0 : r[0];
    return nullptr;
  };
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* node = order_[static_cast<size_t>(i)];
    if (node->def->collective)
      return Errorf(WEFT_UNIMPLEMENTED,
                    "node '%s' (%s): collective ops in a cluster session "
                    "(cluster '%s') are not supported: a collective runs on "
                    "every rank, a cluster session's nodes each on one task",
                    node->name.c_str(), node->op_type.c_str(),
                    c.spec.c_str());
    WEFT_RETURN_IF_ERROR(ranks_of(node, &allowed[static_cast<size_t>(i)]));
    if (node->def->exec == ExecKind::kVariable) {
      WEFT_RETURN_IF_ERROR(variable_task(node, &task[static_cast<size_t>(i)]));
    } else if (node->def->num_refs > 0) {
      int32_t t = 0;
      WEFT_RETURN_IF_ERROR(variable_task(node->inputs[0].node, &t));
      // (Unconstrained writers follow their variable wherever it is.)
      if (!node->device.empty() && !may(i, t))
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (%s) is constrained to '%s', but it writes "
                      "variable '%s', which is on %s", node->name.c_str(),
                      node->op_type.c_str(), node->device.c_str(),
                      node->inputs[0].node->name.c_str(),
                      c.TaskName(t).c_str());
      task[static_cast<size_t>(i)] = t;
    }
  }
  auto producer = [&](const weft_node* node, size_t k) -> int32_t {
    if (IsRefInput(node, k)) return -1;
    const weft_output& in = node->inputs[k];
    if (IsFed(in.node, in.index)) return -1;
    return index_.at(Rep(in.node));
  };
  // Where the input bytes are.
  for (int32_t i : topo_) {
    if (task[static_cast<size_t>(i)] >= 0) continue;
    const weft_node* node = order_[static_cast<size_t>(i)];
    const auto& a = allowed[static_cast<size_t>(i)];
    if (a.size() == 1) {
      task[static_cast<size_t>(i)] = a[0];
      continue;
    }
    std::vector<std::pair<int32_t, uint64_t>> votes;  // task, bytes
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const int32_t j = producer(node, k);
      if (j < 0) continue;
      const int32_t t = task[static_cast<size_t>(j)];
      if (t < 0 || !may(i, t)) continue;
      const uint64_t bytes =
          std::max<uint64_t>(1, StaticBytes(node->inputs[k].node,
                                            node->inputs[k].index));
      auto v = std::find_if(votes.begin(), votes.end(),
                            [t](const auto& e) { return e.first == t; });
      if (v == votes.end()) votes.emplace_back(t, bytes);
      else v->second += bytes;
    }
    if (votes.empty()) continue;
    auto best = votes.begin();
    for (auto v = votes.begin(); v != votes.end(); ++v)
      if (v->second > best->second) best = v;
    task[static_cast<size_t>(i)] = best->first;
  }
  // Nodes no input decided: with their first consumer.
  std::vector<std::vector<int32_t>> consumers(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* node = order_[static_cast<size_t>(i)];
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const int32_t j = producer(node, k);
      if (j >= 0) consumers[static_cast<size_t>(j)].push_back(i);
    }
    for (const weft_node* ci : node->control_inputs)
      consumers[static_cast<size_t>(index_.at(Rep(ci)))].push_back(i);
  }
  for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
    const int32_t i = *it;
    if (task[static_cast<size_t>(i)] >= 0) continue;
    const auto& a = allowed[static_cast<size_t>(i)];
    int32_t t = a.empty() ? 0 : a[0];
    for (int32_t k : consumers[static_cast<size_t>(i)]) {
      const int32_t ct = task[static_cast<size_t>(k)];
      if (ct >= 0 && may(i, ct)) {
        t = ct;
        break;
      }
    }
    task[static_cast<size_t>(i)] = t;
  }
  // A loop stays on one task unless constraints spread it: its
  // unconstrained nodes (those of the loops inside it too) go where the
  // outermost loop's predicate (its LoopCond) is, so by default values
  // cross at the loop's Enters and Exits, once, rather than every
  // iteration.  (Asynchronous clusters put unconstrained nodes on the
  // running task already.)
  if (plan_->control_flow && !async) {
    auto top = [&](int32_t f) {
      while (f != 0 && plan_->frames[static_cast<size_t>(f)].parent != 0)
        f = plan_->frames[static_cast<size_t>(f)].parent;
      return f;
    };
    std::map<int32_t, int32_t> home;  // outermost frame -> its LoopCond's task
    for (int32_t i = 0; i < n; ++i)
      if (order_[static_cast<size_t>(i)]->def->exec == ExecKind::kLoopCond &&
          plan_->frames[static_cast<size_t>(
                            exec_frame_[static_cast<size_t>(i)])]
                  .parent == 0)
        home.emplace(exec_frame_[static_cast<size_t>(i)],
                     task[static_cast<size_t>(i)]);
    for (int32_t i = 0; i < n; ++i) {
      if (!order_[static_cast<size_t>(i)]->device.empty()) continue;
      const int32_t f = top(std::max(exec_frame_[static_cast<size_t>(i)],
                                     out_frame_[static_cast<size_t>(i)]));
      auto h = home.find(f);
      if (f != 0 && h != home.end()) task[static_cast<size_t>(i)] = h->second;
    }
  }
  // Nodes that must share a task: a loop variable's Enter, Merge and
  // NextIteration, and the runtime ops of one accumulator or TensorArray
  // (a run resource each task would otherwise make its own of).  Each
  // group takes the task of its member first in topological order.
  std::vector<int32_t> group(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) group[static_cast<size_t>(i)] = i;
  auto find = [&](int32_t i) {
    while (group[static_cast<size_t>(i)] != i)
      i = group[static_cast<size_t>(i)] =
          group[static_cast<size_t>(group[static_cast<size_t>(i)])];
    return i;
  };
  std::vector<int32_t> position(static_cast<size_t>(n));
  for (size_t k = 0; k < topo_.size(); ++k)
    position[static_cast<size_t>(topo_[k])] = static_cast<int32_t>(k);
  auto unite = [&](int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    // The root is the member first in topological order.
    if (position[static_cast<size_t>(b)] < position[static_cast<size_t>(a)])
      std::swap(a, b);
    group[static_cast<size_t>(b)] = a;
  };
  std::map<std::string, int32_t> shared;  // resource name -> a member
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* node = order_[static_cast<size_t>(i)];
    if (node->def->exec == ExecKind::kNextIteration) {
      const weft_node* merge =
          node->graph->Find(FindAttr(node->attrs, "merge")->s);
      auto m = index_.find(Rep(merge));
      if (m != index_.end()) unite(m->second, i);
    }
    if (node->def->exec == ExecKind::kMerge)
      for (size_t k = 0; k < node->inputs.size(); ++k) {
        const int32_t j = producer(node, k);
        if (j >= 0 && order_[static_cast<size_t>(j)]->def->exec ==
                          ExecKind::kEnter)
          unite(j, i);
      }
    if (node->def->exec != ExecKind::kRuntime) continue;
    for (const char* attr : {"accumulator", "tensor_array"})
      if (const AttrValue* a = FindAttr(node->attrs, attr)) {
        auto [it, fresh] = shared.emplace(std::string(attr) + ":" + a->s, i);
        if (!fresh) unite(it->second, i);
      }
  }
  for (int32_t i : topo_) {
    const int32_t root = find(i);
    if (root == i) continue;
    const int32_t t = task[static_cast<size_t>(root)];
    if (!may(i, t))
      return Errorf(WEFT_UNIMPLEMENTED,
                    "node '%s' (%s) is constrained to '%s', but it belongs "
                    "with '%s' (a loop variable's Enter, Merge and "
                    "NextIteration, or the state of one accumulator or "
                    "TensorArray), which runs on %s: they must share a task",
                    order_[static_cast<size_t>(i)]->name.c_str(),
                    order_[static_cast<size_t>(i)]->op_type.c_str(),
                    order_[static_cast<size_t>(i)]->device.c_str(),
                    order_[static_cast<size_t>(root)]->name.c_str(),
                    c.TaskName(t).c_str());
    task[static_cast<size_t>(i)] = t;
  }
  // Asynchronous clusters: feeds are the running task's alone.
  if (async)
    for (int32_t i = 0; i < n; ++i) {
      if (task[static_cast<size_t>(i)] == client) continue;
      const weft_node* node = order_[static_cast<size_t>(i)];
      for (size_t k = 0; k < node->inputs.size(); ++k) {
        const weft_output& in = node->inputs[k];
        if (IsRefInput(node, k) || !IsFed(in.node, in.index)) continue;
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (%s) runs on serving task %s but reads "
                      "'%s:%d', which is fed: in an asynchronous cluster "
                      "feeds are the running task's (%s); compute the "
                      "value there, or constrain the node to it",
                      node->name.c_str(), node->op_type.c_str(),
                      c.TaskName(task[static_cast<size_t>(i)]).c_str(),
                      in.node->name.c_str(), in.index,
                      c.TaskName(client).c_str());
      }
    }
  // Values that may be dead (downstream of a Switch, before its Merge).
  // A Merge is live when one input is; an Exit leaves its loop once, live
  // unless the loop was entered with a value that may be dead (a loop in a
  // branch).
  std::vector<bool> maybe_dead(static_cast<size_t>(n), false);
  std::vector<bool> entered_dead(plan_->frames.size(), false);
  for (int32_t i : topo_) {
    const weft_node* node = order_[static_cast<size_t>(i)];
    const ExecKind kind = node->def->exec;
    bool in_dead = false;
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const int32_t j = producer(node, k);
      if (j >= 0 && maybe_dead[static_cast<size_t>(j)]) in_dead = true;
    }
    for (const weft_node* ci : node->control_inputs)
      if (maybe_dead[static_cast<size_t>(index_.at(Rep(ci)))]) in_dead = true;
    bool d = in_dead || kind == ExecKind::kSwitch;
    if (kind == ExecKind::kMerge) d = false;
    if (kind == ExecKind::kEnter && in_dead)
      entered_dead[static_cast<size_t>(out_frame_[static_cast<size_t>(i)])] =
          true;
    if (kind == ExecKind::kExit)
      d = entered_dead[static_cast<size_t>(exec_frame_[static_cast<size_t>(i)])];
    maybe_dead[static_cast<size_t>(i)] = d;
  }
  // The edges that cross tasks, found on every rank alike and kept where
  // this rank sends.  A loop-invariant Enter read on another task is
  // copied there (Partition makes the copy), so what crosses is the
  // Enter's own input, outside the loop.
  const int32_t local = c.local;
  bool dead_arrivals = false;
  auto invariant = [&](const weft_node* node) {
    return node->def->exec == ExecKind::kEnter &&
           FindAttr(node->attrs, "is_constant")->i != 0;
  };
  std::function<weft_status*(int32_t, int32_t, int32_t)> cross =
      [&](int32_t j, int32_t index, int32_t i) -> weft_status* {
    const int32_t tj = task[static_cast<size_t>(j)];
    const int32_t ti = task[static_cast<size_t>(i)];
    if (tj == ti) return nullptr;
    const weft_node* from = order_[static_cast<size_t>(j)];
    if (invariant(from)) {
      const weft_output& in = from->inputs[0];
      if (IsFed(in.node, in.index)) {
        if (async && ti != client)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "loop invariant '%s' is read on serving task %s but "
                        "enters its loop from '%s:%d', which is fed: in an "
                        "asynchronous cluster feeds are the running task's "
                        "(%s)", from->name.c_str(), c.TaskName(ti).c_str(),
                        in.node->name.c_str(), in.index,
                        c.TaskName(client).c_str());
        return nullptr;
      }
      return cross(producer(from, 0), in.index, i);
    }
    // A value of a branch arrives dead when the branch is not taken: the
    // receiving task's plan needs the executor that tracks deadness.
    if (maybe_dead[static_cast<size_t>(j)] && ti == local)
      dead_arrivals = true;
    if (tj == local) task_sends_[OutputKey{from, index}].insert(ti);
    return nullptr;
  };
  task_sends_.clear();
  token_sends_.clear();
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* node = order_[static_cast<size_t>(i)];
    const int32_t ti = task[static_cast<size_t>(i)];
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const int32_t j = producer(node, k);
      if (j >= 0) WEFT_RETURN_IF_ERROR(cross(j, node->inputs[k].index, i));
    }
    for (const weft_node* ci : node->control_inputs) {
      const int32_t j = index_.at(Rep(ci));
      if (task[static_cast<size_t>(j)] == ti) continue;
      const weft_node* from = order_[static_cast<size_t>(j)];
      if (from->def->exec == ExecKind::kEnter && !invariant(from))
        return Errorf(WEFT_UNIMPLEMENTED,
                      "the control edge from '%s' (a loop variable's Enter, "
                      "on %s) to '%s' (%s, on %s) crosses tasks: that Enter "
                      "gives a value in the first iteration only; constrain "
                      "both to one task", from->name.c_str(),
                      c.TaskName(task[static_cast<size_t>(j)]).c_str(),
                      node->name.c_str(), node->op_type.c_str(),
                      c.TaskName(ti).c_str());
      if (maybe_dead[static_cast<size_t>(j)] && ti == local)
        dead_arrivals = true;
      if (task[static_cast<size_t>(j)] == local)
        token_sends_[from].insert(ti);
    }
  }
  // Loops split over tasks: each task with nodes in a frame (or in a frame
  // inside it) runs a control loop for it, driven by the frame's LoopCond,
  // which its task sends the others every iteration.
  control_frames_.clear();
  const size_t nf = plan_->frames.size();
  std::vector<std::set<int32_t>> frame_tasks(nf), exit_tasks(nf);
  std::vector<int32_t> loop_cond(nf, -1);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t f0 = exec_frame_[static_cast<size_t>(i)];
    for (int32_t f = f0; f > 0; f = plan_->frames[static_cast<size_t>(f)].parent)
      frame_tasks[static_cast<size_t>(f)].insert(task[static_cast<size_t>(i)]);
    if (f0 == 0) continue;
    const ExecKind kind = order_[static_cast<size_t>(i)]->def->exec;
    if (kind == ExecKind::kLoopCond) {
      int32_t& lc = loop_cond[static_cast<size_t>(f0)];
      lc = lc < 0 ? i : -2;  // -2: more than one
    }
    if (kind == ExecKind::kExit)
      exit_tasks[static_cast<size_t>(f0)].insert(task[static_cast<size_t>(i)]);
  }
  for (size_t f = 1; f < nf; ++f) {
    const std::set<int32_t>& tasks = frame_tasks[f];
    if (tasks.size() < 2) continue;
    if (loop_cond[f] < 0) {
      const std::string names = TaskList(c, tasks);
      return Errorf(WEFT_UNIMPLEMENTED,
                    "%s has nodes on %s but %s: a loop split over tasks "
                    "needs exactly one LoopCond marking its predicate (as "
                    "weft_while_loop makes), which its task sends the "
                    "others every iteration; constrain the loop to one task",
                    FrameName(static_cast<int32_t>(f)).c_str(), names.c_str(),
                    loop_cond[f] == -1 ? "no LoopCond" : "several LoopConds");
    }
    const int32_t lc = loop_cond[f];
    const int32_t home = task[static_cast<size_t>(lc)];
    if (home == local)
      for (int32_t t : tasks)
        if (t != local)
          task_sends_[OutputKey{order_[static_cast<size_t>(lc)], 0}].insert(t);
    if (tasks.count(local) == 0) continue;
    // A frame instance ends (its Exits deliver) once every iteration has
    // finished: with the frame split, once every task's part has.
    ControlFrame cf;
    cf.frame = static_cast<int32_t>(f);
    cf.loop_cond = order_[static_cast<size_t>(lc)];
    for (int32_t t : exit_tasks[f])
      if (t != local) cf.done_to.push_back(t);
    if (exit_tasks[f].count(local) != 0)
      for (int32_t t : tasks)
        if (t != local) cf.done_from.push_back(t);
    control_frames_.push_back(std::move(cf));
  }
  // Fetched values go to every rank (each rank's run returns them); in an
  // asynchronous cluster, to the running task alone.
  for (const weft_output& f : *req_.fetches) {
    if (IsFed(f.node, f.index)) continue;
    const int32_t j = index_.at(Rep(f.node));
    if (task[static_cast<size_t>(j)] != local) continue;
    for (int32_t r = 0; r < c.size(); ++r)
      if (r != local && (!async || r == client))
        task_sends_[OutputKey{order_[static_cast<size_t>(j)], f.index}]
            .insert(r);
  }
  std::set<int32_t> peers;
  for (int32_t t : task)
    if (t != local) peers.insert(t);
  plan_->task_peers.assign(peers.begin(), peers.end());
  if (dead_arrivals && !plan_->control_flow) {
    plan_->control_flow = true;  // the root frame alone
    plan_->frames.assign(1, PlanFrame{});
  }
  // Keep this rank's nodes.
  std::vector<int32_t> renumber(static_cast<size_t>(n), -1);
  std::vector<const weft_node*> kept;
  std::vector<int32_t> exec_frame, out_frame;
  remote_.clear();
  remote_frames_.clear();
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* node = order_[static_cast<size_t>(i)];
    if (task[static_cast<size_t>(i)] != local) {
      remote_[node] = task[static_cast<size_t>(i)];
      remote_frames_[node] = {exec_frame_[static_cast<size_t>(i)],
                              out_frame_[static_cast<size_t>(i)]};
      continue;
    }
    renumber[static_cast<size_t>(i)] = static_cast<int32_t>(kept.size());
    kept.push_back(node);
    exec_frame.push_back(exec_frame_[static_cast<size_t>(i)]);
    out_frame.push_back(out_frame_[static_cast<size_t>(i)]);
  }
  std::vector<int32_t> topo;
  for (int32_t i : topo_)
    if (renumber[static_cast<size_t>(i)] >= 0)
      topo.push_back(renumber[static_cast<size_t>(i)]);
  for (PlanFrame& f : plan_->frames) {
    std::vector<int32_t> exits;
    for (int32_t e : f.exits)
      if (renumber[static_cast<size_t>(e)] >= 0)
        exits.push_back(renumber[static_cast<size_t>(e)]);
    f.exits = std::move(exits);
  }
  order_ = std::move(kept);
  topo_ = std::move(topo);
  exec_frame_ = std::move(exec_frame);
  out_frame_ = std::move(out_frame);
  index_.clear();
  for (size_t i = 0; i < order_.size(); ++i)
    index_.emplace(order_[i], static_cast<int32_t>(i));
  return nullptr;
}

// ---- The transfers (called by Partition) ----------------------------------

weft_status* Planner::TaskHost(Device** out) {
  if (task_host_ == nullptr)
    for (Device* d : allowed_)
      if (d->host_memory()) {
        task_host_ = d;
        break;
      }
  if (task_host_ == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "values cross tasks, which needs a device with host memory "
                  "(the CPU) among the session's devices (%s)",
                  Names(allowed_).c_str());
  *out = task_host_;
  return nullptr;
}

// A TaskSend or TaskRecv node for `edge` ("producer:index>rank"), with the
// attributes every rank computes alike.
weft_node* Planner::TaskNode(const OpDef* def, const std::string& name,
                                   const std::string& edge, int32_t peer,
                                   const std::string& value) {
  weft_node* n = SyntheticNode(def, name);
  auto str = [&](const char* key, const std::string& v) {
    AttrValue a;
    a.type = AttrType::kString;
    a.s = v;
    SetAttr(&n->attrs, key, a);
  };
  str("plan", req_.name);
  str("edge", edge);
  str("peer_name", req_.cluster->TaskName(peer));
  str("value", value);
  SetAttr(&n->attrs, "peer", IntValue(peer));
  return n;
}

namespace {

// float32 values cross tasks narrowed when the session asks and the host
// device has both Casts (every rank's CPU plugin does alike).
weft_dtype WireDtype(int32_t precision, weft_dtype dtype, Device* host,
                     const KernelReg** narrow, const KernelReg** widen) {
  *narrow = *widen = nullptr;
  if (precision == WEFT_TRANSFER_EXACT || dtype != WEFT_FLOAT32) return dtype;
  const weft_dtype wire =
      precision == WEFT_TRANSFER_FLOAT16 ? WEFT_FLOAT16 : WEFT_BFLOAT16;
  *narrow = Registry::Get().FindKernel("Cast", host,
                                       CastAttrs(WEFT_FLOAT32, wire));
  *widen = Registry::Get().FindKernel("Cast", host,
                                      CastAttrs(wire, WEFT_FLOAT32));
  return *narrow && *widen ? wire : dtype;
}

std::string EdgeName(const std::string& value, int32_t dest) {
  return value + ">" + std::to_string(dest);
}

}  // namespace

int32_t Planner::AddTaskRecv(Device* host, int32_t from,
                             const std::string& value, weft_dtype dtype,
                             const ShapeInfo& shape, int32_t frame,
                             std::string reason) {
  weft_node* recv =
      TaskNode(distributed::TaskRecvDef(), value + "/_recv",
               EdgeName(value, req_.cluster->local), from, value);
  recv->output_dtypes = {dtype};
  recv->output_shapes = {shape};
  PlanNode p;
  p.node = recv;
  p.kind = ExecKind::kRuntime;
  p.device = host;
  p.num_outputs = 1;
  p.frame = p.out_frame = frame;
  p.reason = std::move(reason);
  const int32_t id = NewNode(std::move(p));
  AddSlot(id, host, dtype, shape, value);
  task_recvs_.push_back(id);
  return id;
}

int32_t Planner::AddTaskCast(Device* host, int32_t in_slot, weft_dtype to,
                             const KernelReg* kernel, const std::string& name,
                             std::string reason) {
  const ShapeInfo shape = slot_shape_[in_slot];
  PlanNode c;
  c.node = CastNode(name, slot_dtype_[in_slot], to, shape);
  c.kind = ExecKind::kKernel;
  c.kernel = kernel;
  c.device = host;
  c.num_outputs = 1;
  c.input_slots = {in_slot};
  c.frame = c.out_frame = slot_frame_[in_slot];
  c.reason = std::move(reason);
  const int32_t id = NewNode(std::move(c));
  AddSlot(id, host, to, shape, slot_name_[in_slot]);
  return plan_->nodes[id].output_base;
}

weft_status* Planner::RemoteSlot(const weft_output& o, int32_t* slot) {
  const weft_node* producer = Rep(o.node);
  const OutputKey key{producer, o.index};
  auto it = remote_slot_.find(key);
  if (it != remote_slot_.end()) {
    *slot = it->second;
    return nullptr;
  }
  Device* host = nullptr;
  WEFT_RETURN_IF_ERROR(TaskHost(&host));
  const int32_t from = remote_.at(producer);
  const auto [exec_frame, out_frame] = remote_frames_.at(producer);
  const weft_dtype dtype = producer->output_dtypes[o.index];
  const std::string value = producer->name + ":" + std::to_string(o.index);
  if (producer->def->exec == ExecKind::kEnter &&
      FindAttr(producer->attrs, "is_constant")->i != 0) {
    // A loop invariant entered on another task: entered here too, from
    // its input (SplitTasks sends that instead), so it crosses once per
    // entry of the frame, not once per iteration.
    int32_t in = -1;
    WEFT_RETURN_IF_ERROR(SlotOf(producer->inputs[0], &in));
    PlanNode p;
    p.node = producer;
    p.kind = ExecKind::kEnter;
    p.device = slot_device_[in] != nullptr ? slot_device_[in] : host;
    p.input_slots = {in};
    p.num_outputs = 1;
    p.frame = exec_frame;
    p.out_frame = out_frame;
    p.reason = "a copy of the loop invariant's Enter on " +
               req_.cluster->TaskName(from) + ", for this task's nodes";
    Device* d = p.device;
    const int32_t id = NewNode(std::move(p));
    AddSlot(id, d, slot_dtype_[in], slot_shape_[in], value);
    *slot = plan_->nodes[id].output_base;
    remote_slot_.emplace(key, *slot);
    return nullptr;
  }
  const KernelReg* narrow = nullptr;
  const KernelReg* widen = nullptr;
  const weft_dtype wire =
      WireDtype(opts_.transfer_precision, dtype, host, &narrow, &widen);
  const int32_t id =
      AddTaskRecv(host, from, value, wire, producer->output_shapes[o.index],
                  out_frame, "from " + req_.cluster->TaskName(from));
  int32_t s = plan_->nodes[id].output_base;
  if (wire != dtype)
    s = AddTaskCast(host, s, dtype, widen, value + "/_widen",
                    "widens a value from " + req_.cluster->TaskName(from));
  remote_slot_.emplace(key, s);
  *slot = s;
  return nullptr;
}

weft_status* Planner::RemoteToken(const weft_node* n, int32_t* node) {
  n = Rep(n);
  auto it = remote_token_.find(n);
  if (it != remote_token_.end()) {
    *node = it->second;
    return nullptr;
  }
  Device* host = nullptr;
  WEFT_RETURN_IF_ERROR(TaskHost(&host));
  const int32_t from = remote_.at(n);
  *node = AddTaskRecv(host, from, "^" + n->name, WEFT_BOOL, ShapeInfo::Of({0}),
                      remote_frames_.at(n).second,
                      "control edge from " + req_.cluster->TaskName(from));
  remote_token_.emplace(n, *node);
  return nullptr;
}

void Planner::AddTaskSend(Device* host, const std::string& value,
                          int32_t dest, int32_t frame, int32_t in_slot,
                          int32_t after, std::string reason) {
  PlanNode p;
  p.node = TaskNode(distributed::TaskSendDef(),
                    value + "/_send" + std::to_string(dest),
                    EdgeName(value, dest), dest, value);
  p.kind = ExecKind::kRuntime;
  p.device = host;
  if (in_slot >= 0) p.input_slots = {in_slot};
  if (after >= 0) p.control_preds = {after};
  p.frame = p.out_frame = frame;
  p.reason = std::move(reason);
  NewNode(std::move(p));
}

weft_status* Planner::AddTaskSends() {
  Device* host = nullptr;
  WEFT_RETURN_IF_ERROR(TaskHost(&host));
  for (const auto& [key, dests] : task_sends_) {
    const weft_node* producer = key.first;
    int32_t s = plan_->nodes[index_.at(producer)].output_base + key.second;
    const weft_dtype dtype = slot_dtype_[s];
    const ShapeInfo shape = slot_shape_[s];
    const std::string value = slot_name_[s];
    if (!SameMemory(slot_device_[s], host))
      s = TransferTo(s, slot_device_[s], dtype, shape, value, host);
    const KernelReg* narrow = nullptr;
    const KernelReg* widen = nullptr;
    const weft_dtype wire =
        WireDtype(opts_.transfer_precision, dtype, host, &narrow, &widen);
    if (wire != dtype)
      s = AddTaskCast(host, s, wire, narrow, value + "/_narrow",
                      "narrows a value for other tasks");
    for (int32_t dest : dests)
      AddTaskSend(host, value, dest, slot_frame_[s], s, -1,
                  "to " + req_.cluster->TaskName(dest));
  }
  for (const auto& [n, dests] : token_sends_) {
    const int32_t from = index_.at(n);
    for (int32_t dest : dests)
      AddTaskSend(host, "^" + n->name, dest, plan_->nodes[from].out_frame, -1,
                  from, "control edge to " + req_.cluster->TaskName(dest));
  }
  return nullptr;
}

weft_node* Planner::FlowNode(const char* op, const std::string& name,
                             std::vector<weft_dtype> dtypes) {
  weft_node* n = SyntheticNode(OpRegistry::Global().Find(op), name);
  n->output_shapes.assign(dtypes.size(), ShapeInfo::Of({}));
  n->output_dtypes = std::move(dtypes);
  return n;
}

// For each frame this task shares with others: Enter (from a scalar in the
// root, or from the parent frame's control Merge) -> Merge -> Switch on the
// frame's LoopCond (here, or received from its task) -> NextIteration ->
// the Merge.  Its Merge fires once as each iteration starts, whatever the
// loop's own Merges do here (perhaps nothing: this task may hold none of
// the loop variables), and every TaskRecv in the frame waits for it.
weft_status* Planner::AddControlLoops() {
  Device* host = nullptr;
  if (!control_frames_.empty()) WEFT_RETURN_IF_ERROR(TaskHost(&host));
  std::map<int32_t, int32_t> merge_of;  // frame -> its control Merge
  const int32_t n_graph = static_cast<int32_t>(order_.size());
  for (const ControlFrame& cf : control_frames_) {
    const int32_t f = cf.frame;
    const PlanFrame frame = plan_->frames[static_cast<size_t>(f)];
    const std::string base =
        "_control" + std::to_string(f) + "/" + frame.name + "/";
    auto add = [&](PlanNode p, int32_t frame_of, int32_t out_frame) {
      p.device = host;
      p.num_outputs = static_cast<int32_t>(p.node->output_dtypes.size());
      p.frame = frame_of;
      p.out_frame = out_frame;
      p.reason = "runs the iterations of " + FrameName(f) + " on this task";
      const weft_node* node = p.node;
      const int32_t id = NewNode(std::move(p));
      for (int32_t o = 0; o < plan_->nodes[id].num_outputs; ++o)
        AddSlot(id, host, node->output_dtypes[o], node->output_shapes[o],
                node->name + ":" + std::to_string(o));
      return id;
    };
    int32_t init = -1;
    if (frame.parent == 0) {
      PlanNode c;
      c.node = FlowNode("Const", base + "init", {WEFT_INT32});
      c.kind = ExecKind::kConst;
      WEFT_RETURN_IF_ERROR(ScalarOn(host, 0, &c.const_value));
      init = plan_->nodes[add(std::move(c), 0, 0)].output_base;
    } else {
      auto parent = merge_of.find(frame.parent);
      if (parent == merge_of.end())
        return Errorf(WEFT_INTERNAL, "%s has no control loop for its parent "
                      "%s", FrameName(f).c_str(),
                      FrameName(frame.parent).c_str());
      init = plan_->nodes[parent->second].output_base;
    }
    PlanNode e;
    weft_node* enter = FlowNode("Enter", base + "enter", {WEFT_INT32});
    AttrValue name;
    name.type = AttrType::kString;
    name.s = frame.name;
    SetAttr(&enter->attrs, "frame_name", name);
    AttrValue constant = IntValue(0);
    constant.type = AttrType::kBool;
    SetAttr(&enter->attrs, "is_constant", constant);
    SetAttr(&enter->attrs, "parallel_iterations",
            IntValue(frame.parallel_iterations));
    e.node = enter;
    e.kind = ExecKind::kEnter;
    e.input_slots = {init};
    const int32_t enter_id = add(std::move(e), frame.parent, f);
    PlanNode m;
    m.node = FlowNode("Merge", base + "merge", {WEFT_INT32, WEFT_INT32});
    m.kind = ExecKind::kMerge;
    m.merge_indices.resize(2);
    for (int32_t k = 0; k < 2; ++k)
      WEFT_RETURN_IF_ERROR(ScalarOn(host, k, &m.merge_indices[k]));
    const int32_t merge = add(std::move(m), f, f);
    merge_of[f] = merge;
    int32_t pred = -1;
    WEFT_RETURN_IF_ERROR(SlotOf(
        weft_output{const_cast<weft_node*>(cf.loop_cond), 0}, &pred));
    PlanNode sw;
    sw.node = FlowNode("Switch", base + "switch", {WEFT_INT32, WEFT_INT32});
    sw.kind = ExecKind::kSwitch;
    sw.input_slots = {plan_->nodes[merge].output_base, pred};
    const int32_t switch_id = add(std::move(sw), f, f);
    PlanNode next;
    next.node = FlowNode("NextIteration", base + "next", {WEFT_INT32});
    next.kind = ExecKind::kNextIteration;
    next.input_slots = {plan_->nodes[switch_id].output_base + 1};
    const int32_t next_id = add(std::move(next), f, f);
    plan_->nodes[merge].input_slots = {plan_->nodes[enter_id].output_base,
                                       plan_->nodes[next_id].output_base};
    if (cf.done_to.empty() && cf.done_from.empty()) continue;
    // Done tokens: the control loop's Exit delivers when this task's part
    // of the frame instance has finished; it tells the tasks with Exits.
    // Here, what reads an Exit of the frame waits for the others' tokens.
    PlanNode x;
    x.node = FlowNode("Exit", base + "exit", {WEFT_INT32});
    x.kind = ExecKind::kExit;
    x.input_slots = {plan_->nodes[switch_id].output_base};
    const int32_t exit_id = add(std::move(x), f, frame.parent);
    plan_->frames[static_cast<size_t>(f)].exits.push_back(exit_id);
    const std::string done = "^" + frame.name + "/_done" + std::to_string(f);
    for (int32_t dest : cf.done_to)
      AddTaskSend(host, done, dest, frame.parent, -1, exit_id,
                  "tells " + req_.cluster->TaskName(dest) + " that " +
                      FrameName(f) + " has finished here");
    std::vector<int32_t> tokens;
    for (int32_t from : cf.done_from)
      tokens.push_back(AddTaskRecv(
          host, from, done, WEFT_BOOL, ShapeInfo::Of({0}), frame.parent,
          "hears that " + FrameName(f) + " has finished on " +
              req_.cluster->TaskName(from)));
    if (tokens.empty()) continue;
    std::set<int32_t> exits;  // the frame's own Exits here
    for (int32_t e : frame.exits) exits.insert(e);
    for (size_t q = 0; q < plan_->nodes.size(); ++q) {
      PlanNode& p = plan_->nodes[q];
      bool reads = false;
      for (int32_t s : p.input_slots)
        if (s >= 0 && exits.count(slot_producer_[s])) reads = true;
      for (int32_t c : p.control_preds)
        if (exits.count(c)) reads = true;
      if (static_cast<int32_t>(q) < n_graph)
        for (const weft_node* c : p.node->control_inputs)
          if (!Remote(c) && exits.count(index_.at(Rep(c)))) reads = true;
      if (reads)
        p.control_preds.insert(p.control_preds.end(), tokens.begin(),
                               tokens.end());
    }
  }
  for (int32_t id : task_recvs_) {
    PlanNode& p = plan_->nodes[static_cast<size_t>(id)];
    if (p.frame == 0) continue;
    auto m = merge_of.find(p.frame);
    if (m == merge_of.end())
      return Errorf(WEFT_INTERNAL, "node '%s' receives a value in %s, which "
                    "has no control loop on this task", p.node->name.c_str(),
                    FrameName(p.frame).c_str());
    p.control_preds.push_back(m->second);
  }
  return nullptr;
}

}  // namespace planning
}  // namespace weft
