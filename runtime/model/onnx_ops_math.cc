// ONNX ops onto Weft's element-wise, matrix and reduction ops; activations
// Weft has no op for are written with the ops it has (Elu as a Select of
// two branches, Softplus as relu(x) + log(1 + exp(-|x|)), ...).
#include <cmath>
#include <limits>

#include "model/onnx_importer.h"

namespace weft {
namespace onnx_import {

namespace {

using Fn1 = std::function<weft_output(Importer&, weft_output)>;
using Fn2 = std::function<weft_output(Importer&, weft_output, weft_output)>;

// A value that broadcasts against an NHWC rank-4 value as its NCHW plain
// form broadcast against the NCHW one: leading 1s up to rank 4, then the
// NHWC transpose.  False for rank above 4 or unknown.
bool AsNhwcOperand(Importer& im, weft_output plain, weft_output* out) {
  int32_t rank = im.Rank(plain);
  if (rank < 0 || rank > 4) return false;
  std::vector<int64_t> dims = im.Dims(plain);
  bool all_ones = true;
  for (int64_t d : dims) all_ones = all_ones && d == 1;
  if (all_ones) {
    *out = plain;  // broadcasts the same in any layout
    return true;
  }
  weft_output x = plain;
  for (int32_t r = rank; r < 4; ++r)
    x = im.Op("ExpandDims", {x},
              [](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", 0); });
  *out = im.Transpose(x, {0, 2, 3, 1});
  return true;
}

// An element-wise op of one input: NHWC in, NHWC out.
void Unary(OnnxNode& n, const Fn1& f) {
  Importer& im = n.importer();
  if (n.PrefersNhwc(0))
    n.SetOutNhwc(0, f(im, n.InNhwc(0)));
  else
    n.SetOut(0, f(im, n.In(0)));
}

// An element-wise op of two inputs (ONNX's multidirectional broadcast is
// Weft's): kept in NHWC when one input is held so and the other broadcasts
// against it there.
void Binary(OnnxNode& n, int a_index, int b_index, const Fn2& f) {
  Importer& im = n.importer();
  bool an = n.PrefersNhwc(a_index), bn = n.PrefersNhwc(b_index);
  if (an || bn) {
    weft_output a{}, b{};
    bool ok_a = an ? (a = n.InNhwc(a_index), true)
                   : AsNhwcOperand(im, n.In(a_index), &a);
    bool ok_b = bn ? (b = n.InNhwc(b_index), true)
                   : AsNhwcOperand(im, n.In(b_index), &b);
    if (ok_a && ok_b) {
      n.SetOutNhwc(0, f(im, a, b));
      return;
    }
  }
  n.SetOut(0, f(im, n.In(a_index), n.In(b_index)));
}

Fn2 Apply2(const char* op) {
  return [op](Importer& im, weft_output a, weft_output b) {
    return im.Op(op, {a, b});
  };
}

Fn1 Apply1(const char* op) {
  return [op](Importer& im, weft_output x) { return im.Op(op, {x}); };
}

void RequireFloat(Importer& im, weft_output x, const char* what) {
  weft_dtype d = im.Dtype(x);
  if (d != WEFT_FLOAT32 && d != WEFT_FLOAT64)
    Unsupported(std::string(what) + " of " + weft_dtype_name(d) +
                " (Weft computes it for float32 and float64)");
}

// Variadic Max, Min, Sum, Mean: a chain of the binary op.
void Variadic(OnnxNode& n, const char* op, bool mean) {
  Importer& im = n.importer();
  if (n.num_inputs() < 1)
    Fail(WEFT_INVALID_ARGUMENT, "the op needs at least one input");
  weft_output acc = n.In(0);
  for (int i = 1; i < n.num_inputs(); ++i) acc = im.Op(op, {acc, n.In(i)});
  if (mean && n.num_inputs() > 1)
    acc = im.Op("Div", {acc, im.Scalar(im.Dtype(acc), n.num_inputs())});
  if (n.num_inputs() == 1) acc = im.Op("Identity", {acc});
  n.SetOut(0, acc);
}

// Select(x < 0, negative(x), positive(x)) element-wise, NHWC kept.
void Piecewise(OnnxNode& n, const char* compare, double threshold,
               const Fn1& when_true, const Fn1& otherwise) {
  Unary(n, [&](Importer& im, weft_output x) {
    RequireFloat(im, x, n.proto().op_type().c_str());
    weft_output cond =
        im.Op(compare, {x, im.Scalar(im.Dtype(x), threshold)});
    return im.Op("Select", {cond, when_true(im, x), otherwise(im, x)});
  });
}

weft_output MulScalar(Importer& im, weft_output x, double s) {
  return im.Op("Mul", {x, im.Scalar(im.Dtype(x), s)});
}

weft_output AddScalar(Importer& im, weft_output x, double s) {
  return im.Op("Add", {x, im.Scalar(im.Dtype(x), s)});
}

weft_output Clamp(Importer& im, weft_output x, double lo, double hi) {
  x = im.Op("Maximum", {x, im.Scalar(im.Dtype(x), lo)});
  return im.Op("Minimum", {x, im.Scalar(im.Dtype(x), hi)});
}

// ---- Matrices --------------------------------------------------------------

void MatMulOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output a = n.In(0), b = n.In(1);
  int32_t ra = im.Rank(a), rb = im.Rank(b);
  if (ra < 1 || rb < 1)
    Unsupported("MatMul of operands of unknown rank or scalars");
  auto expand = [&](weft_output x, int64_t axis) {
    return im.Op("ExpandDims", {x}, [axis](weft_op_builder* bl) {
      weft_op_set_attr_int(bl, "axis", axis);
    });
  };
  // NumPy's matmul: a vector operand is a matrix of one row (a) or one
  // column (b), removed again from the result.
  std::vector<int64_t> squeeze;
  if (ra == 1) a = expand(a, 0), ra = 2;
  if (rb == 1) b = expand(b, -1), rb = 2;
  const int32_t out_rank = std::max(ra, rb);
  if (im.Rank(n.In(0)) == 1) squeeze.push_back(out_rank - 2);
  if (im.Rank(n.In(1)) == 1) squeeze.push_back(out_rank - 1);
  weft_output y = (ra == 2 && rb == 2) ? im.Op("MatMul", {a, b})
                                       : im.Op("BatchMatMul", {a, b});
  if (!squeeze.empty())
    y = im.Op("Squeeze", {y}, [&](weft_op_builder* bl) {
      weft_op_set_attr_int_list(bl, "squeeze_dims", squeeze.data(),
                                static_cast<int32_t>(squeeze.size()));
    });
  n.SetOut(0, y);
}

void Gemm(OnnxNode& n) {
  Importer& im = n.importer();
  const double alpha = n.Float("alpha", 1.0), beta = n.Float("beta", 1.0);
  const bool ta = n.Int("transA", 0) != 0, tb = n.Int("transB", 0) != 0;
  if (n.opset() < 7) n.Ignore("broadcast");
  weft_output y = im.Op("MatMul", {n.In(0), n.In(1)}, [&](weft_op_builder* b) {
    weft_op_set_attr_bool(b, "transpose_a", ta);
    weft_op_set_attr_bool(b, "transpose_b", tb);
  });
  if (alpha != 1.0) y = MulScalar(im, y, alpha);
  if (n.Has(2) && beta != 0.0) {
    weft_output c = n.In(2);
    if (beta != 1.0) c = MulScalar(im, c, beta);
    y = im.Op("Add", {y, c});
  }
  n.SetOut(0, y);
}

// ---- Softmax family ----------------------------------------------------------

// `op` over `axis` of x: Weft's softmaxes take the last axis, so another
// axis is swapped with it around the op (opset 13), or, before opset 13,
// x is seen as a matrix [prod(dims < axis), prod(dims >= axis)].
weft_output OverAxis(OnnxNode& n, weft_output x,
                     const std::function<weft_output(weft_output)>& f) {
  Importer& im = n.importer();
  const int32_t rank = im.Rank(x);
  if (rank < 1) Unsupported("the input's rank must be known and at least 1");
  const bool coerce = n.opset() < 13;
  const int64_t axis = NormalizeAxis(n.Int("axis", coerce ? 1 : -1), rank,
                                     "axis");
  if (coerce) {
    if (axis == rank - 1) return f(x);
    std::vector<int64_t> dims = im.Dims(x);
    int64_t inner = 1;
    for (int32_t i = static_cast<int32_t>(axis); i < rank; ++i) {
      if (dims[i] < 0)
        Unsupported("the dims from axis on must be known to flatten them");
      inner *= dims[i];
    }
    weft_output flat = im.Reshape(x, {-1, inner});
    return im.Op("ReshapeLike", {f(flat), x});
  }
  if (axis == rank - 1) return f(x);
  std::vector<int64_t> perm(rank);
  for (int32_t i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[axis], perm[rank - 1]);
  return im.Transpose(f(im.Transpose(x, perm)), perm);
}

void SoftmaxOp(OnnxNode& n, const char* op) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  RequireFloat(im, x, op);
  n.SetOut(0, OverAxis(n, x, [&](weft_output v) { return im.Op(op, {v}); }));
}

void Hardmax(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  n.SetOut(0, OverAxis(n, x, [&](weft_output v) {
    std::vector<int64_t> dims = im.Dims(v);
    int64_t depth = dims.empty() ? -1 : dims.back();
    if (depth < 0) Unsupported("the size of the axis must be known");
    weft_output index = im.Op("ArgMax", {v}, [](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", -1);
    });
    return im.Op("OneHot", {index}, [&](weft_op_builder* b) {
      weft_op_set_attr_int(b, "depth", depth);
      weft_op_set_attr_dtype(b, "dtype", im.Dtype(v));
    });
  }));
}

// ---- Reductions --------------------------------------------------------------

// The reduced axes: the attribute (before opset 18, except ReduceSum from
// 13) or input 1; `all` when neither gives any.
std::vector<int64_t> ReduceAxes(OnnxNode& n, bool* all, bool* noop) {
  std::vector<int64_t> axes;
  *all = true;
  *noop = false;
  if (n.HasAttr("axes")) {
    axes = n.Ints("axes", {});
    *all = false;
  } else if (n.Has(1)) {
    axes = n.IntsIn(1, "axes");
    *all = false;
  }
  const bool noop_with_empty = n.Int("noop_with_empty_axes", 0) != 0;
  if (axes.empty()) {
    *all = true;
    *noop = noop_with_empty;
  }
  return axes;
}

weft_output Reduce(Importer& im, const char* op, weft_output x,
                   const std::vector<int64_t>& axes, bool all, bool keep) {
  return im.Op(op, {x}, [&](weft_op_builder* b) {
    if (!all)
      weft_op_set_attr_int_list(b, "axes", axes.data(),
                                static_cast<int32_t>(axes.size()));
    weft_op_set_attr_bool(b, "keep_dims", keep);
  });
}

// Reduce<kind>: pre (applied to x), the Weft reduction, post (on the result).
void ReduceOp(OnnxNode& n, const char* op, const Fn1& pre, const Fn1& post) {
  Importer& im = n.importer();
  bool all = false, noop = false;
  std::vector<int64_t> axes = ReduceAxes(n, &all, &noop);
  const bool keep = n.Int("keepdims", 1) != 0;
  weft_output x = n.In(0);
  if (noop) {
    n.SetOut(0, im.Op("Identity", {x}));
    return;
  }
  if (im.Rank(x) < 0) Unsupported("the input's rank must be known");
  if (pre) x = pre(im, x);
  weft_output y = Reduce(im, op, x, axes, all, keep);
  if (post) y = post(im, y);
  n.SetOut(0, y);
}

void ReduceLogSumExp(OnnxNode& n) {
  Importer& im = n.importer();
  bool all = false, noop = false;
  std::vector<int64_t> axes = ReduceAxes(n, &all, &noop);
  const bool keep = n.Int("keepdims", 1) != 0;
  weft_output x = n.In(0);
  RequireFloat(im, x, "ReduceLogSumExp");
  if (noop) {
    n.SetOut(0, im.Op("Identity", {x}));
    return;
  }
  // log(sum(exp(x - m))) + m with m the maximum, so exp cannot overflow;
  // a maximum of -inf or inf would give NaN there, so m is 0 where it is
  // not finite.
  weft_output m = Reduce(im, "Max", x, axes, all, true);
  weft_output finite = im.Op("Less", {im.Op("Abs", {m}),
                                      im.Scalar(im.Dtype(x), INFINITY)});
  m = im.Op("Select", {finite, m, im.Op("ZerosLike", {m})});
  weft_output s = Reduce(im, "Sum", im.Op("Exp", {im.Op("Sub", {x, m})}), axes,
                         all, keep);
  if (!keep) m = Reduce(im, "Max", m, axes, all, false);
  n.SetOut(0, im.Op("Add", {im.Op("Log", {s}), m}));
}

void ArgOp(OnnxNode& n, const char* op) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  const int32_t rank = im.Rank(x);
  if (rank < 1) Unsupported("the input's rank must be known and at least 1");
  const int64_t axis = NormalizeAxis(n.Int("axis", 0), rank, "axis");
  const bool keep = n.Int("keepdims", 1) != 0;
  const bool last = n.Int("select_last_index", 0) != 0;
  const int64_t dim = im.Dims(x)[axis];
  if (last) {
    // Weft's picks the first of equal elements: the last is the first of
    // the axis reversed (a Gather of the indices backwards).
    if (dim < 1) Unsupported("select_last_index on an axis of unknown size");
    std::vector<int64_t> backwards(static_cast<size_t>(dim));
    for (int64_t i = 0; i < dim; ++i) backwards[i] = dim - 1 - i;
    x = im.Op("Gather", {x, im.Int64s(backwards)}, [&](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", axis);
    });
  }
  weft_output y = im.Op(op, {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int(b, "axis", axis);
    weft_op_set_attr_dtype(b, "output_type", WEFT_INT64);
  });
  if (last)
    y = im.Op("Sub", {im.Scalar(WEFT_INT64, static_cast<double>(dim - 1)), y});
  if (keep)
    y = im.Op("ExpandDims", {y}, [&](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", axis);
    });
  n.SetOut(0, y);
}

// ---- Others ------------------------------------------------------------------

void ClipOp(OnnxNode& n) {
  Importer& im = n.importer();
  Unary(n, [&](Importer&, weft_output x) {
    const weft_dtype dt = im.Dtype(x);
    weft_output lo{}, hi{};
    if (n.opset() < 11) {
      lo = im.Scalar(dt, n.Float("min", -std::numeric_limits<float>::max()));
      hi = im.Scalar(dt, n.Float("max", std::numeric_limits<float>::max()));
    } else {
      if (n.Has(1)) lo = n.In(1);
      if (n.Has(2)) hi = n.In(2);
    }
    weft_output y = x;
    if (lo.node != nullptr) y = im.Op("Maximum", {y, lo});
    if (hi.node != nullptr) y = im.Op("Minimum", {y, hi});
    if (y.node == x.node && y.index == x.index) y = im.Op("Identity", {x});
    return y;
  });
}

void CastOp(OnnxNode& n, bool like) {
  Importer& im = n.importer();
  weft_dtype to = like ? im.Dtype(n.In(1))
                       : DtypeFromOnnx(static_cast<int32_t>(n.Int("to", 0)),
                                       "attribute to");
  if (like) n.Ignore("saturate");
  weft_output x = n.In(0);
  n.SetOut(0, im.Dtype(x) == to ? im.Op("Identity", {x}) : im.Cast(x, to));
}

void ModOp(OnnxNode& n) {
  const bool fmod = n.Int("fmod", 0) != 0;
  Binary(n, 0, 1, [fmod](Importer& im, weft_output x, weft_output y) {
    weft_output r = im.Op("FloorMod", {x, y});
    if (!fmod) return r;
    // C's fmod takes the sign of x; FloorMod's result has y's: where they
    // differ (and r is not 0), fmod is r - y.
    const weft_dtype dt = im.Dtype(x);
    weft_output zero = im.Scalar(dt, 0);
    weft_output differ = im.Op("NotEqual", {im.Op("Less", {r, zero}),
                                            im.Op("Less", {x, zero})});
    weft_output fix = im.Op("LogicalAnd",
                            {differ, im.Op("NotEqual", {r, zero})});
    return im.Op("Select", {fix, im.Op("Sub", {r, y}), r});
  });
}

void PowOp(OnnxNode& n) {
  Binary(n, 0, 1, [](Importer& im, weft_output x, weft_output y) {
    // ONNX lets the exponent's type differ; the result has the base's.
    return im.Op("Pow", {x, im.Cast(y, im.Dtype(x))});
  });
}

void IsInf(OnnxNode& n) {
  Importer& im = n.importer();
  const bool pos = n.Int("detect_positive", 1) != 0;
  const bool neg = n.Int("detect_negative", 1) != 0;
  weft_output x = n.In(0);
  RequireFloat(im, x, "IsInf");
  const weft_dtype dt = im.Dtype(x);
  weft_output y;
  if (pos && neg)
    y = im.Op("Equal", {im.Op("Abs", {x}), im.Scalar(dt, INFINITY)});
  else if (pos)
    y = im.Op("Equal", {x, im.Scalar(dt, INFINITY)});
  else if (neg)
    y = im.Op("Equal", {x, im.Scalar(dt, -INFINITY)});
  else
    y = im.Op("Equal", {x, im.Scalar(dt, NAN)});  // never true
  n.SetOut(0, y);
}

void Dropout(OnnxNode& n) {
  Importer& im = n.importer();
  n.Ignore("seed");
  n.Ignore("ratio");  // before opset 12; inference only scales nothing
  if (n.opset() < 7) n.Ignore("is_test");
  if (n.Has(2)) {
    std::vector<double> training =
        DoublesOf(n.ConstIn(2, "training_mode"), "training_mode");
    // Training with a ratio of 0 keeps every element: the identity again.
    double ratio = 0.5;
    if (training.size() == 1 && training[0] != 0 && n.Has(1)) {
      std::vector<double> r = DoublesOf(n.ConstIn(1, "ratio"), "ratio");
      if (r.size() == 1) ratio = r[0];
    }
    if (training.size() == 1 && training[0] != 0 && ratio != 0)
      Unsupported("training_mode is true with a ratio other than 0: Weft "
                  "imports inference graphs, and ONNX's random mask cannot "
                  "be reproduced");
  }
  Unary(n, [](Importer& imp, weft_output x) {
    return imp.Op("Identity", {x});
  });
  if (n.Wants(1))
    n.SetOut(1, im.Cast(im.Op("OnesLike", {n.In(0)}), WEFT_BOOL));
}

}  // namespace

void AddMathConverters(ConverterMap* m) {
  ConverterMap& map = *m;
  for (auto [onnx, weft] : std::vector<std::pair<const char*, const char*>>{
           {"Add", "Add"}, {"Sub", "Sub"}, {"Mul", "Mul"}, {"Div", "Div"},
           {"Equal", "Equal"}, {"Greater", "Greater"},
           {"GreaterOrEqual", "GreaterEqual"}, {"Less", "Less"},
           {"LessOrEqual", "LessEqual"}, {"And", "LogicalAnd"},
           {"Or", "LogicalOr"}, {"Xor", "NotEqual"}}) {
    const char* op = weft;
    map[onnx] = [op](OnnxNode& n) {
      // Before opset 7, broadcasting was asked for and could align at an
      // axis; without one it aligns from the right, as NumPy's does.
      if (n.opset() < 7) {
        n.Int("broadcast", 0);
        if (n.HasAttr("axis"))
          Unsupported("broadcasting at an axis (opsets before 7)");
      }
      Binary(n, 0, 1, Apply2(op));
    };
  }
  for (auto [onnx, weft] : std::vector<std::pair<const char*, const char*>>{
           {"Neg", "Neg"}, {"Abs", "Abs"}, {"Sign", "Sign"},
           {"Sqrt", "Sqrt"}, {"Exp", "Exp"}, {"Log", "Log"},
           {"Relu", "Relu"}, {"Sigmoid", "Sigmoid"}, {"Tanh", "Tanh"},
           {"Not", "LogicalNot"}, {"Identity", "Identity"}}) {
    const char* op = weft;
    map[onnx] = [op](OnnxNode& n) { Unary(n, Apply1(op)); };
  }
  map["Pow"] = PowOp;
  map["Mod"] = ModOp;
  map["Max"] = [](OnnxNode& n) { Variadic(n, "Maximum", false); };
  map["Min"] = [](OnnxNode& n) { Variadic(n, "Minimum", false); };
  map["Sum"] = [](OnnxNode& n) { Variadic(n, "Add", false); };
  map["Mean"] = [](OnnxNode& n) { Variadic(n, "Add", true); };
  map["Where"] = [](OnnxNode& n) {
    n.SetOut(0, n.importer().Op("Select", {n.In(0), n.In(1), n.In(2)}));
  };
  map["Reciprocal"] = [](OnnxNode& n) {
    Unary(n, [](Importer& im, weft_output x) {
      return im.Op("Div", {im.Scalar(im.Dtype(x), 1), x});
    });
  };
  map["Floor"] = [](OnnxNode& n) {
    Unary(n, [&](Importer& im, weft_output x) {
      RequireFloat(im, x, "Floor");
      return im.Op("FloorDiv", {x, im.Scalar(im.Dtype(x), 1)});
    });
  };
  map["Ceil"] = [](OnnxNode& n) {
    Unary(n, [&](Importer& im, weft_output x) {
      RequireFloat(im, x, "Ceil");
      weft_output f = im.Op("FloorDiv", {im.Op("Neg", {x}),
                                         im.Scalar(im.Dtype(x), 1)});
      return im.Op("Neg", {f});
    });
  };
  map["IsNaN"] = [](OnnxNode& n) {
    weft_output x = n.In(0);
    n.SetOut(0, n.importer().Op("NotEqual", {x, x}));
  };
  map["IsInf"] = IsInf;
  map["Erf"] = [](OnnxNode& n) {
    Unary(n, [](Importer& im, weft_output x) {
      RequireFloat(im, x, "Erf");
      // Abramowitz and Stegun 7.1.26: |error| <= 1.5e-7, under float32's
      // rounding of values near 1.
      const double p = 0.3275911, a[5] = {0.254829592, -0.284496736,
                                          1.421413741, -1.453152027,
                                          1.061405429};
      weft_output ax = im.Op("Abs", {x});
      weft_output t = im.Op("Div", {im.Scalar(im.Dtype(x), 1),
                                    AddScalar(im, MulScalar(im, ax, p), 1)});
      weft_output poly = MulScalar(im, t, a[4]);
      for (int i = 3; i >= 0; --i)
        poly = im.Op("Mul", {AddScalar(im, poly, a[i]), t});
      weft_output e = im.Op("Exp", {im.Op("Neg", {im.Op("Square", {ax})})});
      weft_output y = im.Op("Sub", {im.Scalar(im.Dtype(x), 1),
                                    im.Op("Mul", {poly, e})});
      return im.Op("Mul", {im.Op("Sign", {x}), y});
    });
  };
  map["Round"] = [](OnnxNode& n) {
    Unary(n, [](Importer& im, weft_output x) {
      RequireFloat(im, x, "Round");
      // floor(x + 0.5), then halves to even: where x + 0.5 was a whole
      // odd number, one less.
      const weft_dtype dt = im.Dtype(x);
      weft_output r = im.Op("FloorDiv", {AddScalar(im, x, 0.5),
                                         im.Scalar(dt, 1)});
      weft_output tie = im.Op("Equal", {im.Op("Sub", {r, x}),
                                        im.Scalar(dt, 0.5)});
      weft_output odd = im.Op("Equal", {im.Op("FloorMod", {r, im.Scalar(dt, 2)}),
                                        im.Scalar(dt, 1)});
      weft_output fix = im.Op("LogicalAnd", {tie, odd});
      return im.Op("Select", {fix, AddScalar(im, r, -1), r});
    });
  };
  map["Softplus"] = [](OnnxNode& n) {
    Unary(n, [](Importer& im, weft_output x) {
      RequireFloat(im, x, "Softplus");
      // relu(x) + log(1 + exp(-|x|)): no overflow for large |x|.
      weft_output e = im.Op("Exp", {im.Op("Neg", {im.Op("Abs", {x})})});
      return im.Op("Add", {im.Op("Relu", {x}),
                           im.Op("Log", {AddScalar(im, e, 1)})});
    });
  };
  map["Softsign"] = [](OnnxNode& n) {
    Unary(n, [](Importer& im, weft_output x) {
      RequireFloat(im, x, "Softsign");
      return im.Op("Div", {x, AddScalar(im, im.Op("Abs", {x}), 1)});
    });
  };
  map["Elu"] = [](OnnxNode& n) {
    const double alpha = n.Float("alpha", 1.0);
    Piecewise(n, "Less", 0,
              [alpha](Importer& im, weft_output x) {
                return MulScalar(im, AddScalar(im, im.Op("Exp", {x}), -1),
                                 alpha);
              },
              [](Importer&, weft_output x) { return x; });
  };
  map["Selu"] = [](OnnxNode& n) {
    const double alpha = n.Float("alpha", 1.67326319217681884765625);
    const double gamma = n.Float("gamma", 1.05070102214813232421875);
    Piecewise(n, "LessEqual", 0,
              [=](Importer& im, weft_output x) {
                return MulScalar(im, AddScalar(im, im.Op("Exp", {x}), -1),
                                 alpha * gamma);
              },
              [=](Importer& im, weft_output x) {
                return MulScalar(im, x, gamma);
              });
  };
  map["Celu"] = [](OnnxNode& n) {
    const double alpha = n.Float("alpha", 1.0);
    Piecewise(n, "Less", 0,
              [alpha](Importer& im, weft_output x) {
                weft_output e = im.Op("Exp", {MulScalar(im, x, 1 / alpha)});
                return MulScalar(im, AddScalar(im, e, -1), alpha);
              },
              [](Importer&, weft_output x) { return x; });
  };
  map["LeakyRelu"] = [](OnnxNode& n) {
    const double alpha = n.Float("alpha", 0.01);
    Piecewise(n, "Less", 0,
              [alpha](Importer& im, weft_output x) {
                return MulScalar(im, x, alpha);
              },
              [](Importer&, weft_output x) { return x; });
  };
  map["ThresholdedRelu"] = [](OnnxNode& n) {
    const double alpha = n.Float("alpha", 1.0);
    Piecewise(n, "Greater", alpha,
              [](Importer&, weft_output x) { return x; },
              [](Importer& im, weft_output x) {
                return im.Op("ZerosLike", {x});
              });
  };
  map["HardSigmoid"] = [](OnnxNode& n) {
    const double alpha = n.Float("alpha", 0.2), beta = n.Float("beta", 0.5);
    Unary(n, [=](Importer& im, weft_output x) {
      RequireFloat(im, x, "HardSigmoid");
      return Clamp(im, AddScalar(im, MulScalar(im, x, alpha), beta), 0, 1);
    });
  };
  map["HardSwish"] = [](OnnxNode& n) {
    Unary(n, [](Importer& im, weft_output x) {
      RequireFloat(im, x, "HardSwish");
      weft_output hs = Clamp(im, AddScalar(im, MulScalar(im, x, 1.0 / 6), 0.5),
                             0, 1);
      return im.Op("Mul", {x, hs});
    });
  };
  map["Shrink"] = [](OnnxNode& n) {
    const double lambd = n.Float("lambd", 0.5), bias = n.Float("bias", 0.0);
    Unary(n, [=](Importer& im, weft_output x) {
      const weft_dtype dt = im.Dtype(x);
      weft_output zero = im.Op("ZerosLike", {x});
      weft_output below = im.Op("Less", {x, im.Scalar(dt, -lambd)});
      weft_output above = im.Op("Greater", {x, im.Scalar(dt, lambd)});
      weft_output up = im.Op("Select", {above, AddScalar(im, x, -bias), zero});
      return im.Op("Select", {below, AddScalar(im, x, bias), up});
    });
  };
  map["PRelu"] = [](OnnxNode& n) {
    if (n.opset() < 7) Unsupported("PRelu before opset 7");
    Binary(n, 0, 1, [](Importer& im, weft_output x, weft_output slope) {
      RequireFloat(im, x, "PRelu");
      weft_output neg = im.Op("Less", {x, im.Scalar(im.Dtype(x), 0)});
      weft_output scaled = im.Op("Mul", {x, slope});
      return im.Op("Select", {neg, scaled, x});
    });
  };
  map["Clip"] = ClipOp;
  map["Cast"] = [](OnnxNode& n) {
    n.Ignore("saturate");
    CastOp(n, false);
  };
  map["CastLike"] = [](OnnxNode& n) { CastOp(n, true); };
  map["Dropout"] = Dropout;
  map["MatMul"] = MatMulOp;
  map["Gemm"] = Gemm;
  map["Det"] = [](OnnxNode& n) {
    n.SetOut(0, n.importer().Op("MatrixDeterminant", {n.In(0)}));
  };
  map["Softmax"] = [](OnnxNode& n) { SoftmaxOp(n, "Softmax"); };
  map["LogSoftmax"] = [](OnnxNode& n) { SoftmaxOp(n, "LogSoftmax"); };
  map["Hardmax"] = Hardmax;
  map["ReduceSum"] = [](OnnxNode& n) { ReduceOp(n, "Sum", nullptr, nullptr); };
  map["ReduceMean"] = [](OnnxNode& n) { ReduceOp(n, "Mean", nullptr, nullptr); };
  map["ReduceMax"] = [](OnnxNode& n) { ReduceOp(n, "Max", nullptr, nullptr); };
  map["ReduceMin"] = [](OnnxNode& n) { ReduceOp(n, "Min", nullptr, nullptr); };
  map["ReduceProd"] = [](OnnxNode& n) { ReduceOp(n, "Prod", nullptr, nullptr); };
  map["ReduceL1"] = [](OnnxNode& n) {
    ReduceOp(n, "Sum", Apply1("Abs"), nullptr);
  };
  map["ReduceL2"] = [](OnnxNode& n) {
    ReduceOp(n, "Sum", Apply1("Square"), Apply1("Sqrt"));
  };
  map["ReduceSumSquare"] = [](OnnxNode& n) {
    ReduceOp(n, "Sum", Apply1("Square"), nullptr);
  };
  map["ReduceLogSum"] = [](OnnxNode& n) {
    ReduceOp(n, "Sum", nullptr, Apply1("Log"));
  };
  map["ReduceLogSumExp"] = ReduceLogSumExp;
  map["ArgMax"] = [](OnnxNode& n) { ArgOp(n, "ArgMax"); };
  map["ArgMin"] = [](OnnxNode& n) { ArgOp(n, "ArgMin"); };
}

}  // namespace onnx_import
}  // namespace weft
