// Optimizer ops: ApplyGradientDescent, ApplyMomentum, ApplyAdam, with
// TensorFlow's input orders and formulas, and MatMulApplyGradientDescent,
// a MatMul and the ApplyGradientDescent that alone reads it in one node
// (the planner's fusion, session/fuse.cc).  Each takes its variables by
// reference (its leading num_refs inputs) and outputs their new values,
// which the executor publishes as the variables' values (ExecKind::kUpdate),
// so kernels are pure functions of [current values..., data inputs...].
#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"

namespace weft {
namespace {

bool Compatible(const ShapeInfo& a, const ShapeInfo& b) {
  if (!a.known_rank() || !b.known_rank()) return true;
  if (a.rank != b.rank) return false;
  for (int32_t i = 0; i < a.rank; ++i)
    if (a.dims[i] >= 0 && b.dims[i] >= 0 && a.dims[i] != b.dims[i])
      return false;
  return true;
}

// Inputs, in TensorFlow's order.
const std::vector<std::string> kDescentInputs = {"var", "alpha", "delta"};
const std::vector<std::string> kMatMulDescentInputs = {"var", "alpha", "a",
                                                       "b"};
const std::vector<std::string> kMomentumInputs = {"var", "accum", "lr",
                                                  "grad", "momentum"};
const std::vector<std::string> kAdamInputs = {
    "var",   "m",     "v",       "beta1_power", "beta2_power",
    "lr",    "beta1", "beta2",   "epsilon",     "grad"};

// The refs name Variables of one shape; the inputs listed in `scalars` are
// scalars; the rest (the gradient) have the variables' shape.  Outputs: the
// refs' new values.
weft_status* InferUpdate(InferenceContext& c,
                         const std::vector<std::string>& names, int num_refs,
                         std::initializer_list<size_t> scalars) {
  for (int r = 0; r < num_refs; ++r)
    if (c.input_ops[r] != "Variable")
      return c.Fail("input %d (%s) must be a Variable's output, not a %s", r,
                    names[r].c_str(), c.input_ops[r].c_str());
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  const ShapeInfo& var = c.input_shapes[0];
  for (size_t i = 1; i < c.input_shapes.size(); ++i) {
    const ShapeInfo& s = c.input_shapes[i];
    bool scalar = false;
    for (size_t k : scalars) scalar |= k == i;
    if (scalar ? s.known_rank() && s.rank != 0 : !Compatible(s, var))
      return c.Fail("input %zu (%s) has shape %s; %s%s", i, names[i].c_str(),
                    s.ToString().c_str(),
                    scalar ? "it must be a scalar" : "the variable has shape ",
                    scalar ? "" : var.ToString().c_str());
  }
  c.output_dtypes.assign(num_refs, c.input_dtypes[0]);
  c.output_shapes.assign(num_refs, var);
  return nullptr;
}

// The product's [M, N] (-1 where unknown) from a and b as MatMul reads
// them, or an error where they cannot multiply.
weft_status* InferProduct(InferenceContext& c, const ShapeInfo& a,
                          const ShapeInfo& b, int64_t* m, int64_t* n) {
  if ((a.known_rank() && a.rank != 2) || (b.known_rank() && b.rank != 2))
    return c.Fail("a and b must be matrices, got %s and %s",
                  a.ToString().c_str(), b.ToString().c_str());
  const bool ta = c.attr("transpose_a")->i != 0;
  const bool tb = c.attr("transpose_b")->i != 0;
  int64_t ka, kb;
  MatrixDims(a, ta, m, &ka);
  MatrixDims(b, tb, &kb, n);
  return CheckInnerDims(c, ta ? "a transposed" : "a", a, ka,
                        tb ? "b transposed" : "b", b, kb);
}

OpDef UpdateOp(const char* name, const std::vector<std::string>& inputs,
               int num_refs, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = inputs;
  d.num_outputs = num_refs;
  d.num_refs = num_refs;
  d.exec = ExecKind::kUpdate;
  d.stateful = true;
  d.type_attr = "T";
  d.allowed_types = {WEFT_FLOAT32, WEFT_FLOAT64};
  d.summary = summary;
  return d;
}

}  // namespace

void RegisterTrainOps(OpRegistry* r) {
  OpDef descent = UpdateOp("ApplyGradientDescent", kDescentInputs, 1,
                           "var -= alpha * delta.");
  descent.infer = [](InferenceContext& c) {
    return InferUpdate(c, kDescentInputs, 1, {1});
  };
  r->Add(std::move(descent));

  OpDef fused = UpdateOp("MatMulApplyGradientDescent", kMatMulDescentInputs,
                          1,
                          "var -= alpha * op(a) . op(b): MatMul (transpose_a, "
                          "transpose_b as its) and ApplyGradientDescent in "
                          "one, the gradient never stored.");
  AttrValue untransposed;
  untransposed.type = AttrType::kBool;
  fused.attrs = {AttrDef{"transpose_a", AttrType::kBool, false, untransposed},
                 AttrDef{"transpose_b", AttrType::kBool, false, untransposed}};
  fused.infer = [](InferenceContext& c) -> weft_status* {
    if (c.input_ops[0] != "Variable")
      return c.Fail("input 0 (var) must be a Variable's output, not a %s",
                    c.input_ops[0].c_str());
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& alpha = c.input_shapes[1];
    if (alpha.known_rank() && alpha.rank != 0)
      return c.Fail("input 1 (alpha) has shape %s; it must be a scalar",
                    alpha.ToString().c_str());
    int64_t m = -1, n = -1;
    WEFT_RETURN_IF_ERROR(
        InferProduct(c, c.input_shapes[2], c.input_shapes[3], &m, &n));
    const ShapeInfo& var = c.input_shapes[0];
    if (!Compatible(var, ShapeInfo::Of({m, n})))
      return c.Fail("the product is [%lld,%lld]; the variable has shape %s",
                    static_cast<long long>(m), static_cast<long long>(n),
                    var.ToString().c_str());
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {var};
    return nullptr;
  };
  r->Add(std::move(fused));

  OpDef momentum = UpdateOp(
      "ApplyMomentum", kMomentumInputs, 2,
      "accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= "
      "lr * (grad + momentum * accum)).");
  AttrValue no;
  no.type = AttrType::kBool;
  momentum.attrs = {AttrDef{"use_nesterov", AttrType::kBool, false, no}};
  momentum.infer = [](InferenceContext& c) {
    return InferUpdate(c, kMomentumInputs, 2, {2, 4});
  };
  r->Add(std::move(momentum));

  OpDef adam = UpdateOp(
      "ApplyAdam", kAdamInputs, 3,
      "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - "
      "m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / "
      "(sqrt(v) + epsilon).");
  adam.infer = [](InferenceContext& c) {
    return InferUpdate(c, kAdamInputs, 3, {3, 4, 5, 6, 7, 8});
  };
  r->Add(std::move(adam));
}

}  // namespace weft
