// Gradients through conditionals (the gradient of a Merge is a Switch on
// the same predicate, and of a Switch a Merge), and the loop primitives'
// status.
//
// Through a cond, the gradient of the untaken branch is dead, exactly like
// its forward values; it becomes zeros where it leaves the branch (the
// Switch that brought a value in), so no dead value escapes the cond.
#include "grad/grad_builder.h"
#include "ops/registry.h"

namespace weft {
namespace {

// Gradients through while loops need the forward values of every
// iteration, saved and read back in reverse by a backward loop; that is not
// built yet, and a loop must not silently pass no gradient.
weft_status* LoopGradientMissing(weft_gradient_context* ctx) {
  return Errorf(WEFT_UNIMPLEMENTED,
                "gradients through while loops are not implemented yet: "
                "node '%s' (%s) is part of a loop between the xs and the ys",
                ctx->node->name.c_str(), ctx->node->op_type.c_str());
}

bool InLoop(const weft_node* sw) {
  return sw->inputs[1].node->def->exec == ExecKind::kLoopCond;
}

}  // namespace

void RegisterControlFlowGradients() {
  RegisterGradientWith("Merge", [](GradBuilder& g) {
    weft_output pred;
    if (!g.node()->graph->CondPredicate(g.node(), &pred)) {
      g.Fail(LoopGradientMissing(g.ctx()));
      return;
    }
    weft_output dy = g.dy(0);
    if (dy.node == nullptr) return;  // only value_index was used
    // Input 0 came from the then branch (Switch output 1), input 1 from
    // the else branch (output 0).
    weft_output sw = g.Apply("Switch", {dy, pred});
    for (int k = 0; k < 2; ++k)
      g.Set(k, weft_output{sw.node, k == 0 ? 1 : 0});
  });
  RegisterGradientWith("Switch", [](GradBuilder& g) {
    if (InLoop(g.node())) {
      g.Fail(LoopGradientMissing(g.ctx()));
      return;
    }
    weft_output d_false = g.dy(0), d_true = g.dy(1);
    if (d_false.node == nullptr || d_true.node == nullptr) {
      // Zeros stand in on the side no gradient reached, switched so they
      // are live exactly when that side was taken.
      int missing = d_false.node == nullptr ? 0 : 1;
      weft_output zeros = g.Apply("ZerosLike", {g.x(0)});
      weft_output sw = g.Apply("Switch", {zeros, g.x(1)});
      (missing == 0 ? d_false : d_true) = weft_output{sw.node, missing};
    }
    g.Set(0, g.Apply("Merge", {d_false, d_true}));
  });
  RegisterGradient("Enter", LoopGradientMissing);
  RegisterGradient("Exit", LoopGradientMissing);
  RegisterGradient("NextIteration", LoopGradientMissing);
  RegisterNotDifferentiable("LoopCond");
}

}  // namespace weft
