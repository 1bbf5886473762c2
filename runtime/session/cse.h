// Common-subexpression elimination over the nodes one plan needs.
//
// Two nodes merge when they compute the same thing: same op, same
// attributes, same device constraint, the same inputs (after earlier merges;
// in either order for commutative ops) and the same control inputs (as
// sets).  Nodes that are stateful (variables, Assign, random ops...),
// placeholders, NoOps, and nodes with an output that is fed are never
// merged: a fed output is a value of its own even when its node looks like
// another.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"

namespace weft {

struct CseResult {
  // Every node of the input that was merged, mapped to the node kept in its
  // place (which maps to nothing: representatives are final).
  std::unordered_map<const weft_node*, const weft_node*> replaced;
  // The merges in a stable order (by the removed node's id), for reports.
  std::vector<std::pair<const weft_node*, const weft_node*>> merges;
};

// `nodes`: the nodes a plan needs, in any order, closed under inputs that
// are not fed (every input producer not fed is in `nodes`).  `is_fed(n, i)`
// says whether output i of n is replaced by a feed.
CseResult EliminateCommonSubexpressions(
    const std::vector<const weft_node*>& nodes,
    const std::function<bool(const weft_node*, int32_t)>& is_fed);

}  // namespace weft
