// TensorFlow GraphDef import (issue 14): a frozen inference graph, as
// TensorFlow 1.x's convert_variables_to_constants (or TF2's
// convert_variables_to_constants_v2) writes it, rebuilt as a Weft graph
// through the public builder API.
//
// The pipeline: parse → index the nodes and their inputs → keep what the
// requested outputs need → refuse what Weft cannot run (op, attribute
// value, dtype), before building anything → sort topologically (GraphDef
// order is arbitrary) → build node by node.
//
// Weft takes as attributes what TensorFlow passes as tensors (Reshape's
// shape, Transpose's perm, reduction axes, ...; runtime/ops/CONVENTIONS.md
// says why), so those inputs are folded from the Const (or Identity of a
// Const) that produces them.  Consts are built lazily: one that only feeds
// attributes never becomes a node.  Identity and its kin become no node at
// all unless they carry control inputs.
//
// The input is untrusted: every index, dims product and content size is
// checked, and nothing here recurses on the input's structure.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "tf_graph.pb.h"
#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {
namespace {

// A constant written as fewer values than elements (tf.zeros([4096, 4096])
// is one float) is expanded up to this size; beyond it a few bytes of a
// hostile file would ask for gigabytes.
constexpr uint64_t kMaxExpandedConstantBytes = uint64_t{256} << 20;
// Elements of a constant folded into an attribute (shapes, axes, ...).
constexpr int64_t kMaxFoldedElements = 1 << 16;
// TensorFlow's reference dtypes are the base type plus this.
constexpr int kRefDtypeOffset = 100;

struct TfInput {
  int node = -1;   // index into GraphDef.node
  int index = 0;   // output of that node
  bool control = false;
};

// What a TensorFlow node became.
struct Imported {
  bool built = false;
  // Per TensorFlow output; node NULL where Weft has no such output
  // (FusedBatchNorm's statistics), refused when something reads it.
  std::vector<weft_output> outputs;
  // What a control input on this node waits for (NULL: nothing to wait
  // for, as for an Identity of a Placeholder, which waits for nothing).
  weft_node* anchor = nullptr;
};

// TensorFlow's names of its dtypes, for messages.
std::string TfDtypeName(int dtype) {
  static const char* const kNames[] = {
      "invalid", "float32",  "float64",   "int32",    "uint8",   "int16",
      "int8",    "string",   "complex64", "int64",    "bool",    "qint8",
      "quint8",  "qint32",   "bfloat16",  "qint16",   "quint16", "uint16",
      "complex128", "float16", "resource", "variant", "uint32",  "uint64"};
  if (dtype > kRefDtypeOffset && dtype <= kRefDtypeOffset + 23)
    return TfDtypeName(dtype - kRefDtypeOffset) + "_ref";
  if (dtype >= 0 && dtype < static_cast<int>(sizeof kNames / sizeof *kNames))
    return kNames[dtype];
  return "dtype " + std::to_string(dtype);
}

weft_dtype WeftDtype(int tf) {
  switch (tf) {
    case tf::DT_FLOAT: return WEFT_FLOAT32;
    case tf::DT_DOUBLE: return WEFT_FLOAT64;
    case tf::DT_INT32: return WEFT_INT32;
    case tf::DT_UINT8: return WEFT_UINT8;
    case tf::DT_INT16: return WEFT_INT16;
    case tf::DT_INT8: return WEFT_INT8;
    case tf::DT_INT64: return WEFT_INT64;
    case tf::DT_BOOL: return WEFT_BOOL;
    case tf::DT_BFLOAT16: return WEFT_BFLOAT16;
    case tf::DT_UINT16: return WEFT_UINT16;
    case tf::DT_HALF: return WEFT_FLOAT16;
    case tf::DT_UINT32: return WEFT_UINT32;
    case tf::DT_UINT64: return WEFT_UINT64;
    default: return WEFT_DTYPE_INVALID;
  }
}

// TensorFlow's rule for node names: [A-Za-z0-9.][A-Za-z0-9_./>-]*.  Names
// that break it are refused, which also keeps the helper nodes' names
// (with '#', below) from ever colliding with one.
bool ValidTfNodeName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool ok = isalnum(c) || c == '.' ||
              (i > 0 && (c == '_' || c == '/' || c == '>' || c == '-'));
    if (!ok) return false;
  }
  return true;
}

// Splits "name:3" into name and index (0 when absent).  False for an index
// that is not a small decimal number.
bool SplitOutputName(const std::string& s, std::string* name, int* index) {
  size_t colon = s.rfind(':');
  *index = 0;
  if (colon == std::string::npos) {
    *name = s;
    return true;
  }
  std::string digits = s.substr(colon + 1);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return false;
  *name = s.substr(0, colon);
  *index = std::stoi(digits);
  return true;
}

// A signature key from a node or "node:index" name: characters keys do not
// allow become '_', and a repeat gets a suffix.
std::string MakeKey(const std::string& from, std::unordered_set<std::string>* used) {
  std::string key = from.substr(0, 240);
  for (char& c : key)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' &&
        c != '/' && c != '-')
      c = '_';
  if (key.empty()) key = "output";
  std::string candidate = key;
  for (int k = 2; !used->insert(candidate).second; ++k)
    candidate = key + "_" + std::to_string(k);
  return candidate;
}

class Importer;
using Converter = weft_status* (Importer::*)(int node, const char* weft_op);

struct OpMapping {
  Converter convert;
  const char* weft_op;  // for converters that build one op
};

class Importer {
 public:
  Importer(const tf::GraphDef& graph_def, const std::string& path,
           weft_graph* graph)
      : gd_(graph_def), path_(path), graph_(graph) {}

  weft_status* Import(const std::vector<std::string>& outputs,
                      LoadedGraph* out);

  // Converters (see Mappings()).
  weft_status* ConvertPlaceholder(int n, const char*);
  weft_status* ConvertConst(int n, const char*);
  weft_status* ConvertAlias(int n, const char*);
  weft_status* ConvertNoOp(int n, const char*);
  weft_status* ConvertPlain(int n, const char* op);
  weft_status* ConvertNhwcPlain(int n, const char* op);
  weft_status* ConvertSelect(int n, const char* op);
  weft_status* ConvertMatMul(int n, const char* op);
  weft_status* ConvertBatchMatMul(int n, const char* op);
  weft_status* ConvertCast(int n, const char* op);
  weft_status* ConvertOutType(int n, const char* op);
  weft_status* ConvertConv2D(int n, const char* op);
  weft_status* ConvertPool(int n, const char* op);
  weft_status* ConvertReshape(int n, const char* op);
  weft_status* ConvertTranspose(int n, const char* op);
  weft_status* ConvertReduce(int n, const char* op);
  weft_status* ConvertArgMax(int n, const char* op);
  weft_status* ConvertConcat(int n, const char* op);
  weft_status* ConvertPack(int n, const char* op);
  weft_status* ConvertUnpack(int n, const char* op);
  weft_status* ConvertSplit(int n, const char* op);
  weft_status* ConvertSqueeze(int n, const char* op);
  weft_status* ConvertExpandDims(int n, const char* op);
  weft_status* ConvertPad(int n, const char* op);
  weft_status* ConvertTile(int n, const char* op);
  weft_status* ConvertSlice(int n, const char* op);
  weft_status* ConvertFill(int n, const char* op);
  weft_status* ConvertGather(int n, const char* op);
  weft_status* ConvertOneHot(int n, const char* op);
  weft_status* ConvertFusedBatchNorm(int n, const char* op);
  weft_status* ConvertRelu6(int n, const char* op);
  weft_status* ConvertLeakyRelu(int n, const char* op);
  weft_status* ConvertAddN(int n, const char* op);
  weft_status* ConvertSquaredDifference(int n, const char* op);
  weft_status* ConvertReciprocal(int n, const char* op);

 private:
  const tf::NodeDef& node(int n) const { return gd_.node(n); }

  // "cannot load 'PATH': node 'NAME' (OP): WHY"
  weft_status* NodeError(weft_code code, int n, const std::string& why) const;
  weft_status* FileError(weft_code code, const std::string& why) const {
    return Error(code, "cannot load '" + path_ + "': " + why);
  }

