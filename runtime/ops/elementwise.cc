// Element-wise ops: arithmetic and comparisons with broadcasting, logical
// ops, Select, unary math, Identity and Cast.
//
// Schemas allow every dtype an op has a meaning for (runtime/ops/
// CONVENTIONS.md); which of them run is up to the kernels a device offers,
// and the planner names the node when none matches.
#include <algorithm>

#include "base/status.h"
#include "ops/registry.h"

namespace weft {

OpDef BinaryOp(const char* name, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x", "y"};
  d.type_attr = "T";
  d.allowed_types = kNumericTypes;
  d.summary = summary;
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    ShapeInfo out;
    WEFT_RETURN_IF_ERROR(
        BroadcastShapes(c, c.input_shapes[0], c.input_shapes[1], &out));
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {std::move(out)};
    return nullptr;
  };
  return d;
}

OpDef UnaryOp(const char* name, const std::vector<weft_dtype>& types,
              const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x"};
  d.type_attr = "T";
  d.allowed_types = types;
  d.summary = summary;
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {c.input_shapes[0]};
    return nullptr;
  };
  return d;
}

namespace {

OpDef BinaryOpOf(const char* name, const std::vector<weft_dtype>& types,
                 const char* summary) {
  OpDef d = BinaryOp(name, summary);
  d.allowed_types = types;
  return d;
}

// A broadcasting binary op whose output is bool whatever the inputs' dtype.
OpDef Comparison(const char* name, const std::vector<weft_dtype>& types,
                 const char* summary) {
  OpDef d = BinaryOpOf(name, types, summary);
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    ShapeInfo out;
    WEFT_RETURN_IF_ERROR(
        BroadcastShapes(c, c.input_shapes[0], c.input_shapes[1], &out));
    c.output_dtypes = {WEFT_BOOL};
    c.output_shapes = {std::move(out)};
    return nullptr;
  };
  return d;
}

// Select(condition, t, e): TF2's SelectV2, all three broadcast together.
// The type attribute is t's dtype, which kernels dispatch on; condition is
// always bool, so it cannot share UnifyInputTypes with t and e.
weft_status* InferSelect(InferenceContext& c) {
  const weft_dtype cond = c.input_dtypes[0];
  const weft_dtype t = c.input_dtypes[1];
  const weft_dtype e = c.input_dtypes[2];
  if (cond != WEFT_BOOL)
    return c.Fail("condition has dtype %s; it must be bool (compare, or "
                  "Cast to bool)", weft_dtype_name(cond));
  if (t != e)
    return c.Fail("t has dtype %s but e has %s; they must have the same "
                  "dtype (insert a Cast)", weft_dtype_name(t),
                  weft_dtype_name(e));
  AttrValue v;
  v.type = AttrType::kDtype;
  v.i = t;
  SetAttr(c.attrs, "T", v);

  // Broadcasting is associative, so pairwise steps give the shape of all
  // three; a failure is reported with all three shapes, since the
  // intermediate shape would mean nothing to the user.
  ShapeInfo te, out;
  weft_status* s = BroadcastShapes(c, c.input_shapes[1], c.input_shapes[2],
                                   &te);
  if (s == nullptr) s = BroadcastShapes(c, c.input_shapes[0], te, &out);
  if (s != nullptr) {
    weft_status_destroy(s);
    return c.Fail("shapes of condition %s, t %s and e %s cannot be broadcast "
                  "together", c.input_shapes[0].ToString().c_str(),
                  c.input_shapes[1].ToString().c_str(),
                  c.input_shapes[2].ToString().c_str());
  }
  c.output_dtypes = {t};
  c.output_shapes = {std::move(out)};
  return nullptr;
}

weft_status* InferCast(InferenceContext& c) {
  auto dst = static_cast<weft_dtype>(c.attr("DstT")->i);
  if (weft_dtype_size(dst) == 0)
    return c.Fail("attribute DstT has invalid value %d",
                  static_cast<int>(dst));
  AttrValue v;
  v.type = AttrType::kDtype;
  v.i = c.input_dtypes[0];
  SetAttr(c.attrs, "SrcT", v);
  c.output_dtypes = {dst};
  c.output_shapes = {c.input_shapes[0]};
  return nullptr;
}

}  // namespace

