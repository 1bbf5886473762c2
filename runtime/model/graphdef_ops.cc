// TensorFlow GraphDef import: from TensorFlow ops to Weft's.  Most ops are
// a row of the mapping table (Mappings): which data inputs the Weft node
// takes and where each of its attributes comes from (a TensorFlow
// attribute, or a constant input folded into one), built by ConvertTabled.
// Ops that need more (a check across inputs, several Weft nodes, outputs
// Weft does not compute) have a converter of their own below.
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/graphdef_import.h"

namespace weft {
namespace graphdef_import {
namespace {

// ---- Rules of the mapping table ----------------------------------------------

AttrRule Nhwc() {
  return {AttrRule::kNhwc, "data_format", nullptr, 0, AttrRule::kOptional};
}
AttrRule Padding() {
  return {AttrRule::kPadding, "padding", "padding", 0, AttrRule::kRequired};
}
AttrRule Bool(const char* name) {
  return {AttrRule::kBool, name, name, 0, AttrRule::kOptional};
}
AttrRule Int(const char* name) {
  return {AttrRule::kInt, name, name, 0, AttrRule::kRequired};
}
AttrRule IntOr(const char* name, int64_t dflt) {
  return {AttrRule::kInt, name, name, dflt, AttrRule::kOptional};
}
// `dflt` WEFT_DTYPE_INVALID: required.
AttrRule Dtype(const char* from, const char* to, weft_dtype dflt) {
  return {AttrRule::kDtype, from, to, dflt, AttrRule::kOptional};
}
AttrRule IntList(const char* name, AttrRule::Need need) {
  return {AttrRule::kIntList, name, name, 0, need};
}
AttrRule ConstInts(int input, const char* what, const char* to) {
  return {AttrRule::kConstInts, what, to, input, AttrRule::kRequired};
}
AttrRule ConstInt(int input, const char* what, const char* to) {
  return {AttrRule::kConstInt, what, to, input, AttrRule::kRequired};
}
AttrRule ConstFloat(int input, const char* what, const char* to) {
  return {AttrRule::kConstFloat, what, to, input, AttrRule::kRequired};
}

// An op built from `takes` data inputs, of which the Weft node takes `count`
// from `first`: by ConvertTabled, or by `convert`, which checks more.
OpMapping Tabled(const char* op, int takes, int first, int count,
                 std::vector<AttrRule> attrs = {},
                 Converter convert = &Importer::ConvertTabled) {
  return {convert, op, takes, first, count, std::move(attrs)};
}
// Every data input passed on, however many.
OpMapping Plain(const char* op, std::vector<AttrRule> attrs = {}) {
  return Tabled(op, -1, 0, 0, std::move(attrs));
}
OpMapping Custom(Converter convert, const char* op = nullptr) {
  return {convert, op, 0, 0, 0, {}};
}
// Sum, Mean, ...(input, reduction_indices) attr keep_dims.
OpMapping Reduction(const char* op) {
  return Tabled(op, 2, 0, 1,
                {ConstInts(1, "reduction_indices", "axes"), Bool("keep_dims")});
}
// ArgMax, ArgMin(input, dimension) attr output_type.
OpMapping ArgReduction(const char* op) {
  return Tabled(op, 2, 0, 1,
                {ConstInt(1, "dimension", "axis"),
                 Dtype("output_type", "output_type", WEFT_INT64)});
}
// MaxPool, AvgPool(input) attrs ksize, strides, padding, data_format.
OpMapping Pool(const char* op) {
  return Tabled(op, 1, 0, 1,
                {Nhwc(), IntList("ksize", AttrRule::kRequired),
                 IntList("strides", AttrRule::kRequired), Padding()});
}
OpMapping BatchMatMul() {
  return Tabled("BatchMatMul", 2, 0, 2, {Bool("adj_x"), Bool("adj_y")},
                &Importer::ConvertBatchMatMul);
}

const std::unordered_map<std::string, OpMapping>& Mappings() {
  using I = Importer;
  static const auto* const table = [] {
    auto* t = new std::unordered_map<std::string, OpMapping>{
      {"Placeholder", Custom(&I::ConvertPlaceholder)},
      {"Const", Custom(&I::ConvertConst)},
      {"NoOp", Tabled("NoOp", 0, 0, 0)},
      {"AddV2", Plain("Add")},
      {"SelectV2", Plain("Select")},
      {"Select", Custom(&I::ConvertSelect, "Select")},
      {"BiasAdd", Plain("BiasAdd", {Nhwc()})},
      {"BiasAddV1", Plain("BiasAdd", {Nhwc()})},
      {"MatMul", Tabled("MatMul", 2, 0, 2,
                        {Bool("transpose_a"), Bool("transpose_b")})},
      {"BatchMatMul", BatchMatMul()},
      {"BatchMatMulV2", BatchMatMul()},
      {"BatchMatMulV3", BatchMatMul()},
      {"Cast", Tabled("Cast", 1, 0, 1,
                      {Dtype("DstT", "DstT", WEFT_DTYPE_INVALID)})},
      {"Shape", Tabled("Shape", 1, 0, 1,
                       {Dtype("out_type", "out_type", WEFT_INT32)})},
      {"Size", Tabled("Size", 1, 0, 1,
                      {Dtype("out_type", "out_type", WEFT_INT32)})},
      {"Conv2D", Tabled("Conv2D", 2, 0, 2,
                        {Nhwc(), IntList("strides", AttrRule::kRequired),
                         IntList("dilations", AttrRule::kIfPresent),
                         Padding()})},
      {"MaxPool", Pool("MaxPool")},
      {"MaxPoolV2", Tabled("MaxPool", 3, 0, 1,
                           {Nhwc(), ConstInts(1, "ksize", "ksize"),
                            ConstInts(2, "strides", "strides"), Padding()})},
      {"AvgPool", Pool("AvgPool")},
      {"Reshape", Tabled("Reshape", 2, 0, 1, {ConstInts(1, "shape", "shape")})},
      {"Transpose", Tabled("Transpose", 2, 0, 1, {ConstInts(1, "perm", "perm")})},
      {"Sum", Reduction("Sum")},
      {"Mean", Reduction("Mean")},
      {"Max", Reduction("Max")},
      {"Min", Reduction("Min")},
      {"Prod", Reduction("Prod")},
      {"ArgMax", ArgReduction("ArgMax")},
      {"ArgMin", ArgReduction("ArgMin")},
      {"ConcatV2", Custom(&I::ConvertConcat, "Concat")},
      {"Concat", Custom(&I::ConvertConcat, "Concat")},
      {"Pack", Custom(&I::ConvertPack, "Pack")},
      {"Unpack", Tabled("Unpack", 1, 0, 1, {Int("num"), IntOr("axis", 0)})},
      // Split(axis, value).
      {"Split", Tabled("Split", 2, 1, 1,
                       {ConstInt(0, "split_dim", "axis"), Int("num_split")})},
      {"Squeeze", Tabled("Squeeze", 1, 0, 1,
                         // TensorFlow's empty list means every size-1 dim,
                         // as Weft's absent attribute does.
                         {IntList("squeeze_dims", AttrRule::kIfNotEmpty)})},
      {"ExpandDims", Tabled("ExpandDims", 2, 0, 1, {ConstInt(1, "dim", "axis")})},
      {"Pad", Custom(&I::ConvertPad, "Pad")},
      {"PadV2", Custom(&I::ConvertPad, "Pad")},
      {"Tile", Tabled("Tile", 2, 0, 1, {ConstInts(1, "multiples", "multiples")})},
      {"Slice", Tabled("Slice", 3, 0, 1,
                       {ConstInts(1, "begin", "begin"), ConstInts(2, "size", "size")})},
      // Fill(dims, value).
      {"Fill", Tabled("Fill", 2, 1, 1, {ConstInts(0, "dims", "shape")})},
      {"GatherV2", Custom(&I::ConvertGather, "Gather")},
      {"Gather", Custom(&I::ConvertGather, "Gather")},
      // OneHot(indices, depth, on_value, off_value).
      {"OneHot", Tabled("OneHot", 4, 0, 1,
                        {ConstInt(1, "depth", "depth"),
                         ConstFloat(2, "on_value", "on_value"),
                         ConstFloat(3, "off_value", "off_value"),
                         IntOr("axis", -1), Dtype("T", "dtype", WEFT_FLOAT32)})},
      {"FusedBatchNorm", Custom(&I::ConvertFusedBatchNorm)},
      {"FusedBatchNormV2", Custom(&I::ConvertFusedBatchNorm)},
      {"FusedBatchNormV3", Custom(&I::ConvertFusedBatchNorm)},
      {"Relu6", Custom(&I::ConvertRelu6)},
      {"LeakyRelu", Custom(&I::ConvertLeakyRelu)},
      {"AddN", Custom(&I::ConvertAddN)},
      {"SquaredDifference", Custom(&I::ConvertSquaredDifference)},
      {"Reciprocal", Custom(&I::ConvertReciprocal)},
      {"Inv", Custom(&I::ConvertReciprocal)},
    };
    // Unfed, PlaceholderWithDefault is its default: a frozen graph's
    // training switches.
    for (const char* op : {"Identity", "IdentityN", "StopGradient",
                           "PreventGradient", "Snapshot",
                           "PlaceholderWithDefault"})
      t->emplace(op, Custom(&I::ConvertAlias));
    // Ops Weft has under TensorFlow's name, taking every data input as it
    // comes.
    for (const char* op :
         {"Add", "Sub", "Mul", "Div", "RealDiv", "FloorDiv", "FloorMod", "Pow",
          "Maximum", "Minimum", "Greater", "GreaterEqual", "Less", "LessEqual",
          "Equal", "NotEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "Neg",
          "Abs", "Sign", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh",
          "Sigmoid", "Relu", "Softmax", "LogSoftmax", "ZerosLike", "OnesLike",
          "Rank"})
      t->emplace(op, Plain(op));
    return t;
  }();
  return *table;
}

const char* KindName(tf::AttrValue::ValueCase kind) {
  switch (kind) {
    case tf::AttrValue::kI: return "an int";
    case tf::AttrValue::kB: return "a bool";
    case tf::AttrValue::kF: return "a float";
    case tf::AttrValue::kS: return "a string";
    case tf::AttrValue::kList: return "a list of ints";
    case tf::AttrValue::kType: return "a dtype";
    case tf::AttrValue::kShape: return "a shape";
    default: return "of the kind expected";
  }
}

void SetIntList(weft_op_builder* b, const char* name,
                const std::vector<int64_t>& values) {
  weft_op_set_attr_int_list(b, name, values.data(),
                            static_cast<int32_t>(values.size()));
}

}  // namespace

const OpMapping* FindMapping(const std::string& op) {
  auto it = Mappings().find(op);
  return it == Mappings().end() ? nullptr : &it->second;
}

const char* KnownRefusal(const std::string& op) {
  static const char* const kVariables[] = {
      "VariableV2", "Variable", "VarHandleOp", "ReadVariableOp",
      "AssignVariableOp", "Assign", "AssignAdd", "AssignSub",
      "VarIsInitializedOp", "IsVariableInitialized", "ResourceGather",
      "TemporaryVariable"};
  for (const char* v : kVariables)
    if (op == v)
      return "the graph still holds variables: freeze the graph first "
             "(tf.compat.v1.graph_util.convert_variables_to_constants, or "
             "convert_variables_to_constants_v2), which turns them into "
             "constants";
  static const char* const kControlFlow[] = {
      "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond",
      "RefSwitch", "RefMerge", "RefEnter", "RefExit", "RefNextIteration"};
  for (const char* v : kControlFlow)
    if (op == v)
      return "TensorFlow 1.x control flow (tf.cond, tf.while_loop) is not "
             "imported";
  static const char* const kFunctions[] = {
      "PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf",
      "While", "StatelessWhile", "Case", "StatelessCase"};
  for (const char* v : kFunctions)
    if (op == v)
      return "function calls are not imported: inline them when freezing "
             "(convert_variables_to_constants_v2 does)";
  return nullptr;
}

// ---- Attributes ----------------------------------------------------------------

const tf::AttrValue* Importer::Attr(int n, const char* name) const {
  const auto& attrs = node(n).attr();
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

weft_status* Importer::TypedAttr(int n, const char* name,
                                 tf::AttrValue::ValueCase kind, bool required,
                                 const tf::AttrValue** out) const {
  *out = Attr(n, name);
  if (*out == nullptr)
    return required ? NodeError(WEFT_INVALID_ARGUMENT, n,
                                std::string("attribute ") + name +
                                    " is missing")
                    : nullptr;
  if ((*out)->value_case() != kind)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name + " is not " +
                         KindName(kind));
  return nullptr;
}

template <typename T, typename Get>
weft_status* Importer::ScalarAttr(int n, const char* name,
                                  tf::AttrValue::ValueCase kind, const T* dflt,
                                  T* out, Get get) const {
  const tf::AttrValue* a = nullptr;
  WEFT_RETURN_IF_ERROR(TypedAttr(n, name, kind, dflt == nullptr, &a));
  *out = a ? (a->*get)() : *dflt;
  return nullptr;
}

weft_status* Importer::AttrInt(int n, const char* name, const int64_t* dflt,
                               int64_t* out) const {
  return ScalarAttr(n, name, tf::AttrValue::kI, dflt, out, &tf::AttrValue::i);
}

weft_status* Importer::AttrBool(int n, const char* name, bool dflt,
                                bool* out) const {
  return ScalarAttr(n, name, tf::AttrValue::kB, &dflt, out, &tf::AttrValue::b);
}

weft_status* Importer::AttrFloat(int n, const char* name, const double* dflt,
                                 double* out) const {
  return ScalarAttr(n, name, tf::AttrValue::kF, dflt, out, &tf::AttrValue::f);
}

weft_status* Importer::AttrString(int n, const char* name, const char* dflt,
                                  std::string* out) const {
  std::string given = dflt ? dflt : "";
  return ScalarAttr(n, name, tf::AttrValue::kS, dflt ? &given : nullptr, out,
                    &tf::AttrValue::s);
}

weft_status* Importer::AttrIntList(int n, const char* name, bool required,
                                   std::vector<int64_t>* out,
                                   bool* present) const {
  const tf::AttrValue* a = nullptr;
  out->clear();
  if (present) *present = Attr(n, name) != nullptr;
  WEFT_RETURN_IF_ERROR(TypedAttr(n, name, tf::AttrValue::kList, required, &a));
  if (a) out->assign(a->list().i().begin(), a->list().i().end());
  return nullptr;
}

weft_status* Importer::AttrDtype(int n, const char* name, weft_dtype dflt,
                                 weft_dtype* out) const {
  const tf::AttrValue* a = nullptr;
  WEFT_RETURN_IF_ERROR(TypedAttr(n, name, tf::AttrValue::kType,
                                 dflt == WEFT_DTYPE_INVALID, &a));
  if (a == nullptr) {
    *out = dflt;
    return nullptr;
  }
  *out = WeftDtype(a->type());
  if (*out == WEFT_DTYPE_INVALID)  // CheckSupported refused these already
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "dtype " + TfDtypeName(a->type()) + " is not supported");
  return nullptr;
}

weft_status* Importer::CheckNhwc(int n) const {
  std::string format;
  WEFT_RETURN_IF_ERROR(AttrString(n, "data_format", "NHWC", &format));
  if (format != "NHWC" && format != "N...C")
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "data_format " + format +
                         " is not supported: Weft's ops take channels last "
                         "(NHWC); export the model with channels last");
  return nullptr;
}