  weft_status* IndexNodes();
  weft_status* ResolveOutputs(const std::vector<std::string>& requested,
                              std::vector<TfInput>* outputs,
                              std::vector<std::string>* keys_from);
  weft_status* MarkNeeded(const std::vector<TfInput>& roots);
  weft_status* CheckSupported(int n);
  weft_status* SortNeeded(std::vector<int>* order);

  // Attributes, with the node named when one has the wrong kind.
  const tf::AttrValue* Attr(int n, const char* name) const;
  weft_status* AttrInt(int n, const char* name, const int64_t* dflt,
                       int64_t* out) const;
  weft_status* AttrBool(int n, const char* name, bool dflt, bool* out) const;
  weft_status* AttrFloat(int n, const char* name, const double* dflt,
                         double* out) const;
  weft_status* AttrString(int n, const char* name, const char* dflt,
                          std::string* out) const;
  weft_status* AttrIntList(int n, const char* name, bool required,
                           std::vector<int64_t>* out, bool* present) const;
  weft_status* AttrDtype(int n, const char* name, weft_dtype dflt,
                         weft_dtype* out) const;
  weft_status* CheckNhwc(int n) const;

  // Inputs.
  weft_status* NeedDataInputs(int n, int count) const;
  weft_status* DataInput(int n, int k, weft_output* out);
  weft_status* DataInputs(int n, int first, int count,
                          std::vector<weft_output>* out);
  weft_status* Anchor(int p, weft_node** out);
  // The constant behind data input `k` (through Identity), decoded.
  weft_status* ConstantInput(int n, int k, const char* what,
                             const tf::TensorProto** out);
  weft_status* ConstInts(int n, int k, const char* what,
                         std::vector<int64_t>* out);
  weft_status* ConstScalarFloat(int n, int k, const char* what, double* out);

  weft_status* DecodeTensor(int n, const tf::TensorProto& t,
                            int64_t max_elements, weft_dtype* dtype,
                            std::vector<int64_t>* dims,
                            std::string* bytes) const;
  weft_status* MakeTensor(int n, const tf::TensorProto& t, weft_tensor** out);
  weft_status* Materialize(int p);
  weft_status* ScalarConstant(int n, const std::string& name,
                              weft_dtype dtype, double value,
                              weft_output* out);

  // Builds a node of `op` for TensorFlow node n: named `name` (the
  // TensorFlow name when empty), with n's control inputs; `attrs` sets
  // attributes.  `record` makes its outputs n's.
  weft_status* Build(int n, const char* op, const std::vector<weft_output>& in,
                     const std::function<void(weft_op_builder*)>& attrs,
                     weft_node** out, const std::string& name = "",
                     bool as_list = false, bool record = true);
  void Record(int n, weft_node* built);

  const tf::GraphDef& gd_;
  const std::string path_;
  weft_graph* graph_;
  std::unordered_map<std::string, int> by_name_;
  std::vector<std::vector<TfInput>> inputs_;
  std::vector<char> needed_;
  std::vector<Imported> imported_;
};

const std::unordered_map<std::string, OpMapping>& Mappings() {
  static const auto* const table = new std::unordered_map<std::string,
                                                          OpMapping>{
      {"Placeholder", {&Importer::ConvertPlaceholder, nullptr}},
      {"Const", {&Importer::ConvertConst, nullptr}},
      {"Identity", {&Importer::ConvertAlias, nullptr}},
      {"IdentityN", {&Importer::ConvertAlias, nullptr}},
      {"StopGradient", {&Importer::ConvertAlias, nullptr}},
      {"PreventGradient", {&Importer::ConvertAlias, nullptr}},
      {"Snapshot", {&Importer::ConvertAlias, nullptr}},
      // Unfed, it is its default: a frozen graph's training switches.
      {"PlaceholderWithDefault", {&Importer::ConvertAlias, nullptr}},
      {"NoOp", {&Importer::ConvertNoOp, nullptr}},
      {"Add", {&Importer::ConvertPlain, "Add"}},
      {"AddV2", {&Importer::ConvertPlain, "Add"}},
      {"Sub", {&Importer::ConvertPlain, "Sub"}},
      {"Mul", {&Importer::ConvertPlain, "Mul"}},
      {"Div", {&Importer::ConvertPlain, "Div"}},
      {"RealDiv", {&Importer::ConvertPlain, "RealDiv"}},
      {"FloorDiv", {&Importer::ConvertPlain, "FloorDiv"}},
      {"FloorMod", {&Importer::ConvertPlain, "FloorMod"}},
      {"Pow", {&Importer::ConvertPlain, "Pow"}},
      {"Maximum", {&Importer::ConvertPlain, "Maximum"}},
      {"Minimum", {&Importer::ConvertPlain, "Minimum"}},
      {"Greater", {&Importer::ConvertPlain, "Greater"}},
      {"GreaterEqual", {&Importer::ConvertPlain, "GreaterEqual"}},
      {"Less", {&Importer::ConvertPlain, "Less"}},
      {"LessEqual", {&Importer::ConvertPlain, "LessEqual"}},
      {"Equal", {&Importer::ConvertPlain, "Equal"}},
      {"NotEqual", {&Importer::ConvertPlain, "NotEqual"}},
      {"LogicalAnd", {&Importer::ConvertPlain, "LogicalAnd"}},
      {"LogicalOr", {&Importer::ConvertPlain, "LogicalOr"}},
      {"LogicalNot", {&Importer::ConvertPlain, "LogicalNot"}},
      {"SelectV2", {&Importer::ConvertPlain, "Select"}},
      {"Select", {&Importer::ConvertSelect, "Select"}},
      {"Neg", {&Importer::ConvertPlain, "Neg"}},
      {"Abs", {&Importer::ConvertPlain, "Abs"}},
      {"Sign", {&Importer::ConvertPlain, "Sign"}},
      {"Square", {&Importer::ConvertPlain, "Square"}},
      {"Sqrt", {&Importer::ConvertPlain, "Sqrt"}},
      {"Rsqrt", {&Importer::ConvertPlain, "Rsqrt"}},
      {"Exp", {&Importer::ConvertPlain, "Exp"}},
      {"Log", {&Importer::ConvertPlain, "Log"}},
      {"Tanh", {&Importer::ConvertPlain, "Tanh"}},
      {"Sigmoid", {&Importer::ConvertPlain, "Sigmoid"}},
      {"Relu", {&Importer::ConvertPlain, "Relu"}},
      {"Softmax", {&Importer::ConvertPlain, "Softmax"}},
      {"LogSoftmax", {&Importer::ConvertPlain, "LogSoftmax"}},
      {"ZerosLike", {&Importer::ConvertPlain, "ZerosLike"}},
      {"OnesLike", {&Importer::ConvertPlain, "OnesLike"}},
      {"Rank", {&Importer::ConvertPlain, "Rank"}},
      {"BiasAdd", {&Importer::ConvertNhwcPlain, "BiasAdd"}},
      {"BiasAddV1", {&Importer::ConvertNhwcPlain, "BiasAdd"}},
      {"MatMul", {&Importer::ConvertMatMul, "MatMul"}},
      {"BatchMatMul", {&Importer::ConvertBatchMatMul, "BatchMatMul"}},
      {"BatchMatMulV2", {&Importer::ConvertBatchMatMul, "BatchMatMul"}},
      {"BatchMatMulV3", {&Importer::ConvertBatchMatMul, "BatchMatMul"}},
      {"Cast", {&Importer::ConvertCast, "Cast"}},
      {"Shape", {&Importer::ConvertOutType, "Shape"}},
      {"Size", {&Importer::ConvertOutType, "Size"}},
      {"Conv2D", {&Importer::ConvertConv2D, "Conv2D"}},
      {"MaxPool", {&Importer::ConvertPool, "MaxPool"}},
      {"MaxPoolV2", {&Importer::ConvertPool, "MaxPool"}},
      {"AvgPool", {&Importer::ConvertPool, "AvgPool"}},
      {"Reshape", {&Importer::ConvertReshape, "Reshape"}},
      {"Transpose", {&Importer::ConvertTranspose, "Transpose"}},
      {"Sum", {&Importer::ConvertReduce, "Sum"}},
      {"Mean", {&Importer::ConvertReduce, "Mean"}},
      {"Max", {&Importer::ConvertReduce, "Max"}},
      {"Min", {&Importer::ConvertReduce, "Min"}},
      {"Prod", {&Importer::ConvertReduce, "Prod"}},
      {"ArgMax", {&Importer::ConvertArgMax, "ArgMax"}},
      {"ArgMin", {&Importer::ConvertArgMax, "ArgMin"}},
      {"ConcatV2", {&Importer::ConvertConcat, "Concat"}},
      {"Concat", {&Importer::ConvertConcat, "Concat"}},
      {"Pack", {&Importer::ConvertPack, "Pack"}},
      {"Unpack", {&Importer::ConvertUnpack, "Unpack"}},
      {"Split", {&Importer::ConvertSplit, "Split"}},
      {"Squeeze", {&Importer::ConvertSqueeze, "Squeeze"}},
      {"ExpandDims", {&Importer::ConvertExpandDims, "ExpandDims"}},
      {"Pad", {&Importer::ConvertPad, "Pad"}},
      {"PadV2", {&Importer::ConvertPad, "Pad"}},
      {"Tile", {&Importer::ConvertTile, "Tile"}},
      {"Slice", {&Importer::ConvertSlice, "Slice"}},
      {"Fill", {&Importer::ConvertFill, "Fill"}},
      {"GatherV2", {&Importer::ConvertGather, "Gather"}},
      {"Gather", {&Importer::ConvertGather, "Gather"}},
      {"OneHot", {&Importer::ConvertOneHot, "OneHot"}},
      {"FusedBatchNorm", {&Importer::ConvertFusedBatchNorm, nullptr}},
      {"FusedBatchNormV2", {&Importer::ConvertFusedBatchNorm, nullptr}},
      {"FusedBatchNormV3", {&Importer::ConvertFusedBatchNorm, nullptr}},
      {"Relu6", {&Importer::ConvertRelu6, nullptr}},
      {"LeakyRelu", {&Importer::ConvertLeakyRelu, nullptr}},
      {"AddN", {&Importer::ConvertAddN, nullptr}},
      {"SquaredDifference", {&Importer::ConvertSquaredDifference, nullptr}},
      {"Reciprocal", {&Importer::ConvertReciprocal, nullptr}},
      {"Inv", {&Importer::ConvertReciprocal, nullptr}},
  };
  return *table;
}

