// Gradients of the neural-network ops: BiasAdd, Softmax, LogSoftmax, the
// softmax cross-entropy losses, Conv2D, MaxPool, AvgPool and
// BatchNormWithGlobalNormalization; and of the gradient ops they build
// that have gradients of their own (Conv2DBackpropInput/Filter,
// AvgPoolGrad).
//
// Convolution and pooling go through dedicated ops (runtime/ops/gradient_helpers_reduce_nn.cc); the
// rest are compositions of existing ops.  Per-channel parameters receive
// their gradient summed back to their shape (GradBuilder::SumTo).
#include "grad/grad_builder.h"

namespace weft {
namespace {

weft_output SumLastAxis(GradBuilder& g, weft_output x) {
  weft_op_builder* b = g.Begin("Sum", {x});
  const int64_t last = -1;
  weft_op_set_attr_int_list(b, "axes", &last, 1);
  weft_op_set_attr_bool(b, "keep_dims", 1);
  return g.Finish(b);
}

void BiasAddGrad(GradBuilder& g) {
  g.Set(0, g.dy());
  if (g.wanted(1)) g.Set(1, g.SumTo(g.dy(), g.x(1)));
}

// y = softmax(x): dx = (dy - sum(dy * y)) * y, sums over the last axis.
void SoftmaxGrad(GradBuilder& g) {
  weft_output inner = SumLastAxis(g, g.Apply("Mul", {g.dy(), g.y()}));
  g.Set(0, g.Apply("Mul", {g.Apply("Sub", {g.dy(), inner}), g.y()}));
}

// y = log softmax(x): dx = dy - exp(y) * sum(dy), sums over the last axis.
void LogSoftmaxGrad(GradBuilder& g) {
  weft_output spread =
      g.Apply("Mul", {g.Apply("Exp", {g.y()}), SumLastAxis(g, g.dy())});
  g.Set(0, g.Apply("Sub", {g.dy(), spread}));
}

// Both losses: output 1 (backprop = softmax(features) - labels) is the
// gradient of loss row b with respect to features row b, so
// dfeatures = dloss[:, None] * backprop, as TensorFlow does.  Dense labels
// get d loss / d labels = -log softmax(features) (sparse ones are integers
// and never wanted).  A gradient arriving at the backprop output itself
// would need second derivatives, which are not provided: refused by name.
void XentGrad(GradBuilder& g) {
  if (g.dy(1).node != nullptr) {
    g.Fail(Errorf(WEFT_UNIMPLEMENTED,
                  "node '%s' (%s): a gradient through its backprop output "
                  "(output 1) is not provided; differentiate the loss "
                  "(output 0)", g.node()->name.c_str(),
                  g.node()->op_type.c_str()));
    return;
  }
  weft_op_builder* b = g.Begin("ExpandDims", {g.dy(0)});
  weft_op_set_attr_int(b, "axis", -1);
  weft_output dloss = g.Finish(b);
  if (g.wanted(0)) g.Set(0, g.Apply("Mul", {dloss, g.y(1)}));
  if (g.wanted(1)) {
    weft_output log_p = g.Apply("LogSoftmax", {g.x(0)});
    g.Set(1, g.Apply("Mul", {dloss, g.Apply("Neg", {log_p})}));
  }
}

// Sets attribute `name` (input_sizes, filter_sizes) to the static shape of
// `like`; unknown dims stay -1 (the ops resolve the batch and channels at
// run time, and refuse other unknown dims).
void SetSizes(weft_op_builder* b, const char* name, weft_output like) {
  const ShapeInfo& s = GradBuilder::Shape(like);
  std::vector<int64_t> dims =
      s.known_rank() ? s.dims : std::vector<int64_t>(4, -1);
  weft_op_set_attr_int_list(b, name, dims.data(),
                            static_cast<int32_t>(dims.size()));
}

// A convolution op over (a, b) with the forward node's window attributes,
// and attribute `sizes` (when not null) from `like`.
weft_output ConvOp(GradBuilder& g, const char* op, weft_output a,
                   weft_output b, const char* sizes, weft_output like) {
  weft_op_builder* nb = g.Begin(op, {a, b});
  g.CopyAttrs(nb, {"strides", "padding", "dilations", "data_format"});
  if (sizes != nullptr) SetSizes(nb, sizes, like);
  return g.Finish(nb);
}

weft_output BackpropInput(GradBuilder& g, weft_output filter,
                          weft_output out_grad, weft_output input) {
  return ConvOp(g, "Conv2DBackpropInput", filter, out_grad, "input_sizes",
                input);
}
weft_output BackpropFilter(GradBuilder& g, weft_output input,
                           weft_output out_grad, weft_output filter) {
  return ConvOp(g, "Conv2DBackpropFilter", input, out_grad, "filter_sizes",
                filter);
}
weft_output Conv(GradBuilder& g, weft_output input, weft_output filter) {
  return ConvOp(g, "Conv2D", input, filter, nullptr, input);
}

void Conv2DGrad(GradBuilder& g) {
  if (g.wanted(0)) g.Set(0, BackpropInput(g, g.x(1), g.dy(), g.x(0)));
  if (g.wanted(1)) g.Set(1, BackpropFilter(g, g.x(0), g.dy(), g.x(1)));
}

// y = relu(conv(x, f) + b): dz = dy where y > 0 (y > 0 exactly where
// conv(x, f) + b > 0), then the BiasAdd and Conv2D gradients of dz.
void FusedConv2DGrad(GradBuilder& g) {
  weft_output dz = g.Apply("ReluGrad", {g.dy(), g.y()});
  if (g.wanted(0)) g.Set(0, BackpropInput(g, g.x(1), dz, g.x(0)));
  if (g.wanted(1)) g.Set(1, BackpropFilter(g, g.x(0), dz, g.x(1)));
  if (g.wanted(2)) g.Set(2, g.SumTo(dz, g.x(2)));
}

// BackpropInput(F, G) is linear in the filter F and in G.
void Conv2DBackpropInputGrad(GradBuilder& g) {
  if (g.wanted(0)) g.Set(0, BackpropFilter(g, g.dy(), g.x(1), g.x(0)));
  if (g.wanted(1)) g.Set(1, Conv(g, g.dy(), g.x(0)));
}

// BackpropFilter(I, G) is linear in the input I and in G.
void Conv2DBackpropFilterGrad(GradBuilder& g) {
  if (g.wanted(0)) g.Set(0, BackpropInput(g, g.dy(), g.x(1), g.x(0)));
  if (g.wanted(1)) g.Set(1, Conv(g, g.x(0), g.dy()));
}

// A pooling op over `inputs` with the forward node's window attributes,
// and input_sizes from the forward input when `sized`.
weft_output PoolOp(GradBuilder& g, const char* op,
                   std::initializer_list<weft_output> inputs, bool sized) {
  weft_op_builder* b = g.Begin(op, inputs);
  g.CopyAttrs(b, {"ksize", "strides", "padding", "data_format"});
  if (sized) SetSizes(b, "input_sizes", g.x(0));
  return g.Finish(b);
}

// y = (t - m) * r * s + beta with r = (v + eps)^-1/2 and s = gamma when
// scaling (else 1); per-channel sums run over every axis but the last:
//   dt = dy r s        dm = -sum(dy) r s        dbeta = sum(dy)
//   dv = -1/2 sum(dy (t - m)) s r^3             dgamma = sum(dy (t - m)) r
// Without scaling gamma takes no part and gets no gradient.
void BatchNormGrad(GradBuilder& g) {
  const weft_output t = g.x(0), m = g.x(1), v = g.x(2), gamma = g.x(4);
  const weft_output dy = g.dy();
  const weft_dtype dtype = GradBuilder::Dtype(t);
  const bool scaled = g.attr("scale_after_normalization")->i != 0;
  weft_output r = g.Apply(
      "Rsqrt", {g.Apply("Add", {v, g.Scalar(g.attr("variance_epsilon")->f,
                                            dtype)})});
  weft_output rs = scaled ? g.Apply("Mul", {r, gamma}) : r;
  if (g.wanted(0)) g.Set(0, g.Apply("Mul", {dy, rs}));
  if (g.wanted(1) || g.wanted(3)) {
    weft_output sum_dy = g.SumTo(dy, m);
    g.Set(3, sum_dy);
    if (g.wanted(1)) g.Set(1, g.Apply("Mul", {g.Apply("Neg", {sum_dy}), rs}));
  }
  if (g.wanted(2) || (scaled && g.wanted(4))) {
    weft_output sum_dy_c =
        g.SumTo(g.Apply("Mul", {dy, g.Apply("Sub", {t, m})}), m);
    if (g.wanted(2)) {
      weft_output r3s = g.Apply("Mul", {rs, g.Apply("Mul", {r, r})});
      g.Set(2, g.Apply("Mul", {g.Apply("Mul", {sum_dy_c, r3s}),
                               g.Scalar(-0.5, dtype)}));
    }
    if (scaled) g.Set(4, g.Apply("Mul", {sum_dy_c, r}));
  }
}

}  // namespace

void RegisterNnGradients() {
  RegisterGradientWith("BiasAdd", BiasAddGrad);
  RegisterGradientWith("FusedConv2D", FusedConv2DGrad);
  RegisterGradientWith("Softmax", SoftmaxGrad);
  RegisterGradientWith("LogSoftmax", LogSoftmaxGrad);
  RegisterGradientWith("SoftmaxCrossEntropyWithLogits", XentGrad);
  RegisterGradientWith("SparseSoftmaxCrossEntropyWithLogits", XentGrad);
  RegisterGradientWith("Conv2D", Conv2DGrad);
  RegisterGradientWith("Conv2DBackpropInput", Conv2DBackpropInputGrad);
  RegisterGradientWith("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);
  // Each window's gradient goes to its maximum (the first in row-major
  // window order on ties, as the forward kernels pick it).
  RegisterGradientWith("MaxPool", [](GradBuilder& g) {
    g.Set(0, PoolOp(g, "MaxPoolGrad", {g.x(0), g.dy()}, false));
  });
  RegisterGradientWith("AvgPool", [](GradBuilder& g) {
    g.Set(0, PoolOp(g, "AvgPoolGrad", {g.dy()}, true));
  });
  // AvgPoolGrad is linear in its gradient input; its adjoint is AvgPool.
  RegisterGradientWith("AvgPoolGrad", [](GradBuilder& g) {
    g.Set(0, PoolOp(g, "AvgPool", {g.dy()}, false));
  });
  // Piecewise linear, with a routing that would need a gather op of its
  // own: second derivatives through MaxPool are not provided.
  RegisterNotDifferentiable("MaxPoolGrad");
  // Used directly: the gradient reads the op's own window index.
  RegisterGradientWith("MaxPoolWithWindowIndex", [](GradBuilder& g) {
    g.Set(0, PoolOp(g, "MaxPoolGradFromWindowIndex", {g.y(1), g.dy()}, true));
  });
  for (const char* op : {"MaxPoolReluGrad", "MaxPoolGradFromWindowIndex",
                         "MaxPoolReluGradFromWindowIndex"})
    RegisterNotDifferentiable(op);
  // A foreign function's derivative is not known to the runtime (a custom
  // op with a gradient is issue 13's ABI op registration).
  RegisterNotDifferentiable("ForeignCall");
  RegisterGradientWith("BatchNormWithGlobalNormalization", BatchNormGrad);
}

}  // namespace weft
