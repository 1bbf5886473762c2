// The gradient of a while loop: a backward loop that runs as many
// iterations as the forward one did, counting down, with the forward
// values its body needs saved per iteration (accumulators) and read back
// in reverse.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace weft {

// dy: per caller's variable, the gradient arriving at its Exit (null:
// none).  Sets d_init[i] for each float variable (null for the others) and
// d_invariants[j] for each float loop invariant (null for the others).
weft_status* BuildWhileGradient(weft_graph* g, const WhileLoopInfo& loop,
                                const std::vector<weft_output>& dy,
                                const std::string& scope,
                                std::vector<weft_output>* d_init,
                                std::vector<weft_output>* d_invariants);

// Is `loop`'s body being differentiated on this thread (its nodes are then
// ordinary nodes to the gradient walk)?
bool IsBeingDifferentiated(const WhileLoopInfo* loop);

}  // namespace weft