weft_status* Importer::AttrPadding(int n, std::string* out) const {
  WEFT_RETURN_IF_ERROR(AttrString(n, "padding", nullptr, out));
  if (*out != "SAME" && *out != "VALID")
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "padding " + *out + " is not supported (SAME and VALID are)");
  return nullptr;
}

// ---- Ops the table describes -------------------------------------------------

weft_status* Importer::ReadRule(int n, const AttrRule& rule, RuleValue* v) {
  switch (rule.kind) {
    case AttrRule::kNhwc:
      return CheckNhwc(n);
    case AttrRule::kPadding:
      return AttrPadding(n, &v->s);
    case AttrRule::kBool: {
      bool b;
      WEFT_RETURN_IF_ERROR(AttrBool(n, rule.from, rule.value != 0, &b));
      v->i = b;
      return nullptr;
    }
    case AttrRule::kInt:
      return AttrInt(n, rule.from,
                     rule.need == AttrRule::kRequired ? nullptr : &rule.value,
                     &v->i);
    case AttrRule::kDtype:
      return AttrDtype(n, rule.from, static_cast<weft_dtype>(rule.value),
                       &v->dtype);
    case AttrRule::kIntList: {
      bool present = false;
      WEFT_RETURN_IF_ERROR(AttrIntList(n, rule.from,
                                       rule.need == AttrRule::kRequired,
                                       &v->ints, &present));
      v->set = rule.need == AttrRule::kIfPresent    ? present
               : rule.need == AttrRule::kIfNotEmpty ? !v->ints.empty()
                                                    : true;
      return nullptr;
    }
    case AttrRule::kConstInts:
      return ConstInts(n, static_cast<int>(rule.value), rule.from, &v->ints);
    case AttrRule::kConstInt:
      return ConstInt(n, static_cast<int>(rule.value), rule.from, &v->i);
    case AttrRule::kConstFloat:
      return ConstScalarFloat(n, static_cast<int>(rule.value), rule.from, &v->f);
  }
  return NodeError(WEFT_INTERNAL, n, "unknown attribute rule");
}

