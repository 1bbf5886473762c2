// Shapes and data movement: Rank, Shape, Reshape, Concat, Slice, ...
#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {

void RegisterArrayOps(OpRegistry* r) { (void)r; }

}  // namespace weft