// Ops refused with a reason more useful than "unknown op".
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

// ---- Errors and attributes --------------------------------------------------

weft_status* Importer::NodeError(weft_code code, int n,
                                 const std::string& why) const {
  return FileError(code, "node '" + node(n).name() + "' (" + node(n).op() +
                             "): " + why);
}

const tf::AttrValue* Importer::Attr(int n, const char* name) const {
  const auto& attrs = node(n).attr();
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

weft_status* Importer::AttrInt(int n, const char* name, const int64_t* dflt,
                               int64_t* out) const {
  const tf::AttrValue* a = Attr(n, name);
  if (a == nullptr) {
    if (dflt == nullptr)
      return NodeError(WEFT_INVALID_ARGUMENT, n,
                       std::string("attribute ") + name + " is missing");
    *out = *dflt;
    return nullptr;
  }
  if (a->value_case() != tf::AttrValue::kI)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name + " is not an int");
  *out = a->i();
  return nullptr;
}

weft_status* Importer::AttrBool(int n, const char* name, bool dflt,
                                bool* out) const {
  const tf::AttrValue* a = Attr(n, name);
  if (a == nullptr) {
    *out = dflt;
    return nullptr;
  }
  if (a->value_case() != tf::AttrValue::kB)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name + " is not a bool");
  *out = a->b();
  return nullptr;
}

weft_status* Importer::AttrFloat(int n, const char* name, const double* dflt,
                                 double* out) const {
  const tf::AttrValue* a = Attr(n, name);
  if (a == nullptr) {
    if (dflt == nullptr)
      return NodeError(WEFT_INVALID_ARGUMENT, n,
                       std::string("attribute ") + name + " is missing");
    *out = *dflt;
    return nullptr;
  }
  if (a->value_case() != tf::AttrValue::kF)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name + " is not a float");
  *out = a->f();
  return nullptr;
}

weft_status* Importer::AttrString(int n, const char* name, const char* dflt,
                                  std::string* out) const {
  const tf::AttrValue* a = Attr(n, name);
  if (a == nullptr) {
    if (dflt == nullptr)
      return NodeError(WEFT_INVALID_ARGUMENT, n,
                       std::string("attribute ") + name + " is missing");
    *out = dflt;
    return nullptr;
  }
  if (a->value_case() != tf::AttrValue::kS)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name + " is not a string");
  *out = a->s();
  return nullptr;
}

weft_status* Importer::AttrIntList(int n, const char* name, bool required,
                                   std::vector<int64_t>* out,
                                   bool* present) const {
  const tf::AttrValue* a = Attr(n, name);
  out->clear();
  if (present) *present = a != nullptr;
  if (a == nullptr)
    return required ? NodeError(WEFT_INVALID_ARGUMENT, n,
                                std::string("attribute ") + name +
                                    " is missing")
                    : nullptr;
  if (a->value_case() != tf::AttrValue::kList)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name +
                         " is not a list of ints");
  out->assign(a->list().i().begin(), a->list().i().end());
  return nullptr;
}

weft_status* Importer::AttrDtype(int n, const char* name, weft_dtype dflt,
                                 weft_dtype* out) const {
  const tf::AttrValue* a = Attr(n, name);
  if (a == nullptr) {
    if (dflt == WEFT_DTYPE_INVALID)
      return NodeError(WEFT_INVALID_ARGUMENT, n,
                       std::string("attribute ") + name + " is missing");
    *out = dflt;
    return nullptr;
  }
  if (a->value_case() != tf::AttrValue::kType)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("attribute ") + name + " is not a dtype");
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

// ---- Indexing, pruning, checking, sorting ----------------------------------

weft_status* Importer::IndexNodes() {
  int count = gd_.node_size();
  inputs_.resize(count);
  for (int n = 0; n < count; ++n) {
    const std::string& name = node(n).name();
    if (!ValidTfNodeName(name))
      return FileError(WEFT_INVALID_ARGUMENT,
                       "node " + std::to_string(n) + " has name '" +
                           name.substr(0, 200) +
                           "', which is not a valid TensorFlow node name");
    if (!by_name_.emplace(name, n).second)
      return FileError(WEFT_INVALID_ARGUMENT,
                       "two nodes are named '" + name + "'");
  }
  for (int n = 0; n < count; ++n) {
    for (const std::string& s : node(n).input()) {
      TfInput in;
      std::string producer;
      if (!s.empty() && s[0] == '^') {
        in.control = true;
        producer = s.substr(1);
      } else if (!SplitOutputName(s, &producer, &in.index)) {
        return NodeError(WEFT_INVALID_ARGUMENT, n,
                         "input '" + s.substr(0, 200) +
                             "' is not NODE, NODE:INDEX or ^NODE");
      }
      auto it = by_name_.find(producer);
      if (it == by_name_.end())
        return NodeError(WEFT_INVALID_ARGUMENT, n,
                         "input '" + s.substr(0, 200) +
                             "' names no node of the graph");
      in.node = it->second;
      inputs_[n].push_back(in);
    }
  }
  return nullptr;
}

weft_status* Importer::ResolveOutputs(const std::vector<std::string>& requested,
                                      std::vector<TfInput>* outputs,
                                      std::vector<std::string>* keys_from) {
  if (!requested.empty()) {
    for (const std::string& s : requested) {
      std::string name;
      TfInput out;
      auto it = by_name_.end();
      if (SplitOutputName(s, &name, &out.index)) it = by_name_.find(name);
      if (it == by_name_.end())
        return FileError(WEFT_INVALID_ARGUMENT,
                         "graphdef_outputs names '" + s +
                             "', which is no node (or NODE:INDEX) of the graph");
      out.node = it->second;
      outputs->push_back(out);
      keys_from->push_back(s);
    }
    return nullptr;
  }
  // Every node whose outputs nothing reads, NoOps aside.  Their output
  // count is known only once built, so Import expands them later.
  std::vector<char> read(gd_.node_size(), 0);
  for (const auto& ins : inputs_)
    for (const TfInput& in : ins)
      if (!in.control) read[in.node] = 1;
  for (int n = 0; n < gd_.node_size(); ++n) {
    if (read[n] || node(n).op() == "NoOp") continue;
    outputs->push_back(TfInput{n, -1, false});
    keys_from->push_back(node(n).name());
  }
  if (outputs->empty())
    return FileError(WEFT_INVALID_ARGUMENT,
                     "the graph has no node whose outputs nothing reads; "
                     "name the outputs (graphdef_outputs)");
  return nullptr;
}