weft_status* Importer::ReadRules(int n, const OpMapping& m,
                                 std::vector<RuleValue>* values) {
  if (m.data_inputs >= 0) WEFT_RETURN_IF_ERROR(NeedDataInputs(n, m.data_inputs));
  values->resize(m.attrs.size());
  for (size_t i = 0; i < m.attrs.size(); ++i)
    WEFT_RETURN_IF_ERROR(ReadRule(n, m.attrs[i], &(*values)[i]));
  return nullptr;
}

weft_status* Importer::BuildTabled(int n, const OpMapping& m,
                                   const std::vector<RuleValue>& values) {
  std::vector<weft_output> in;
  if (m.data_inputs < 0)
    WEFT_RETURN_IF_ERROR(DataInputs(n, 0, DataInputCount(n), &in));
  else
    WEFT_RETURN_IF_ERROR(DataInputs(n, m.first_input, m.input_count, &in));
  auto set_attrs = [&](weft_op_builder* b) {
    for (size_t i = 0; i < m.attrs.size(); ++i) {
      const AttrRule& rule = m.attrs[i];
      const RuleValue& v = values[i];
      if (!v.set) continue;
      switch (rule.kind) {
        case AttrRule::kNhwc: break;
        case AttrRule::kPadding:
          weft_op_set_attr_string(b, rule.to, v.s.c_str());
          break;
        case AttrRule::kBool:
          weft_op_set_attr_bool(b, rule.to, static_cast<int32_t>(v.i));
          break;
        case AttrRule::kInt:
        case AttrRule::kConstInt: weft_op_set_attr_int(b, rule.to, v.i); break;
        case AttrRule::kDtype: weft_op_set_attr_dtype(b, rule.to, v.dtype); break;
        case AttrRule::kIntList:
        case AttrRule::kConstInts: SetIntList(b, rule.to, v.ints); break;
        case AttrRule::kConstFloat: weft_op_set_attr_float(b, rule.to, v.f); break;
      }
    }
  };
  return Build(n, m.weft_op, in, set_attrs, nullptr);
}

