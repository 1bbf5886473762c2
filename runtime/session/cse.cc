#include "session/cse.h"

namespace weft {

CseResult EliminateCommonSubexpressions(
    const std::vector<const weft_node*>& nodes,
    const std::function<bool(const weft_node*, int32_t)>& is_fed) {
  (void)nodes;
  (void)is_fed;
  return {};
}

}  // namespace weft
