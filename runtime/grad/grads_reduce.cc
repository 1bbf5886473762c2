// Gradients of the reductions (Sum, Mean, Prod, Max, Min).
//
// Each spreads the gradient of the reduced value back over the elements it
// came from.  That needs the input's shape at run time (a batch dim may be
// unknown when the graph is built), so the spreading is done by the ops
// SumGrad, MeanGrad and ProdGrad (runtime/ops/gradient_helpers_reduce_nn.cc), which take the forward
// input for its shape and the forward op's `axes` and `keep_dims`.
//
// Max and Min: every element equal to the result shares the gradient
// equally (TensorFlow's rule), so two tied elements get half each, which is
// also what a central difference measures there.
#include "grad/grad_builder.h"

namespace weft {
namespace {

// `op` over `inputs` with the forward reduction's axes and keep_dims.
weft_output WithAxes(GradBuilder& g, const char* op,
                     std::initializer_list<weft_output> inputs) {
  weft_op_builder* b = g.Begin(op, inputs);
  g.CopyAttrs(b, {"axes", "keep_dims"});
  return g.Finish(b);
}

// The gradient of `op` is `grad_op(dy, x)` (spreading it back over x) or,
// for the spreading ops themselves, which are linear in dy, `grad_op(dy)`
// (reducing it again).
void WithAxesGradient(const char* op, const char* grad_op, bool spread) {
  std::string name = grad_op;
  RegisterGradientWith(op, [name, spread](GradBuilder& g) {
    g.Set(0, spread ? WithAxes(g, name.c_str(), {g.dy(), g.x(0)})
                    : WithAxes(g, name.c_str(), {g.dy()}));
  });
}

// Max, Min: dx = [x == y] * dy / (number of x equal to y), per reduction.
void ExtremumGrad(GradBuilder& g) {
  weft_output x = g.x(0);
  weft_output hit = g.Apply("Equal", {x, WithAxes(g, "SumGrad", {g.y(), x})});
  weft_op_builder* b = g.Begin("Cast", {hit});
  weft_op_set_attr_dtype(b, "DstT", GradBuilder::Dtype(x));
  weft_output hits = g.Finish(b);
  weft_output share = g.Apply("Div", {g.dy(), WithAxes(g, "Sum", {hits})});
  g.Set(0, g.Apply("Mul", {hits, WithAxes(g, "SumGrad", {share, x})}));
}

}  // namespace

void RegisterReduceGradients() {
  WithAxesGradient("Sum", "SumGrad", true);
  WithAxesGradient("Mean", "MeanGrad", true);
  WithAxesGradient("Prod", "ProdGrad", true);
  RegisterGradientWith("Max", ExtremumGrad);
  RegisterGradientWith("Min", ExtremumGrad);
  WithAxesGradient("SumGrad", "Sum", false);
  WithAxesGradient("MeanGrad", "Mean", false);
  // Second derivatives of Prod are not provided.
  RegisterNotDifferentiable("ProdGrad");
}

}  // namespace weft
