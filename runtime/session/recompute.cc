// Recomputation (weft_session_options.recompute): memory by choice.  A
// training step holds every value the gradient reads from the forward pass
// until the backward pass reads it.  Some of those values are cheap to
// compute again from values the backward pass keeps anyway: a Sigmoid of a
// value that a Mul's gradient also reads, a max-pool of activations its own
// gradient reads.  For such a value X the planner makes a copy X' of X's
// node (same op, attributes and inputs) that waits, by a control edge, for
// the latest input of X's first late gradient reader, and the late readers
// read X' instead.  X then dies after its forward readers, and X' lives only
// from just before the backward pass needs it.
//
// WEFT_RECOMPUTE_CHEAP recomputes X when
//  - X is a kernel of the forward pass (not made by weft_gradients), not
//    stateful (so never a random op), with one output of known shape and
//    at least kMinBytes, no control inputs, not fetched, not a target and
//    not a view (Reshape and the like alias their input);
//  - the cost model calls it cheap: at most kCheapFlops operations per
//    output element (element-wise ops, BiasAdd, pooling; never MatMul or a
//    convolution);
//  - a forward node reads X, and so does a gradient node whose latest other
//    input lies deeper (longest path from the sources) than every early
//    reader of X: that reader cannot run until X's forward readers could
//    have finished ("late");
//  - every input of X is a constant or is read by a gradient node deeper
//    than the gate, so the backward pass keeps it anyway; variables (which
//    an update may change before the backward pass runs), values recomputed
//    themselves and values no late node reads rule X out;
//  - no early reader of X is a view that would keep its buffer alive.
// Plans with control flow are left alone.  Each recomputation is listed in
// the plan (run metadata: weft_run_metadata_recomputed).
//
// The new edges keep the graph acyclic: the gate of X' comes before X's
// first late reader in topological order, X's inputs before X, and X' feeds
// only late readers, so X' can take a place just before its first late
// reader in that order.
#include <algorithm>

#include "session/planner.h"
#include "weft/session.h"

namespace weft {
namespace planning {

namespace {

constexpr uint64_t kMinBytes = 64 << 10;
constexpr double kCheapFlops = 8;

bool IsView(const weft_node* n) {
  if (n->def->exec == ExecKind::kForward) return true;
  static const char* const kViews[] = {"Reshape", "ReshapeLike", "ExpandDims",
                                       "Squeeze", "Identity"};
  for (const char* v : kViews)
    if (n->op_type == v) return true;
  return false;
}

}  // namespace

bool Planner::Recompute() {
  const size_t n = order_.size();
  for (const weft_node* node : order_)
    if (IsControlFlow(node->def->exec)) return false;

  // Longest path from a source (level) and place in topo_, per node; the
  // readers of each value (feeds by their own key); nodes read otherwise
  // than by data (control edges, keep-alive, fetches, targets).
  struct Reader {
    int32_t node;
    size_t input;
  };
  std::vector<int32_t> level(n, 0), pos(n, 0);
  std::unordered_map<OutputKey, std::vector<Reader>, OutputKeyHash> readers;
  std::unordered_set<const weft_node*> pinned;
  auto key = [this](const weft_output& in) {
    return IsFed(in.node, in.index) ? OutputKey{in.node, in.index}
                                    : OutputKey{Rep(in.node), in.index};
  };
  for (size_t h = 0; h < topo_.size(); ++h) {
    const int32_t i = topo_[h];
    pos[i] = static_cast<int32_t>(h);
    const weft_node* node = order_[i];
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      if (IsRefInput(node, k)) continue;
      const weft_output& in = node->inputs[k];
      readers[key(in)].push_back({i, k});
      if (!IsFed(in.node, in.index))
        level[i] = std::max(level[i], level[index_.at(Rep(in.node))] + 1);
    }
    for (const weft_node* c : node->control_inputs) {
      pinned.insert(Rep(c));
      level[i] = std::max(level[i], level[index_.at(Rep(c))] + 1);
    }
    for (const weft_node* k : node->keep_alive) pinned.insert(Rep(k));
  }
  for (const weft_output& f : *req_.fetches)
    if (!IsFed(f.node, f.index)) pinned.insert(Rep(f.node));
  for (const weft_node* t : *req_.targets) pinned.insert(Rep(t));

  // The input of a gradient reader that it waits for longest (other than
  // the value `x` it reads), or -1 when it has none: then it may run as
  // soon as `x` exists, and counts as an early reader.
  auto gate_of = [&](int32_t r, const weft_node* x) {
    const weft_node* node = order_[r];
    int32_t gate = -1;
    auto consider = [&](const weft_node* p) {
      if (p == x) return;
      int32_t j = index_.at(p);
      if (gate < 0 || level[j] > level[gate]) gate = j;
    };
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const weft_output& in = node->inputs[k];
      if (!IsRefInput(node, k) && !IsFed(in.node, in.index))
        consider(Rep(in.node));
    }
    for (const weft_node* c : node->control_inputs) consider(Rep(c));
    return gate;
  };