weft_status* Importer::ConvertTabled(int n, const OpMapping& m) {
  std::vector<RuleValue> values;
  WEFT_RETURN_IF_ERROR(ReadRules(n, m, &values));
  return BuildTabled(n, m, values);
}

weft_status* Importer::ConvertBatchMatMul(int n, const OpMapping& m) {
  std::vector<RuleValue> values;
  WEFT_RETURN_IF_ERROR(ReadRules(n, m, &values));
  if (Attr(n, "Tout") != nullptr) {  // V3: operand and result types
    weft_dtype ta, tout;
    WEFT_RETURN_IF_ERROR(AttrDtype(n, "Ta", WEFT_DTYPE_INVALID, &ta));
    WEFT_RETURN_IF_ERROR(AttrDtype(n, "Tout", WEFT_DTYPE_INVALID, &tout));
    if (ta != tout)
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       "a result dtype (Tout) other than the operands' is "
                       "not supported");
  }
  return BuildTabled(n, m, values);
}

// ---- Ops of their own ----------------------------------------------------------

weft_status* Importer::ConvertPlaceholder(int n, const OpMapping&) {
  weft_dtype dtype;
  WEFT_RETURN_IF_ERROR(AttrDtype(n, "dtype", WEFT_DTYPE_INVALID, &dtype));
  std::vector<int64_t> dims;
  int32_t rank = -1;
  const tf::AttrValue* a = nullptr;
  WEFT_RETURN_IF_ERROR(TypedAttr(n, "shape", tf::AttrValue::kShape, false, &a));
  if (a != nullptr && !a->shape().unknown_rank()) {
    const tf::TensorShapeProto& shape = a->shape();
    if (shape.dim_size() > WEFT_MAX_RANK)
      return NodeError(WEFT_INVALID_ARGUMENT, n, "shape has rank above " +
                                                    std::to_string(WEFT_MAX_RANK));
    for (const auto& d : shape.dim()) dims.push_back(d.size());
    rank = static_cast<int32_t>(dims.size());
  }
  return Build(n, "Placeholder", {},
               [&](weft_op_builder* b) {
                 weft_op_set_attr_dtype(b, "dtype", dtype);
                 weft_op_set_attr_shape(b, "shape", dims.data(), rank);
               },
               nullptr);
}