weft_status* Importer::MarkNeeded(const std::vector<TfInput>& roots) {
  needed_.assign(gd_.node_size(), 0);
  std::vector<int> stack;
  for (const TfInput& r : roots) stack.push_back(r.node);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (needed_[n]) continue;
    needed_[n] = 1;
    for (const TfInput& in : inputs_[n])
      if (!needed_[in.node]) stack.push_back(in.node);
  }
  return nullptr;
}

weft_status* Importer::CheckSupported(int n) {
  const std::string& op = node(n).op();
  if (const char* why = KnownRefusal(op))
    return NodeError(WEFT_UNIMPLEMENTED, n, why);
  if (Mappings().count(op) == 0)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "op " + op + " has no Weft counterpart "
                     "(`weft ops` lists Weft's ops)");
  // Every dtype the node is typed by must be one Weft has.
  for (const auto& kv : node(n).attr()) {
    std::vector<int> types;
    if (kv.second.value_case() == tf::AttrValue::kType)
      types.push_back(kv.second.type());
    else if (kv.second.value_case() == tf::AttrValue::kList)
      types.assign(kv.second.list().type().begin(),
                   kv.second.list().type().end());
    else if (kv.second.value_case() == tf::AttrValue::kFunc)
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       "attribute " + kv.first +
                           " is a function: function calls are not imported");
    for (int t : types) {
      if (t > kRefDtypeOffset && WeftDtype(t - kRefDtypeOffset) != WEFT_DTYPE_INVALID)
        return NodeError(WEFT_UNIMPLEMENTED, n,
                         "attribute " + kv.first + " is " + TfDtypeName(t) +
                             ", a reference to a variable: freeze the graph "
                             "first (convert_variables_to_constants)");
      if (WeftDtype(t) == WEFT_DTYPE_INVALID)
        return NodeError(WEFT_UNIMPLEMENTED, n,
                         "attribute " + kv.first + " is dtype " +
                             TfDtypeName(t) + ", which Weft does not have");
    }
  }
  return nullptr;
}

// Kahn's algorithm over the needed nodes, data and control edges alike.
weft_status* Importer::SortNeeded(std::vector<int>* order) {
  int count = gd_.node_size();
  std::vector<int> pending(count, 0);
  std::vector<std::vector<int>> readers(count);
  for (int n = 0; n < count; ++n) {
    if (!needed_[n]) continue;
    for (const TfInput& in : inputs_[n]) {
      ++pending[n];
      readers[in.node].push_back(n);
    }
  }
  std::vector<int> ready;
  for (int n = count - 1; n >= 0; --n)
    if (needed_[n] && pending[n] == 0) ready.push_back(n);
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    order->push_back(n);
    for (int r : readers[n])
      if (--pending[r] == 0) ready.push_back(r);
  }
  for (int n = 0; n < count; ++n) {
    if (!needed_[n] || pending[n] == 0) continue;
    // Every node left waits on another node left: walking inputs that are
    // still pending count steps lands on the cycle itself.
    int at = n;
    for (int step = 0; step < count; ++step)
      for (const TfInput& in : inputs_[at])
        if (pending[in.node] > 0) {
          at = in.node;
          break;
        }
    return NodeError(WEFT_INVALID_ARGUMENT, at,
                     "the graph has a cycle through this node (Weft imports "
                     "no TensorFlow loops)");
  }
  return nullptr;
}

// ---- Inputs and constants ----------------------------------------------------

weft_status* Importer::NeedDataInputs(int n, int count) const {
  int have = 0;
  for (const TfInput& in : inputs_[n]) have += in.control ? 0 : 1;
  if (have != count)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     "has " + std::to_string(have) + " data inputs; " +
                         node(n).op() + " takes " + std::to_string(count));
  return nullptr;
}

// Data input k (control inputs skipped), or NULL.
const TfInput* NthDataInput(const std::vector<TfInput>& inputs, int k) {
  for (const TfInput& in : inputs)
    if (!in.control && k-- == 0) return &in;
  return nullptr;
}

weft_status* Importer::DataInput(int n, int k, weft_output* out) {
  const TfInput* in = NthDataInput(inputs_[n], k);
  if (in == nullptr)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     "has no data input " + std::to_string(k));
  int p = in->node;
  WEFT_RETURN_IF_ERROR(Materialize(p));
  const Imported& from = imported_[p];
  if (in->index < 0 || in->index >= static_cast<int>(from.outputs.size()))
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     "reads output " + std::to_string(in->index) + " of '" +
                         node(p).name() + "' (" + node(p).op() +
                         "), which has " +
                         std::to_string(from.outputs.size()));
  if (from.outputs[in->index].node == nullptr)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "reads output " + std::to_string(in->index) + " of '" +
                         node(p).name() + "' (" + node(p).op() +
                         "), which Weft does not compute");
  *out = from.outputs[in->index];
  return nullptr;
}

weft_status* Importer::DataInputs(int n, int first, int count,
                                  std::vector<weft_output>* out) {
  for (int k = first; k < first + count; ++k) {
    weft_output o;
    WEFT_RETURN_IF_ERROR(DataInput(n, k, &o));
    out->push_back(o);
  }
  return nullptr;
}

weft_status* Importer::Anchor(int p, weft_node** out) {
  WEFT_RETURN_IF_ERROR(Materialize(p));
  *out = imported_[p].anchor;
  return nullptr;
}

weft_status* Importer::ConstantInput(int n, int k, const char* what,
                                     const tf::TensorProto** out) {
  const TfInput* in = NthDataInput(inputs_[n], k);
  if (in == nullptr)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("has no input ") + what);
  int p = in->node;
  // Through Identity: frozen graphs read their constants through the
  // variables' old `read` Identity nodes.  Sorting refused cycles, so
  // this ends; the bound is for certainty.
  for (int hops = 0; hops < gd_.node_size() && node(p).op() == "Identity" &&
                     in->index == 0;
       ++hops) {
    const TfInput* next = NthDataInput(inputs_[p], 0);
    if (next == nullptr) break;
    in = next;
    p = in->node;
  }
  if (node(p).op() != "Const" || in->index != 0)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     std::string("input ") + what + " comes from '" +
                         node(p).name() + "' (" + node(p).op() +
                         "), computed when the graph runs; Weft takes " +
                         what + " as an attribute and needs a constant");
  const tf::AttrValue* v = Attr(p, "value");
  if (v == nullptr || v->value_case() != tf::AttrValue::kTensor)
    return NodeError(WEFT_INVALID_ARGUMENT, p, "has no tensor attribute value");
  *out = &v->tensor();
  return nullptr;
}

weft_status* Importer::ConstInts(int n, int k, const char* what,
                                 std::vector<int64_t>* out) {
  const tf::TensorProto* t = nullptr;
  WEFT_RETURN_IF_ERROR(ConstantInput(n, k, what, &t));
  weft_dtype dtype;
  std::vector<int64_t> dims;
  std::string bytes;
  WEFT_RETURN_IF_ERROR(
      DecodeTensor(n, *t, kMaxFoldedElements, &dtype, &dims, &bytes));
  out->clear();
  if (dtype == WEFT_INT32) {
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      int32_t v;
      memcpy(&v, bytes.data() + i, 4);
      out->push_back(v);
    }
  } else if (dtype == WEFT_INT64) {
    for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
      int64_t v;
      memcpy(&v, bytes.data() + i, 8);
      out->push_back(v);
    }
  } else {
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("input ") + what + " is " +
                         weft_dtype_name(dtype) + ", not int32 or int64");
  }
  return nullptr;
}

