// Random ops: seeded, reproducible, never merged.
#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {

void RegisterRandomOps(OpRegistry* r) { (void)r; }

}  // namespace weft