weft_status* Importer::ConvertConst(int, const OpMapping&) {
  return nullptr;  // built when first read (Materialize)
}

weft_status* Importer::ConvertAlias(int n, const OpMapping&) {
  int count = DataInputCount(n);
  if (node(n).op() != "IdentityN") WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  std::vector<weft_output> forwarded;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, count, &forwarded));
  bool has_control = count != static_cast<int>(inputs_[n].size());
  std::vector<weft_output> outs;
  if (!has_control) {
    outs = forwarded;
  } else {
    // Control inputs need a node to hang on: one Identity per output.
    for (int i = 0; i < count; ++i) {
      weft_node* built = nullptr;
      std::string name = i == 0 ? "" : HelperName(n, std::to_string(i));
      WEFT_RETURN_IF_ERROR(Build(n, "Identity", {forwarded[i]}, nullptr,
                                 &built, name, false, false));
      outs.push_back(weft_output{built, 0});
    }
  }
  Imported& imp = imported_[n];
  imp.built = true;
  imp.outputs = outs;
  imp.anchor = outs.empty() ? nullptr : outs[0].node;
  return nullptr;
}

// TensorFlow 1's Select with a vector condition picks rows; Weft's
// broadcasts, which agrees only when the ranks do (or for a scalar).
weft_status* Importer::ConvertSelect(int n, const OpMapping& m) {
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(AllDataInputs(n, 3, &in));
  int32_t cond_rank = -1, t_rank = -1;
  weft_status_destroy(weft_output_shape(in[0], nullptr, 0, &cond_rank));
  weft_status_destroy(weft_output_shape(in[1], nullptr, 0, &t_rank));
  if (cond_rank != 0 && (cond_rank < 0 || t_rank < 0 || cond_rank != t_rank))
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "a condition whose rank differs from the values' (or is "
                     "unknown) selects rows in TensorFlow 1's Select, which "
                     "Weft's Select does not do (SelectV2 is imported)");
  return Build(n, m.weft_op, in, nullptr, nullptr);
}