void RegisterElementwiseOps(OpRegistry* r) {
  const std::vector<weft_dtype> kBool = {WEFT_BOOL};

  r->Add(BinaryOp("Add", "x + y with broadcasting."));
  r->Add(BinaryOp("Sub", "x - y with broadcasting."));
  r->Add(BinaryOp("Mul", "x * y with broadcasting."));
  r->Add(BinaryOp("Div", "x / y with broadcasting; integers truncate."));
  r->Add(BinaryOpOf("RealDiv", kFloatTypes,
                    "x / y with broadcasting, for floating-point types."));
  r->Add(BinaryOp("FloorDiv", "floor(x / y) with broadcasting."));
  r->Add(BinaryOp("FloorMod",
                  "Remainder of FloorDiv, with the sign of y; broadcasting."));
  r->Add(BinaryOp("Pow", "x ^ y with broadcasting; integer y must be >= 0."));
  r->Add(BinaryOp("Maximum", "max(x, y) with broadcasting; NaN wins."));
  r->Add(BinaryOp("Minimum", "min(x, y) with broadcasting; NaN wins."));

  r->Add(Comparison("Greater", kNumericTypes, "x > y, as bool."));
  r->Add(Comparison("GreaterEqual", kNumericTypes, "x >= y, as bool."));
  r->Add(Comparison("Less", kNumericTypes, "x < y, as bool."));
  r->Add(Comparison("LessEqual", kNumericTypes, "x <= y, as bool."));
  r->Add(Comparison("Equal", kAllTypes, "x == y, as bool."));
  r->Add(Comparison("NotEqual", kAllTypes, "x != y, as bool."));
  r->Add(BinaryOpOf("LogicalAnd", kBool, "x and y, with broadcasting."));
  r->Add(BinaryOpOf("LogicalOr", kBool, "x or y, with broadcasting."));
  r->Add(UnaryOp("LogicalNot", kBool, "not x."));
  {
    OpDef d;
    d.name = "Select";
    d.input_names = {"condition", "t", "e"};
    d.type_attr = "T";
    d.allowed_types = kAllTypes;
    d.summary = "t where condition holds, else e; all three broadcast.";
    d.infer = InferSelect;
    r->Add(std::move(d));
  }

  r->Add(UnaryOp("Neg", kNumericTypes, "-x."));
  r->Add(UnaryOp("Abs", kNumericTypes, "|x|."));
  r->Add(UnaryOp("Sign", kNumericTypes, "-1, 0 or 1 by the sign of x."));
  r->Add(UnaryOp("Square", kNumericTypes, "x * x."));
  r->Add(UnaryOp("Sqrt", kFloatTypes, "Square root."));
  r->Add(UnaryOp("Rsqrt", kFloatTypes, "1 / sqrt(x)."));
  r->Add(UnaryOp("Exp", kFloatTypes, "e^x."));
  r->Add(UnaryOp("Log", kFloatTypes, "Natural logarithm."));
  r->Add(UnaryOp("Relu", kNumericTypes, "max(x, 0)."));
  r->Add(UnaryOp("Sigmoid", kFloatTypes, "1 / (1 + e^-x)."));
  r->Add(UnaryOp("Tanh", kFloatTypes, "Hyperbolic tangent."));
  r->Add(UnaryOp("Identity", kAllTypes, "x, without copying."));
  {
    OpDef d;
    d.name = "Cast";
    d.input_names = {"x"};
    d.type_attr = "SrcT";
    d.allowed_types = kAllTypes;
    d.attrs = {AttrDef{"DstT", AttrType::kDtype, true, {}}};
    d.summary = "Converts x to DstT.";
    d.infer = InferCast;
    r->Add(std::move(d));
  }
}

}  // namespace weft
