// Neural-network ops: softmax, losses, convolution, pooling, normalisation.
#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {

void RegisterNnOps(OpRegistry* r) {
  OpDef d = UnaryOp("Softmax", kFloatTypes, "Softmax over the last axis.");
  d.input_names = {"logits"};
  auto unary = d.infer;
  d.infer = [unary](InferenceContext& c) -> weft_status* {
    if (c.input_shapes[0].rank == 0)
      return c.Fail("Softmax needs rank >= 1, got a scalar");
    return unary(c);
  };
  r->Add(std::move(d));
}

}  // namespace weft