// ConcatV2(values..., axis); Concat(concat_dim, values...).
weft_status* Importer::ConvertConcat(int n, const OpMapping& m) {
  int64_t count;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "N", nullptr, &count));
  if (count < 1 || count > 1 << 20)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "attribute N is out of range");
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, static_cast<int>(count) + 1));
  bool v2 = node(n).op() == "ConcatV2";
  int64_t axis;
  WEFT_RETURN_IF_ERROR(ConstInt(n, v2 ? static_cast<int>(count) : 0, "axis", &axis));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, v2 ? 0 : 1, static_cast<int>(count), &in));
  return Build(n, m.weft_op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis); },
               nullptr, "", true);
}

weft_status* Importer::ConvertPack(int n, const OpMapping& m) {
  int64_t count, axis, zero = 0;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "N", nullptr, &count));
  WEFT_RETURN_IF_ERROR(AttrInt(n, "axis", &zero, &axis));
  if (count < 1 || count > 1 << 20)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "attribute N is out of range");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(AllDataInputs(n, static_cast<int>(count), &in));
  return Build(n, m.weft_op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis); },
               nullptr, "", true);
}

// Pad(input, paddings); PadV2(input, paddings, constant_values).
weft_status* Importer::ConvertPad(int n, const OpMapping& m) {
  bool v2 = node(n).op() == "PadV2";
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, v2 ? 3 : 2));
  std::vector<int64_t> paddings;  // [rank, 2] row-major: before, after
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "paddings", &paddings));
  double value = 0;
  if (v2) WEFT_RETURN_IF_ERROR(ConstScalarFloat(n, 2, "constant_values", &value));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, m.weft_op, in,
               [&](weft_op_builder* b) {
                 SetIntList(b, "paddings", paddings);
                 weft_op_set_attr_float(b, "constant_value", value);
               },
               nullptr);
}