weft_status* Importer::ConstScalarFloat(int n, int k, const char* what,
                                        double* out) {
  const tf::TensorProto* t = nullptr;
  WEFT_RETURN_IF_ERROR(ConstantInput(n, k, what, &t));
  weft_dtype dtype;
  std::vector<int64_t> dims;
  std::string bytes;
  WEFT_RETURN_IF_ERROR(DecodeTensor(n, *t, 1 << 10, &dtype, &dims, &bytes));
  size_t size = weft_dtype_size(dtype);
  if (size == 0 || bytes.size() != size)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("input ") + what + " is not a scalar");
  const char* p = bytes.data();
  switch (dtype) {
    case WEFT_FLOAT32: { float v; memcpy(&v, p, 4); *out = v; break; }
    case WEFT_FLOAT64: memcpy(out, p, 8); break;
    case WEFT_INT32: { int32_t v; memcpy(&v, p, 4); *out = v; break; }
    case WEFT_INT64: { int64_t v; memcpy(&v, p, 8); *out = static_cast<double>(v); break; }
    case WEFT_UINT8: *out = static_cast<unsigned char>(*p); break;
    case WEFT_BOOL: *out = *p != 0; break;
    default:
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       std::string("input ") + what + " is " +
                           weft_dtype_name(dtype) +
                           "; Weft folds it only from float or int values");
  }
  return nullptr;
}

// Appends `count` elements of `size` bytes taken from the typed field
// values: all of them, none (zeros), or fewer with the last repeated.
template <typename Field, typename Convert>
weft_status* ExpandValues(const Field& values, int64_t count, size_t size,
                          Convert convert, std::string* bytes,
                          const std::function<weft_status*(const std::string&)>& fail) {
  int64_t have = values.size();
  if (have > count)
    return fail("holds " + std::to_string(have) + " values for " +
                std::to_string(count) + " elements");
  bytes->assign(static_cast<size_t>(count) * size, '\0');
  if (have == 0) return nullptr;
  for (int64_t i = 0; i < count; ++i)
    convert(values.Get(static_cast<int>(std::min(i, have - 1))),
            &(*bytes)[static_cast<size_t>(i) * size]);
  return nullptr;
}

template <typename T>
void StoreAs(T v, char* to) { memcpy(to, &v, sizeof v); }

weft_status* Importer::DecodeTensor(int n, const tf::TensorProto& t,
                                    int64_t max_elements, weft_dtype* dtype,
                                    std::vector<int64_t>* dims,
                                    std::string* bytes) const {
  auto fail = [&](const std::string& why) {
    return NodeError(WEFT_DATA_LOSS, n, "constant " + why);
  };
  *dtype = WeftDtype(t.dtype());
  if (*dtype == WEFT_DTYPE_INVALID)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "a constant of dtype " + TfDtypeName(t.dtype()) +
                         ", which Weft does not have");
  if (t.tensor_shape().unknown_rank() ||
      t.tensor_shape().dim_size() > WEFT_MAX_RANK)
    return fail("has an unknown rank or one above " +
                std::to_string(WEFT_MAX_RANK));
  int64_t count = 1;
  dims->clear();
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() < 0) return fail("has a negative dimension");
    if (__builtin_mul_overflow(count, d.size(), &count) ||
        count > (int64_t{1} << 48))
      return fail("has more than 2^48 elements");
    dims->push_back(d.size());
  }
  size_t size = weft_dtype_size(*dtype);
  if (count > max_elements ||
      static_cast<uint64_t>(count) * size > kMaxExpandedConstantBytes) {
    // Stored in full, any size the file holds is fine; expanded, it is
    // capped.
    bool full = !t.tensor_content().empty() &&
                t.tensor_content().size() == static_cast<uint64_t>(count) * size;
    if (count > max_elements || !full)
      return NodeError(WEFT_RESOURCE_EXHAUSTED, n,
                       "constant of " + std::to_string(count) +
                           " elements is larger than Weft expands here");
  }
  if (!t.tensor_content().empty()) {
    if (t.tensor_content().size() != static_cast<uint64_t>(count) * size)
      return fail("content holds " + std::to_string(t.tensor_content().size()) +
                  " bytes; " + std::to_string(count) + " elements of " +
                  weft_dtype_name(*dtype) + " need " +
                  std::to_string(static_cast<uint64_t>(count) * size));
    *bytes = t.tensor_content();  // little-endian, as the host
    return nullptr;
  }
  switch (*dtype) {
    case WEFT_FLOAT32:
      return ExpandValues(t.float_val(), count, size,
                          [](float v, char* to) { StoreAs(v, to); }, bytes, fail);
    case WEFT_FLOAT64:
      return ExpandValues(t.double_val(), count, size,
                          [](double v, char* to) { StoreAs(v, to); }, bytes, fail);
    case WEFT_INT32:
      return ExpandValues(t.int_val(), count, size,
                          [](int32_t v, char* to) { StoreAs(v, to); }, bytes, fail);
    case WEFT_INT16:
      return ExpandValues(t.int_val(), count, size,
                          [](int32_t v, char* to) { StoreAs(static_cast<int16_t>(v), to); },
                          bytes, fail);
    case WEFT_UINT16:
      return ExpandValues(t.int_val(), count, size,
                          [](int32_t v, char* to) { StoreAs(static_cast<uint16_t>(v), to); },
                          bytes, fail);
    case WEFT_INT8:
    case WEFT_UINT8:
      return ExpandValues(t.int_val(), count, size,
                          [](int32_t v, char* to) { *to = static_cast<char>(v); },
                          bytes, fail);
    case WEFT_INT64:
      return ExpandValues(t.int64_val(), count, size,
                          [](int64_t v, char* to) { StoreAs(v, to); }, bytes, fail);
    case WEFT_UINT32:
      return ExpandValues(t.uint32_val(), count, size,
                          [](uint32_t v, char* to) { StoreAs(v, to); }, bytes, fail);
    case WEFT_UINT64:
      return ExpandValues(t.uint64_val(), count, size,
                          [](uint64_t v, char* to) { StoreAs(v, to); }, bytes, fail);
    case WEFT_BOOL:
      return ExpandValues(t.bool_val(), count, size,
                          [](bool v, char* to) { *to = v ? 1 : 0; }, bytes, fail);
    case WEFT_FLOAT16:
    case WEFT_BFLOAT16:
      return ExpandValues(t.half_val(), count, size,
                          [](int32_t v, char* to) { StoreAs(static_cast<uint16_t>(v), to); },
                          bytes, fail);
    default:
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       std::string("a constant of dtype ") +
                           weft_dtype_name(*dtype) + " cannot be read");
  }
}

weft_status* Importer::MakeTensor(int n, const tf::TensorProto& t,
                                  weft_tensor** out) {
  weft_dtype dtype;
  std::vector<int64_t> dims;
  std::string bytes;
  WEFT_RETURN_IF_ERROR(DecodeTensor(n, t, int64_t{1} << 48, &dtype, &dims, &bytes));
  return weft_tensor_create_copy(dtype, dims.data(),
                                 static_cast<int32_t>(dims.size()),
                                 bytes.data(), bytes.size(), out);
}

// Builds a Const the first time something needs it as a node.
weft_status* Importer::Materialize(int p) {
  if (imported_[p].built) return nullptr;
  if (node(p).op() != "Const")
    return NodeError(WEFT_INTERNAL, p, "read before it was imported");
  const tf::AttrValue* v = Attr(p, "value");
  if (v == nullptr || v->value_case() != tf::AttrValue::kTensor)
    return NodeError(WEFT_INVALID_ARGUMENT, p, "has no tensor attribute value");
  weft_dtype declared;
  WEFT_RETURN_IF_ERROR(AttrDtype(p, "dtype", WeftDtype(v->tensor().dtype()),
                                 &declared));
  if (declared != WeftDtype(v->tensor().dtype()))
    return NodeError(WEFT_INVALID_ARGUMENT, p,
                     "attribute dtype says " + std::string(weft_dtype_name(declared)) +
                         " but its value is " + TfDtypeName(v->tensor().dtype()));
  weft_tensor* value = nullptr;
  WEFT_RETURN_IF_ERROR(MakeTensor(p, v->tensor(), &value));
  weft_status* s = Build(p, "Const", {},
                         [&](weft_op_builder* b) {
                           weft_op_set_attr_tensor(b, "value", value);
                         },
                         nullptr);
  weft_tensor_destroy(value);
  return s;
}

