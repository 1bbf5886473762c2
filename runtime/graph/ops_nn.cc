// Neural-network activations and normalisations.
#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {

OpDef UnaryOp(const char* name, const std::vector<weft_dtype>& types,
              const char* summary);

void RegisterNnOps(OpRegistry* r) {
  r->Add(UnaryOp("Relu", kNumericTypes, "max(x, 0)."));
  r->Add(UnaryOp("Sigmoid", kFloatTypes, "1 / (1 + e^-x)."));
  r->Add(UnaryOp("Tanh", kFloatTypes, "Hyperbolic tangent."));
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