// GatherV2(params, indices, axis) attr batch_dims; Gather(params, indices).
weft_status* Importer::ConvertGather(int n, const OpMapping& m) {
  bool v2 = node(n).op() == "GatherV2";
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, v2 ? 3 : 2));
  int64_t axis = 0;
  if (v2) {
    WEFT_RETURN_IF_ERROR(ConstInt(n, 2, "axis", &axis));
    int64_t batch_dims, zero = 0;
    WEFT_RETURN_IF_ERROR(AttrInt(n, "batch_dims", &zero, &batch_dims));
    if (batch_dims != 0)
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       "batch_dims " + std::to_string(batch_dims) +
                           " is not supported (0 is)");
  }
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 2, &in));
  return Build(n, m.weft_op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis); },
               nullptr);
}

// Inference only: y = (x - mean) / sqrt(variance + epsilon) * scale +
// offset, Weft's BatchNormWithGlobalNormalization.  The batch statistics
// (outputs 1 to 5) exist only in training and are not imported.
weft_status* Importer::ConvertFusedBatchNorm(int n, const OpMapping&) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 5));
  WEFT_RETURN_IF_ERROR(CheckNhwc(n));
  bool training;
  WEFT_RETURN_IF_ERROR(AttrBool(n, "is_training", true, &training));
  if (training)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "is_training is true: only inference batch "
                     "normalization (is_training false, as a frozen "
                     "inference graph has it) is imported");
  double default_epsilon = 1e-4, epsilon = default_epsilon;
  WEFT_RETURN_IF_ERROR(AttrFloat(n, "epsilon", &default_epsilon, &epsilon));
  std::vector<weft_output> in;  // x, scale, offset, mean, variance
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 5, &in));
  WEFT_RETURN_IF_ERROR(Build(n, "BatchNormWithGlobalNormalization",
                             {in[0], in[3], in[4], in[2], in[1]},
                             [&](weft_op_builder* b) {
                               weft_op_set_attr_float(b, "variance_epsilon", epsilon);
                               weft_op_set_attr_bool(b, "scale_after_normalization", 1);
                             },
                             nullptr));
  imported_[n].outputs.resize(node(n).op() == "FusedBatchNormV3" ? 6 : 5,
                              weft_output{nullptr, -1});
  return nullptr;
}