weft_status* Importer::ScalarConstant(int n, const std::string& name,
                                      weft_dtype dtype, double value,
                                      weft_output* out) {
  char data[8];
  switch (dtype) {
    case WEFT_FLOAT32: StoreAs(static_cast<float>(value), data); break;
    case WEFT_FLOAT64: StoreAs(value, data); break;
    case WEFT_INT32: StoreAs(static_cast<int32_t>(value), data); break;
    case WEFT_INT64: StoreAs(static_cast<int64_t>(value), data); break;
    default:
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       std::string("Weft imports it for float32, float64, "
                                   "int32 and int64, not ") +
                           weft_dtype_name(dtype));
  }
  weft_tensor* t = nullptr;
  WEFT_RETURN_IF_ERROR(weft_tensor_create_copy(dtype, nullptr, 0, data,
                                               weft_dtype_size(dtype), &t));
  weft_node* built = nullptr;
  weft_status* s = Build(n, "Const", {},
                         [&](weft_op_builder* b) {
                           weft_op_set_attr_tensor(b, "value", t);
                         },
                         &built, name, false, false);
  weft_tensor_destroy(t);
  if (s == nullptr) *out = weft_output{built, 0};
  return s;
}

// ---- Building --------------------------------------------------------------

void Importer::Record(int n, weft_node* built) {
  Imported& imp = imported_[n];
  imp.built = true;
  imp.anchor = built;
  imp.outputs.clear();
  for (int32_t i = 0; i < weft_node_num_outputs(built); ++i)
    imp.outputs.push_back(weft_output{built, i});
}

weft_status* Importer::Build(int n, const char* op,
                             const std::vector<weft_output>& in,
                             const std::function<void(weft_op_builder*)>& attrs,
                             weft_node** out, const std::string& name,
                             bool as_list, bool record) {
  std::vector<weft_node*> controls;
  for (const TfInput& c : inputs_[n]) {
    if (!c.control) continue;
    weft_node* a = nullptr;
    WEFT_RETURN_IF_ERROR(Anchor(c.node, &a));
    if (a != nullptr) controls.push_back(a);
  }
  const std::string& node_name = name.empty() ? node(n).name() : name;
  weft_op_builder* b = weft_op_begin(graph_, op, node_name.c_str());
  if (as_list)
    weft_op_add_input_list(b, in.data(), static_cast<int32_t>(in.size()));
  else
    for (const weft_output& o : in) weft_op_add_input(b, o);
  for (weft_node* c : controls) weft_op_add_control_input(b, c);
  if (attrs) attrs(b);
  weft_node* built = nullptr;
  weft_status* s = weft_op_finish(b, &built);
  if (s != nullptr) return Annotate(s, "cannot load '" + path_ + "': ");
  if (record) Record(n, built);
  if (out) *out = built;
  return nullptr;
}

// ---- Converters --------------------------------------------------------------

weft_status* Importer::ConvertPlaceholder(int n, const char*) {
  weft_dtype dtype;
  WEFT_RETURN_IF_ERROR(AttrDtype(n, "dtype", WEFT_DTYPE_INVALID, &dtype));
  std::vector<int64_t> dims;
  int32_t rank = -1;
  if (const tf::AttrValue* a = Attr(n, "shape")) {
    if (a->value_case() != tf::AttrValue::kShape)
      return NodeError(WEFT_INVALID_ARGUMENT, n, "attribute shape is not a shape");
    const tf::TensorShapeProto& shape = a->shape();
    if (!shape.unknown_rank()) {
      if (shape.dim_size() > WEFT_MAX_RANK)
        return NodeError(WEFT_INVALID_ARGUMENT, n, "shape has rank above " +
                                                      std::to_string(WEFT_MAX_RANK));
      for (const auto& d : shape.dim()) dims.push_back(d.size());
      rank = static_cast<int32_t>(dims.size());
    }
  }
  return Build(n, "Placeholder", {},
               [&](weft_op_builder* b) {
                 weft_op_set_attr_dtype(b, "dtype", dtype);
                 weft_op_set_attr_shape(b, "shape", dims.data(), rank);
               },
               nullptr);
}

weft_status* Importer::ConvertConst(int, const char*) {
  return nullptr;  // built when first read (Materialize)
}

weft_status* Importer::ConvertAlias(int n, const char*) {
  int count = 0;
  for (const TfInput& in : inputs_[n]) count += in.control ? 0 : 1;
  if (node(n).op() != "IdentityN") WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  std::vector<weft_output> forwarded;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, count, &forwarded));
  bool has_control = count != static_cast<int>(inputs_[n].size());
  Imported& imp = imported_[n];
  if (!has_control) {
    imp.built = true;
    imp.outputs = forwarded;
    imp.anchor = forwarded.empty() ? nullptr : forwarded[0].node;
    return nullptr;
  }
  // Control inputs need a node to hang on: one Identity per output.
  std::vector<weft_output> outs;
  for (int i = 0; i < count; ++i) {
    weft_node* built = nullptr;
    std::string name = i == 0 ? "" : node(n).name() + "#" + std::to_string(i);
    WEFT_RETURN_IF_ERROR(Build(n, "Identity", {forwarded[i]}, nullptr, &built,
                               name, false, false));
    outs.push_back(weft_output{built, 0});
  }
  imp.built = true;
  imp.outputs = outs;
  imp.anchor = outs.empty() ? nullptr : outs[0].node;
  return nullptr;
}

weft_status* Importer::ConvertNoOp(int n, const char*) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 0));
  return Build(n, "NoOp", {}, nullptr, nullptr);
}

weft_status* Importer::ConvertPlain(int n, const char* op) {
  int count = 0;
  for (const TfInput& in : inputs_[n]) count += in.control ? 0 : 1;
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, count, &in));
  return Build(n, op, in, nullptr, nullptr);
}

weft_status* Importer::ConvertNhwcPlain(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(CheckNhwc(n));
  return ConvertPlain(n, op);
}

// TensorFlow 1's Select with a vector condition picks rows; Weft's
// broadcasts, which agrees only when the ranks do (or for a scalar).
weft_status* Importer::ConvertSelect(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 3));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 3, &in));
  int32_t cond_rank = -1, t_rank = -1;
  weft_status_destroy(weft_output_shape(in[0], nullptr, 0, &cond_rank));
  weft_status_destroy(weft_output_shape(in[1], nullptr, 0, &t_rank));
  if (cond_rank != 0 && (cond_rank < 0 || t_rank < 0 || cond_rank != t_rank))
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "a condition whose rank differs from the values' (or is "
                     "unknown) selects rows in TensorFlow 1's Select, which "
                     "Weft's Select does not do (SelectV2 is imported)");
  return Build(n, op, in, nullptr, nullptr);
}

weft_status* Importer::ConvertMatMul(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  bool ta, tb;
  WEFT_RETURN_IF_ERROR(AttrBool(n, "transpose_a", false, &ta));
  WEFT_RETURN_IF_ERROR(AttrBool(n, "transpose_b", false, &tb));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 2, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_bool(b, "transpose_a", ta);
                 weft_op_set_attr_bool(b, "transpose_b", tb);
               },
               nullptr);
}

weft_status* Importer::ConvertBatchMatMul(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  bool ax, ay;
  WEFT_RETURN_IF_ERROR(AttrBool(n, "adj_x", false, &ax));
  WEFT_RETURN_IF_ERROR(AttrBool(n, "adj_y", false, &ay));
  if (Attr(n, "Tout") != nullptr) {  // V3: operand and result types
    weft_dtype ta, tout;
    WEFT_RETURN_IF_ERROR(AttrDtype(n, "Ta", WEFT_DTYPE_INVALID, &ta));
    WEFT_RETURN_IF_ERROR(AttrDtype(n, "Tout", WEFT_DTYPE_INVALID, &tout));
    if (ta != tout)
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       "a result dtype (Tout) other than the operands' is "
                       "not supported");
  }
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 2, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_bool(b, "adj_x", ax);
                 weft_op_set_attr_bool(b, "adj_y", ay);
               },
               nullptr);
}

weft_status* Importer::ConvertCast(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  weft_dtype dst;
  WEFT_RETURN_IF_ERROR(AttrDtype(n, "DstT", WEFT_DTYPE_INVALID, &dst));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_dtype(b, "DstT", dst); },
               nullptr);
}

weft_status* Importer::ConvertOutType(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  weft_dtype out_type;
  WEFT_RETURN_IF_ERROR(AttrDtype(n, "out_type", WEFT_INT32, &out_type));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_dtype(b, "out_type", out_type);
               },
               nullptr);
}