  struct Decision {
    int32_t x, gate;
    std::vector<Reader> late;
  };
  std::vector<Decision> decisions;
  std::unordered_set<const weft_node*> recomputed;
  // Is input `in` of `x` alive anyway once the gate (at `gate_level`) has
  // run?
  auto kept = [&](const weft_output& in, int32_t x, int32_t gate_level) {
    if (!IsFed(in.node, in.index)) {
      const weft_node* p = Rep(in.node);
      if (p->def->exec == ExecKind::kConst) return true;
      if (p->def->exec != ExecKind::kKernel || p->def->stateful ||
          recomputed.count(p))
        return false;
    }
    for (const Reader& r : readers[key(in)])
      if (r.node != x && order_[r.node]->gradient &&
          level[r.node] > gate_level)
        return true;
    return false;
  };

  for (int32_t x : topo_) {
    const weft_node* node = order_[x];
    if (node->gradient || node->def->exec != ExecKind::kKernel ||
        node->def->stateful || node->output_dtypes.size() != 1 ||
        !node->control_inputs.empty() || pinned.count(node) ||
        IsFed(node, 0) || IsView(node) ||
        !node->output_shapes[0].fully_known() ||
        StaticBytes(node, 0) < kMinBytes ||
        FlopsPerOutputElement(node) > kCheapFlops)
      continue;
    auto found = readers.find(OutputKey{node, 0});
    if (found == readers.end()) continue;
    const std::vector<Reader>& all = found->second;
    // Early readers: the forward pass's, and gradient nodes that could run
    // at once or whose gate lies no deeper than an early reader (until no
    // more move); late: the other gradient readers.
    std::vector<int32_t> gates(all.size(), -1);
    bool forward_reader = false;
    for (size_t r = 0; r < all.size(); ++r) {
      const weft_node* reader = order_[all[r].node];
      forward_reader |= !reader->gradient;
      if (reader->gradient) gates[r] = gate_of(all[r].node, node);
    }
    if (!forward_reader) continue;
    std::vector<bool> early(all.size());
    int32_t early_level = -1;
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t r = 0; r < all.size(); ++r)
        if (!early[r] && (gates[r] < 0 || level[gates[r]] <= early_level)) {
          early[r] = true;
          early_level = std::max(early_level, level[all[r].node]);
          moved = true;
        }
    }
    std::vector<Reader> late;
    int32_t first = -1;  // the late reader first in topological order
    for (size_t r = 0; r < all.size(); ++r) {
      if (early[r]) continue;
      late.push_back(all[r]);
      if (first < 0 || pos[all[r].node] < pos[all[first].node])
        first = static_cast<int32_t>(r);
    }
    if (late.empty()) continue;
    const int32_t gate = gates[first];
    bool ok = true;
    for (size_t r = 0; r < all.size(); ++r)
      if (early[r] && IsView(order_[all[r].node])) ok = false;
    for (size_t k = 0; ok && k < node->inputs.size(); ++k)
      ok = kept(node->inputs[k], x, level[gate]);
    if (!ok) continue;
    recomputed.insert(node);
    decisions.push_back({x, gate, std::move(late)});
  }
  if (decisions.empty()) return false;

  // Rewrite: the copies, and a copy of each late reader that reads them.
  // The readers keep their names (metadata and fetches find them by the
  // original node, through Rep).
  std::unordered_map<const weft_node*, weft_node*> copies;
  for (const Decision& d : decisions) {
    const weft_node* x = order_[d.x];
    auto again = std::make_unique<weft_node>(*x);
    again->name = x->name + "/recomputed";
    again->control_inputs = {const_cast<weft_node*>(order_[d.gate])};
    again->keep_alive.clear();
    again->gradient = true;
    std::string by;
    for (const Reader& r : d.late) {
      const weft_node* reader = order_[r.node];
      weft_node*& copy = copies[reader];
      if (copy == nullptr) {
        auto c = std::make_unique<weft_node>(*reader);
        copy = c.get();
        rewired_[reader] = copy;
        plan_->synthetic.push_back(std::move(c));
      }
      copy->inputs[r.input] = weft_output{again.get(), 0};
      if (by.find("'" + reader->name + "'") == std::string::npos)
        by += (by.empty() ? "'" : ", '") + reader->name + "'";
    }
    plan_->recomputed.push_back(
        {again->name, x->op_type + " '" + x->name + "', for " + by});
    plan_->synthetic.push_back(std::move(again));
  }
  return true;
}

}  // namespace planning
}  // namespace weft