// min(relu(x), 6).
weft_status* Importer::ConvertRelu6(int n, const OpMapping&) {
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(AllDataInputs(n, 1, &in));
  weft_output six, relu;
  WEFT_RETURN_IF_ERROR(
      ScalarConstant(n, "six", weft_output_dtype(in[0]), 6, &six));
  WEFT_RETURN_IF_ERROR(BuildHelper(n, "Relu", in, "relu", &relu));
  return Build(n, "Minimum", {relu, six}, nullptr, nullptr);
}

// x where x > 0, alpha * x elsewhere: max(x, alpha x) for alpha <= 1,
// min(x, alpha x) above.
weft_status* Importer::ConvertLeakyRelu(int n, const OpMapping&) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  double default_alpha = 0.2, alpha = default_alpha;
  WEFT_RETURN_IF_ERROR(AttrFloat(n, "alpha", &default_alpha, &alpha));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  weft_output a, scaled;
  WEFT_RETURN_IF_ERROR(
      ScalarConstant(n, "alpha", weft_output_dtype(in[0]), alpha, &a));
  WEFT_RETURN_IF_ERROR(BuildHelper(n, "Mul", {in[0], a}, "scaled", &scaled));
  return Build(n, alpha <= 1 ? "Maximum" : "Minimum", {in[0], scaled},
               nullptr, nullptr);
}

// A chain of Adds, the last one named as the node.
weft_status* Importer::ConvertAddN(int n, const OpMapping&) {
  int count = DataInputCount(n);
  if (count < 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "has no data inputs");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, count, &in));
  if (count == 1) return Build(n, "Identity", in, nullptr, nullptr);
  weft_output sum = in[0];
  for (int i = 1; i < count - 1; ++i)
    WEFT_RETURN_IF_ERROR(
        BuildHelper(n, "Add", {sum, in[i]}, std::to_string(i), &sum));
  return Build(n, "Add", {sum, in[count - 1]}, nullptr, nullptr);
}

weft_status* Importer::ConvertSquaredDifference(int n, const OpMapping&) {
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(AllDataInputs(n, 2, &in));
  weft_output diff;
  WEFT_RETURN_IF_ERROR(BuildHelper(n, "Sub", in, "difference", &diff));
  return Build(n, "Square", {diff}, nullptr, nullptr);
}

weft_status* Importer::ConvertReciprocal(int n, const OpMapping&) {
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(AllDataInputs(n, 1, &in));
  weft_output one;
  WEFT_RETURN_IF_ERROR(
      ScalarConstant(n, "one", weft_output_dtype(in[0]), 1, &one));
  return Build(n, "Div", {one, in[0]}, nullptr, nullptr);
}

}  // namespace graphdef_import
}  // namespace weft
