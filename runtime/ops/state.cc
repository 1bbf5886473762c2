// Ops the runtime executes itself: sources of values (Const, Placeholder),
// state (Variable, Assign, AssignAdd) and NoOp.
#include "base/status.h"
#include "ops/registry.h"

namespace weft {
namespace {

ShapeInfo ShapeFromAttr(const AttrValue& v) {
  ShapeInfo s;
  s.rank = static_cast<int32_t>(v.i);
  s.dims = v.ints;
  return s;
}

// Assign and AssignAdd share everything but the dtypes they accept.
weft_status* InferAssign(InferenceContext& c) {
  if (c.input_ops[0] != "Variable")
    return c.Fail("input 0 must be a Variable's output, not a %s",
                  c.input_ops[0].c_str());
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  const ShapeInfo& var = c.input_shapes[0];
  const ShapeInfo& val = c.input_shapes[1];
  if (val.known_rank()) {
    bool ok = val.rank == var.rank;
    for (int32_t i = 0; ok && i < var.rank; ++i)
      ok = val.dims[i] < 0 || val.dims[i] == var.dims[i];
    if (!ok)
      return c.Fail("value of shape %s cannot be assigned to a variable of "
                    "shape %s", val.ToString().c_str(), var.ToString().c_str());
  }
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {var};
  return nullptr;
}

}  // namespace

void RegisterStateOps(OpRegistry* r) {
  {
    OpDef d;
    d.name = "Const";
    d.num_outputs = 1;
    d.exec = ExecKind::kConst;
    d.attrs = {Required("value", AttrType::kTensor)};
    d.summary = "A constant tensor held by the graph.";
    d.infer = [](InferenceContext& c) -> weft_status* {
      // A copy: SetAttr below may reallocate the attribute list.
      const TensorValue t = c.attr("value")->tensor;
      AttrValue dt;
      dt.type = AttrType::kDtype;
      dt.i = t.dtype;
      SetAttr(c.attrs, "dtype", dt);
      c.output_dtypes = {t.dtype};
      c.output_shapes = {ShapeInfo::Of(
          std::vector<int64_t>(t.dims.data(), t.dims.data() + t.dims.rank()))};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d;
    d.name = "Placeholder";
    d.exec = ExecKind::kPlaceholder;
    AttrValue unknown;
    unknown.i = -1;
    d.attrs = {Required("dtype", AttrType::kDtype),
               Optional("shape", AttrType::kShape, unknown)};
    d.summary = "An input that must be fed at run time.";
    d.infer = [](InferenceContext& c) -> weft_status* {
      auto dtype = static_cast<weft_dtype>(c.attr("dtype")->i);
      if (weft_dtype_size(dtype) == 0)
        return c.Fail("attribute dtype has invalid value %d",
                      static_cast<int>(dtype));
      c.output_dtypes = {dtype};
      c.output_shapes = {ShapeFromAttr(*c.attr("shape"))};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d;
    d.name = "Variable";
    d.exec = ExecKind::kVariable;
    d.stateful = true;
    d.attrs = {Required("dtype", AttrType::kDtype),
               Required("shape", AttrType::kShape)};
    d.summary = "Persistent mutable state owned by each session.";
    d.infer = [](InferenceContext& c) -> weft_status* {
      auto dtype = static_cast<weft_dtype>(c.attr("dtype")->i);
      if (weft_dtype_size(dtype) == 0)
        return c.Fail("attribute dtype has invalid value %d",
                      static_cast<int>(dtype));
      ShapeInfo s = ShapeFromAttr(*c.attr("shape"));
      if (!s.fully_known())
        return c.Fail("a variable needs a fully known shape, got %s",
                      s.ToString().c_str());
      c.output_dtypes = {dtype};
      c.output_shapes = {s};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d;
    d.name = "Assign";
    d.input_names = {"ref", "value"};
    d.exec = ExecKind::kAssign;
    d.num_refs = 1;
    d.stateful = true;
    d.type_attr = "T";
    d.summary = "Writes value into the variable; outputs the new value.";
    d.infer = InferAssign;
    r->Add(std::move(d));
  }
  {
    OpDef d;
    d.name = "AssignAdd";
    d.input_names = {"ref", "value"};
    d.exec = ExecKind::kAssignAdd;
    d.num_refs = 1;
    d.stateful = true;
    d.type_attr = "T";
    d.allowed_types = kNumericTypes;
    d.summary = "Adds value to the variable; outputs the new value.";
    d.infer = InferAssign;
    r->Add(std::move(d));
  }
  {
    OpDef d;
    d.name = "NoOp";
    d.num_outputs = 0;
    d.exec = ExecKind::kNoOp;
    d.summary = "Does nothing; groups control dependencies.";
    d.infer = [](InferenceContext&) -> weft_status* { return nullptr; };
    r->Add(std::move(d));
  }
  {
    // Run by the runtime on whatever device holds x: no kernel needed.
    OpDef d = UnaryOp("StopGradient", kAllTypes,
                      "x, unchanged; gradients do not flow through it.");
    d.exec = ExecKind::kForward;
    r->Add(std::move(d));
  }
}

}  // namespace weft
