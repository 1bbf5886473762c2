// Gradients of the element-wise ops (and Dropout, an element-wise mask).
// Binary ops broadcast, so each input's gradient is summed back to that
// input's run-time shape (GradBuilder::SumTo).
#include "grad/grad_builder.h"

namespace weft {
namespace {

bool IsFloat(weft_dtype t) {
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64 || t == WEFT_FLOAT16 ||
         t == WEFT_BFLOAT16;
}

// d max(x, y): dy to x where `keep_x` (x >= y for Maximum, x <= y for
// Minimum; ties go to x, as TensorFlow), the rest to y.
void SelectBetween(GradBuilder& g, const char* keep_x) {
  weft_output mask = g.Apply(keep_x, {g.x(0), g.x(1)});
  weft_output zeros = g.Apply("ZerosLike", {g.dy()});
  g.Set(0, g.SumTo(g.Apply("Select", {mask, g.dy(), zeros}), g.x(0)));
  g.Set(1, g.SumTo(g.Apply("Select", {mask, zeros, g.dy()}), g.x(1)));
}

void DivGrad(GradBuilder& g) {
  weft_output x = g.x(0), y = g.x(1), dy = g.dy();
  if (g.wanted(0)) g.Set(0, g.SumTo(g.Apply("RealDiv", {dy, y}), x));
  if (g.wanted(1)) {
    // -dy * x / y^2, as (-x / y) / y so that it overflows no sooner than z.
    weft_output q =
        g.Apply("RealDiv", {g.Apply("RealDiv", {g.Apply("Neg", {x}), y}), y});
    g.Set(1, g.SumTo(g.Apply("Mul", {dy, q}), y));
  }
}

void PowGrad(GradBuilder& g) {
  weft_output x = g.x(0), y = g.x(1), dy = g.dy();
  weft_dtype t = GradBuilder::Dtype(x);
  if (g.wanted(0)) {
    // dy * y * x^(y - 1)
    weft_output p = g.Apply("Pow", {x, g.Apply("Sub", {y, g.Scalar(1, t)})});
    g.Set(0, g.SumTo(g.Apply("Mul", {dy, g.Apply("Mul", {y, p})}), x));
  }
  if (g.wanted(1)) {
    // dy * z * log(x), taking log(x) as 0 where x <= 0 (the limit where
    // z is 0, and TensorFlow's choice elsewhere); the Log never sees those
    // x, so no NaN is made only to be dropped.
    weft_output positive = g.Apply("Greater", {x, g.Scalar(0, t)});
    weft_output safe =
        g.Apply("Select", {positive, x, g.Apply("OnesLike", {x})});
    weft_output log = g.Apply("Select", {positive, g.Apply("Log", {safe}),
                                         g.Apply("ZerosLike", {x})});
    weft_output dz = g.Apply("Mul", {dy, g.y()});
    g.Set(1, g.SumTo(g.Apply("Mul", {dz, log}), y));
  }
}

void DropoutGrad(GradBuilder& g) {
  // The mask is not an output, and a second Dropout node cannot redraw it
  // (each node counts its own runs), but it shows in y: a kept element is
  // x * scale, non-zero unless x is.  Where x is exactly 0 the mask is lost
  // and no gradient passes (after a Relu, its own gradient is 0 there).
  double rate = g.attr("rate")->f;
  if (rate == 0) {
    g.Set(0, g.dy());
    return;
  }
  weft_dtype t = GradBuilder::Dtype(g.x(0));
  weft_output kept = g.Apply("NotEqual", {g.y(), g.Scalar(0, t)});
  weft_output scaled =
      g.Apply("Mul", {g.dy(), g.Scalar(1.0 / (1.0 - rate), t)});
  g.Set(0, g.Apply("Select", {kept, scaled, g.Apply("ZerosLike", {g.dy()})}));
}

// An op whose gradient is one op: grad_op(y, dy) when `y_first`, else
// grad_op(dy, x).
void Unary(const char* op, const char* grad_op, bool y_first) {
  std::string name = grad_op;
  RegisterGradientWith(op, [name, y_first](GradBuilder& g) {
    if (y_first)
      g.Set(0, g.Apply(name.c_str(), {g.y(), g.dy()}));
    else
      g.Set(0, g.Apply(name.c_str(), {g.dy(), g.x(0)}));
  });
}

}  // namespace

void RegisterElementwiseGradients() {
  RegisterGradientWith("Add", [](GradBuilder& g) {
    g.Set(0, g.SumTo(g.dy(), g.x(0)));
    g.Set(1, g.SumTo(g.dy(), g.x(1)));
  });
  RegisterGradientWith("Sub", [](GradBuilder& g) {
    g.Set(0, g.SumTo(g.dy(), g.x(0)));
    if (g.wanted(1)) g.Set(1, g.SumTo(g.Apply("Neg", {g.dy()}), g.x(1)));
  });
  RegisterGradientWith("Mul", [](GradBuilder& g) {
    if (g.wanted(0))
      g.Set(0, g.SumTo(g.Apply("Mul", {g.dy(), g.x(1)}), g.x(0)));
    if (g.wanted(1))
      g.Set(1, g.SumTo(g.Apply("Mul", {g.x(0), g.dy()}), g.x(1)));
  });
  RegisterGradientWith("Div", DivGrad);
  RegisterGradientWith("RealDiv", DivGrad);
  RegisterGradientWith("Pow", PowGrad);
  RegisterGradientWith(
      "Maximum", [](GradBuilder& g) { SelectBetween(g, "GreaterEqual"); });
  RegisterGradientWith("Minimum",
                       [](GradBuilder& g) { SelectBetween(g, "LessEqual"); });
  RegisterGradientWith("Select", [](GradBuilder& g) {
    weft_output c = g.x(0), dy = g.dy();
    weft_output zeros = g.Apply("ZerosLike", {dy});
    if (g.wanted(1))
      g.Set(1, g.SumTo(g.Apply("Select", {c, dy, zeros}), g.x(1)));
    if (g.wanted(2))
      g.Set(2, g.SumTo(g.Apply("Select", {c, zeros, dy}), g.x(2)));
  });

  RegisterGradientWith(
      "Neg", [](GradBuilder& g) { g.Set(0, g.Apply("Neg", {g.dy()})); });
  RegisterGradientWith("Abs", [](GradBuilder& g) {
    g.Set(0, g.Apply("Mul", {g.dy(), g.Apply("Sign", {g.x(0)})}));
  });
  // Zero almost everywhere: an explicit zero keeps x connected.
  RegisterGradientWith(
      "Sign", [](GradBuilder& g) { g.Set(0, g.Apply("ZerosLike", {g.x(0)})); });
  RegisterGradientWith("Square", [](GradBuilder& g) {
    weft_output two = g.Scalar(2, GradBuilder::Dtype(g.x(0)));
    g.Set(0, g.Apply("Mul", {g.dy(), g.Apply("Mul", {g.x(0), two})}));
  });
  RegisterGradientWith("Exp", [](GradBuilder& g) {
    g.Set(0, g.Apply("Mul", {g.dy(), g.y()}));
  });
  RegisterGradientWith("Log", [](GradBuilder& g) {
    g.Set(0, g.Apply("RealDiv", {g.dy(), g.x(0)}));
  });
  // From Relu's output, not its input (y > 0 exactly where x > 0): the
  // input is then read by Relu alone, so the planner can fuse the op that
  // makes it (Conv2D + BiasAdd) with the Relu.
  RegisterGradientWith("Relu", [](GradBuilder& g) {
    g.Set(0, g.Apply("ReluGrad", {g.dy(), g.y()}));
  });
  Unary("Sigmoid", "SigmoidGrad", true);
  Unary("Tanh", "TanhGrad", true);
  Unary("Sqrt", "SqrtGrad", true);
  Unary("Rsqrt", "RsqrtGrad", true);
  RegisterGradientWith("Identity", [](GradBuilder& g) { g.Set(0, g.dy()); });
  // Between float types the gradient is cast back; the walk never asks for
  // an integer input's gradient, nor sends one through an integer output.
  RegisterGradientWith("Cast", [](GradBuilder& g) {
    weft_dtype src = GradBuilder::Dtype(g.x(0));
    if (!IsFloat(src) || !IsFloat(GradBuilder::Dtype(g.y()))) return;
    weft_op_builder* b = g.Begin("Cast", {g.dy()});
    weft_op_set_attr_dtype(b, "DstT", src);
    g.Set(0, g.Finish(b));
  });
  RegisterGradientWith("Dropout", DropoutGrad);

  // The gradient ops of this family (second derivatives are not built).
  RegisterGradientWith("ReluGrad", [](GradBuilder& g) {
    // Linear in grad; x only selects (zero derivative almost everywhere).
    g.Set(0, g.Apply("ReluGrad", {g.dy(), g.x(1)}));
  });
  for (const char* op : {"SigmoidGrad", "TanhGrad", "SqrtGrad", "RsqrtGrad"})
    RegisterNotDifferentiable(op);
}

}  // namespace weft