weft_status* Importer::ConvertConv2D(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  WEFT_RETURN_IF_ERROR(CheckNhwc(n));
  std::vector<int64_t> strides, dilations;
  bool has_dilations = false;
  std::string padding;
  WEFT_RETURN_IF_ERROR(AttrIntList(n, "strides", true, &strides, nullptr));
  WEFT_RETURN_IF_ERROR(AttrIntList(n, "dilations", false, &dilations, &has_dilations));
  WEFT_RETURN_IF_ERROR(AttrString(n, "padding", nullptr, &padding));
  if (padding != "SAME" && padding != "VALID")
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "padding " + padding + " is not supported (SAME and VALID are)");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 2, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "strides", strides.data(),
                                           static_cast<int32_t>(strides.size()));
                 if (has_dilations)
                   weft_op_set_attr_int_list(b, "dilations", dilations.data(),
                                             static_cast<int32_t>(dilations.size()));
                 weft_op_set_attr_string(b, "padding", padding.c_str());
               },
               nullptr);
}

weft_status* Importer::ConvertPool(int n, const char* op) {
  bool v2 = node(n).op() == "MaxPoolV2";
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, v2 ? 3 : 1));
  WEFT_RETURN_IF_ERROR(CheckNhwc(n));
  std::vector<int64_t> ksize, strides;
  if (v2) {
    WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "ksize", &ksize));
    WEFT_RETURN_IF_ERROR(ConstInts(n, 2, "strides", &strides));
  } else {
    WEFT_RETURN_IF_ERROR(AttrIntList(n, "ksize", true, &ksize, nullptr));
    WEFT_RETURN_IF_ERROR(AttrIntList(n, "strides", true, &strides, nullptr));
  }
  std::string padding;
  WEFT_RETURN_IF_ERROR(AttrString(n, "padding", nullptr, &padding));
  if (padding != "SAME" && padding != "VALID")
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "padding " + padding + " is not supported (SAME and VALID are)");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "ksize", ksize.data(),
                                           static_cast<int32_t>(ksize.size()));
                 weft_op_set_attr_int_list(b, "strides", strides.data(),
                                           static_cast<int32_t>(strides.size()));
                 weft_op_set_attr_string(b, "padding", padding.c_str());
               },
               nullptr);
}

weft_status* Importer::ConvertReshape(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> shape;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "shape", &shape));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "shape", shape.data(),
                                           static_cast<int32_t>(shape.size()));
               },
               nullptr);
}

weft_status* Importer::ConvertTranspose(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> perm;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "perm", &perm));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "perm", perm.data(),
                                           static_cast<int32_t>(perm.size()));
               },
               nullptr);
}

weft_status* Importer::ConvertReduce(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> axes;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "reduction_indices", &axes));
  bool keep_dims;
  WEFT_RETURN_IF_ERROR(AttrBool(n, "keep_dims", false, &keep_dims));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "axes", axes.data(),
                                           static_cast<int32_t>(axes.size()));
                 weft_op_set_attr_bool(b, "keep_dims", keep_dims);
               },
               nullptr);
}

weft_status* Importer::ConvertArgMax(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> axis;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "dimension", &axis));
  if (axis.size() != 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "dimension is not one value");
  weft_dtype out_type;
  WEFT_RETURN_IF_ERROR(AttrDtype(n, "output_type", WEFT_INT64, &out_type));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int(b, "axis", axis[0]);
                 weft_op_set_attr_dtype(b, "output_type", out_type);
               },
               nullptr);
}

// ConcatV2(values..., axis); Concat(concat_dim, values...).
weft_status* Importer::ConvertConcat(int n, const char* op) {
  int64_t count;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "N", nullptr, &count));
  if (count < 1 || count > 1 << 20)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "attribute N is out of range");
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, static_cast<int>(count) + 1));
  bool v2 = node(n).op() == "ConcatV2";
  int axis_input = v2 ? static_cast<int>(count) : 0;
  std::vector<int64_t> axis;
  WEFT_RETURN_IF_ERROR(ConstInts(n, axis_input, "axis", &axis));
  if (axis.size() != 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "axis is not one value");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, v2 ? 0 : 1, static_cast<int>(count), &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis[0]); },
               nullptr, "", true);
}

weft_status* Importer::ConvertPack(int n, const char* op) {
  int64_t count, axis, zero = 0;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "N", nullptr, &count));
  WEFT_RETURN_IF_ERROR(AttrInt(n, "axis", &zero, &axis));
  if (count < 1 || count > 1 << 20)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "attribute N is out of range");
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, static_cast<int>(count)));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, static_cast<int>(count), &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis); },
               nullptr, "", true);
}

weft_status* Importer::ConvertUnpack(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  int64_t num, axis, zero = 0;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "num", nullptr, &num));
  WEFT_RETURN_IF_ERROR(AttrInt(n, "axis", &zero, &axis));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int(b, "num", num);
                 weft_op_set_attr_int(b, "axis", axis);
               },
               nullptr);
}

// Split(axis, value) attr num_split.
weft_status* Importer::ConvertSplit(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> axis;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 0, "split_dim", &axis));
  if (axis.size() != 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "split_dim is not one value");
  int64_t num;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "num_split", nullptr, &num));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 1, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int(b, "axis", axis[0]);
                 weft_op_set_attr_int(b, "num_split", num);
               },
               nullptr);
}

weft_status* Importer::ConvertSqueeze(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  std::vector<int64_t> dims;
  WEFT_RETURN_IF_ERROR(AttrIntList(n, "squeeze_dims", false, &dims, nullptr));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 // TensorFlow's empty list means every size-1 dim, as
                 // Weft's absent attribute does.
                 if (!dims.empty())
                   weft_op_set_attr_int_list(b, "squeeze_dims", dims.data(),
                                             static_cast<int32_t>(dims.size()));
               },
               nullptr);
}

weft_status* Importer::ConvertExpandDims(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> axis;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "dim", &axis));
  if (axis.size() != 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "dim is not one value");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis[0]); },
               nullptr);
}

weft_status* Importer::ConvertPad(int n, const char* op) {
  bool v2 = node(n).op() == "PadV2";
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, v2 ? 3 : 2));
  std::vector<int64_t> paddings;  // [rank, 2] row-major: before, after
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "paddings", &paddings));
  double value = 0;
  if (v2) WEFT_RETURN_IF_ERROR(ConstScalarFloat(n, 2, "constant_values", &value));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "paddings", paddings.data(),
                                           static_cast<int32_t>(paddings.size()));
                 weft_op_set_attr_float(b, "constant_value", value);
               },
               nullptr);
}

weft_status* Importer::ConvertTile(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> multiples;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "multiples", &multiples));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "multiples", multiples.data(),
                                           static_cast<int32_t>(multiples.size()));
               },
               nullptr);
}

weft_status* Importer::ConvertSlice(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 3));
  std::vector<int64_t> begin, size;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "begin", &begin));
  WEFT_RETURN_IF_ERROR(ConstInts(n, 2, "size", &size));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "begin", begin.data(),
                                           static_cast<int32_t>(begin.size()));
                 weft_op_set_attr_int_list(b, "size", size.data(),
                                           static_cast<int32_t>(size.size()));
               },
               nullptr);
}

// Fill(dims, value).
weft_status* Importer::ConvertFill(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<int64_t> shape;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 0, "dims", &shape));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 1, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int_list(b, "shape", shape.data(),
                                           static_cast<int32_t>(shape.size()));
               },
               nullptr);
}

// GatherV2(params, indices, axis) attr batch_dims; Gather(params, indices).
weft_status* Importer::ConvertGather(int n, const char* op) {
  bool v2 = node(n).op() == "GatherV2";
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, v2 ? 3 : 2));
  std::vector<int64_t> axis = {0};
  if (v2) {
    WEFT_RETURN_IF_ERROR(ConstInts(n, 2, "axis", &axis));
    if (axis.size() != 1)
      return NodeError(WEFT_INVALID_ARGUMENT, n, "axis is not one value");
    int64_t batch_dims, zero = 0;
    WEFT_RETURN_IF_ERROR(AttrInt(n, "batch_dims", &zero, &batch_dims));
    if (batch_dims != 0)
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       "batch_dims " + std::to_string(batch_dims) +
                           " is not supported (0 is)");
  }
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 2, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", axis[0]); },
               nullptr);
}

