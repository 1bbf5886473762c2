// Element-wise ops: arithmetic with broadcasting, unary math, Identity and
// Cast.
#include <algorithm>

#include "base/status.h"
#include "graph/op_registry.h"

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

void RegisterElementwiseOps(OpRegistry* r) {
  r->Add(BinaryOp("Add", "x + y with broadcasting."));
  r->Add(BinaryOp("Sub", "x - y with broadcasting."));
  r->Add(BinaryOp("Mul", "x * y with broadcasting."));
  r->Add(BinaryOp("Div", "x / y with broadcasting; integers truncate."));
  r->Add(UnaryOp("Neg", kNumericTypes, "-x."));
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
    d.infer = [](InferenceContext& c) -> weft_status* {
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
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