// OneHot(indices, depth, on_value, off_value) attrs axis, T.
weft_status* Importer::ConvertOneHot(int n, const char* op) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 4));
  std::vector<int64_t> depth;
  WEFT_RETURN_IF_ERROR(ConstInts(n, 1, "depth", &depth));
  if (depth.size() != 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "depth is not one value");
  double on, off;
  WEFT_RETURN_IF_ERROR(ConstScalarFloat(n, 2, "on_value", &on));
  WEFT_RETURN_IF_ERROR(ConstScalarFloat(n, 3, "off_value", &off));
  int64_t axis, minus_one = -1;
  WEFT_RETURN_IF_ERROR(AttrInt(n, "axis", &minus_one, &axis));
  weft_dtype dtype;
  WEFT_RETURN_IF_ERROR(AttrDtype(n, "T", WEFT_FLOAT32, &dtype));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  return Build(n, op, in,
               [&](weft_op_builder* b) {
                 weft_op_set_attr_int(b, "depth", depth[0]);
                 weft_op_set_attr_float(b, "on_value", on);
                 weft_op_set_attr_float(b, "off_value", off);
                 weft_op_set_attr_int(b, "axis", axis);
                 weft_op_set_attr_dtype(b, "dtype", dtype);
               },
               nullptr);
}

// Inference only: y = (x - mean) / sqrt(variance + epsilon) * scale +
// offset, Weft's BatchNormWithGlobalNormalization.  The batch statistics
// (outputs 1 to 5) exist only in training and are not imported.
weft_status* Importer::ConvertFusedBatchNorm(int n, const char*) {
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
  weft_node* built = nullptr;
  WEFT_RETURN_IF_ERROR(Build(n, "BatchNormWithGlobalNormalization",
                             {in[0], in[3], in[4], in[2], in[1]},
                             [&](weft_op_builder* b) {
                               weft_op_set_attr_float(b, "variance_epsilon", epsilon);
                               weft_op_set_attr_bool(b, "scale_after_normalization", 1);
                             },
                             &built));
  imported_[n].outputs.resize(node(n).op() == "FusedBatchNormV3" ? 6 : 5,
                              weft_output{nullptr, -1});
  return nullptr;
}

// min(relu(x), 6).
weft_status* Importer::ConvertRelu6(int n, const char*) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  const std::string& name = node(n).name();
  weft_output six;
  WEFT_RETURN_IF_ERROR(
      ScalarConstant(n, name + "#six", weft_output_dtype(in[0]), 6, &six));
  weft_node* relu = nullptr;
  WEFT_RETURN_IF_ERROR(Build(n, "Relu", in, nullptr, &relu, name + "#relu",
                             false, false));
  return Build(n, "Minimum", {weft_output{relu, 0}, six}, nullptr, nullptr);
}

// x where x > 0, alpha * x elsewhere: max(x, alpha x) for alpha <= 1,
// min(x, alpha x) above.
weft_status* Importer::ConvertLeakyRelu(int n, const char*) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  double default_alpha = 0.2, alpha = default_alpha;
  WEFT_RETURN_IF_ERROR(AttrFloat(n, "alpha", &default_alpha, &alpha));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  const std::string& name = node(n).name();
  weft_output a;
  WEFT_RETURN_IF_ERROR(
      ScalarConstant(n, name + "#alpha", weft_output_dtype(in[0]), alpha, &a));
  weft_node* scaled = nullptr;
  WEFT_RETURN_IF_ERROR(Build(n, "Mul", {in[0], a}, nullptr, &scaled,
                             name + "#scaled", false, false));
  return Build(n, alpha <= 1 ? "Maximum" : "Minimum",
               {in[0], weft_output{scaled, 0}}, nullptr, nullptr);
}

// A chain of Adds, the last one named as the node.
weft_status* Importer::ConvertAddN(int n, const char*) {
  int count = 0;
  for (const TfInput& in : inputs_[n]) count += in.control ? 0 : 1;
  if (count < 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n, "has no data inputs");
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, count, &in));
  if (count == 1) return Build(n, "Identity", in, nullptr, nullptr);
  weft_output sum = in[0];
  for (int i = 1; i < count; ++i) {
    bool last = i == count - 1;
    weft_node* built = nullptr;
    WEFT_RETURN_IF_ERROR(Build(n, "Add", {sum, in[i]}, nullptr, &built,
                               last ? "" : node(n).name() + "#" + std::to_string(i),
                               false, last));
    sum = weft_output{built, 0};
  }
  return nullptr;
}

weft_status* Importer::ConvertSquaredDifference(int n, const char*) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 2));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 2, &in));
  weft_node* diff = nullptr;
  WEFT_RETURN_IF_ERROR(Build(n, "Sub", in, nullptr, &diff,
                             node(n).name() + "#difference", false, false));
  return Build(n, "Square", {weft_output{diff, 0}}, nullptr, nullptr);
}

weft_status* Importer::ConvertReciprocal(int n, const char*) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, 1));
  std::vector<weft_output> in;
  WEFT_RETURN_IF_ERROR(DataInputs(n, 0, 1, &in));
  weft_output one;
  WEFT_RETURN_IF_ERROR(ScalarConstant(n, node(n).name() + "#one",
                                      weft_output_dtype(in[0]), 1, &one));
  return Build(n, "Div", {one, in[0]}, nullptr, nullptr);
}

// ---- The whole import --------------------------------------------------------

weft_status* Importer::Import(const std::vector<std::string>& requested,
                              LoadedGraph* out) {
  WEFT_RETURN_IF_ERROR(IndexNodes());
  std::vector<TfInput> roots;
  std::vector<std::string> keys_from;
  WEFT_RETURN_IF_ERROR(ResolveOutputs(requested, &roots, &keys_from));
  WEFT_RETURN_IF_ERROR(MarkNeeded(roots));
  for (int n = 0; n < gd_.node_size(); ++n)
    if (needed_[n]) WEFT_RETURN_IF_ERROR(CheckSupported(n));
  std::vector<int> order;
  WEFT_RETURN_IF_ERROR(SortNeeded(&order));

  imported_.assign(gd_.node_size(), Imported{});
  for (int n : order) {
    const OpMapping& m = Mappings().at(node(n).op());
    WEFT_RETURN_IF_ERROR((this->*m.convert)(n, m.weft_op));
  }

  Signature sig;
  sig.name = WEFT_DEFAULT_SIGNATURE;
  std::unordered_set<std::string> input_keys, output_keys;
  for (int n = 0; n < gd_.node_size(); ++n)
    if (needed_[n] && node(n).op() == "Placeholder")
      sig.inputs.push_back(
          {MakeKey(node(n).name(), &input_keys), imported_[n].outputs[0]});
  for (size_t i = 0; i < roots.size(); ++i) {
    int n = roots[i].node;
    WEFT_RETURN_IF_ERROR(Materialize(n));
    const std::vector<weft_output>& outs = imported_[n].outputs;
    if (roots[i].index >= 0) {  // named by the caller
      if (roots[i].index >= static_cast<int>(outs.size()) ||
          outs[roots[i].index].node == nullptr)
        return FileError(WEFT_INVALID_ARGUMENT,
                         "graphdef_outputs names '" + keys_from[i] +
                             "', but node '" + node(n).name() + "' (" +
                             node(n).op() + ") has " +
                             std::to_string(outs.size()) +
                             " outputs Weft computes");
      sig.outputs.push_back({MakeKey(keys_from[i], &output_keys),
                             outs[roots[i].index]});
      continue;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].node == nullptr) continue;
      std::string from = keys_from[i];
      if (outs.size() > 1) from += "_" + std::to_string(k);
      sig.outputs.push_back({MakeKey(from, &output_keys), outs[k]});
    }
  }
  out->signatures.push_back(std::move(sig));
  return nullptr;
}

}  // namespace

weft_status* ImportGraphDef(const std::string& bytes, const std::string& path,
                            const std::vector<std::string>& outputs,
                            weft_graph* graph, LoadedGraph* out) {
  return Guard([&]() -> weft_status* {
    tf::GraphDef graph_def;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !graph_def.ParseFromString(bytes))
      return Error(WEFT_DATA_LOSS,
                   "cannot load '" + path +
                       "': not a TensorFlow GraphDef (the bytes do not "
                       "parse as one; truncated or corrupt?)");
    Importer importer(graph_def, path, graph);
    return importer.Import(outputs, out);
  });
}

}  // namespace weft
