// TensorFlow GraphDef import, the pieces its files share
// (runtime/model/graphdef_*.cc):
//
//   graphdef_import.cc  parse, index, prune, check, sort; inputs and
//                       building; the signature; ImportGraphDef
//   graphdef_ops.cc     attributes, the op mapping table and the converters
//   graphdef_tensor.cc  TensorProto decoding: constants as Weft tensors, as
//                       folded attributes, and Consts built when first read
//
// Internal to the runtime; nothing here crosses the C boundary.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/model.h"
#include "tf_graph.pb.h"
#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {
namespace graphdef_import {

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
std::string TfDtypeName(int dtype);
// The Weft dtype of a TensorFlow one; WEFT_DTYPE_INVALID where Weft has none.
weft_dtype WeftDtype(int tf);

template <typename T>
void StoreAs(T v, char* to) { memcpy(to, &v, sizeof v); }
template <typename T>
T LoadAs(const char* from) {
  T v;
  memcpy(&v, from, sizeof v);
  return v;
}

// Ops refused with a reason more useful than "unknown op"; NULL for others.
const char* KnownRefusal(const std::string& op);

// Where one attribute of the Weft node comes from, for ops the mapping table
// describes whole (Importer::ConvertTabled).  Rules are read in order, after
// the data inputs are counted and before any is built.
struct AttrRule {
  enum Kind {
    kNhwc,        // data_format must be channels last; sets nothing
    kPadding,     // string padding, SAME or VALID
    kBool,        // bool attribute, `value` when absent
    kInt,         // int attribute, `value` when absent unless required
    kDtype,       // dtype attribute, `value` (a weft_dtype) when absent;
                  // WEFT_DTYPE_INVALID: required
    kIntList,     // list of ints attribute
    kConstInts,   // ints folded from the constant at data input `value`
    kConstInt,    // one int folded from the constant at data input `value`
    kConstFloat,  // a scalar folded from the constant at data input `value`
  };
  // For kInt and kIntList: whether the attribute must be there (kOptional:
  // `value` when absent), and when an optional list is passed on.
  enum Need { kRequired, kOptional, kIfPresent, kIfNotEmpty };
  Kind kind;
  const char* from;  // the TensorFlow attribute, or the input's name
  const char* to;    // the Weft attribute
  int64_t value;
  Need need;
};

class Importer;
struct OpMapping;
using Converter = weft_status* (Importer::*)(int node, const OpMapping& m);

struct OpMapping {
  Converter convert;
  const char* weft_op;  // for converters that build one op
  // For ConvertTabled: how many data inputs the TensorFlow node takes (-1:
  // any number, all passed on), which of them the Weft node takes
  // (first_input, input_count), and its attributes.
  int data_inputs;
  int first_input;
  int input_count;
  std::vector<AttrRule> attrs;
};

// The mapping of TensorFlow op `op`; NULL when Weft has none.
const OpMapping* FindMapping(const std::string& op);

class Importer {
 public:
  Importer(const tf::GraphDef& graph_def, const std::string& path,
           weft_graph* graph)
      : gd_(graph_def), path_(path), graph_(graph) {}

  weft_status* Import(const std::vector<std::string>& outputs,
                      LoadedGraph* out);

  // Converters (graphdef_ops.cc, see its mapping table).
  weft_status* ConvertTabled(int n, const OpMapping& m);
  weft_status* ConvertPlaceholder(int n, const OpMapping& m);
  weft_status* ConvertConst(int n, const OpMapping& m);
  weft_status* ConvertAlias(int n, const OpMapping& m);
  weft_status* ConvertSelect(int n, const OpMapping& m);
  weft_status* ConvertBatchMatMul(int n, const OpMapping& m);
  weft_status* ConvertConcat(int n, const OpMapping& m);
  weft_status* ConvertPack(int n, const OpMapping& m);
  weft_status* ConvertSqueeze(int n, const OpMapping& m);
  weft_status* ConvertPad(int n, const OpMapping& m);
  weft_status* ConvertGather(int n, const OpMapping& m);
  weft_status* ConvertFusedBatchNorm(int n, const OpMapping& m);
  weft_status* ConvertRelu6(int n, const OpMapping& m);
  weft_status* ConvertLeakyRelu(int n, const OpMapping& m);
  weft_status* ConvertAddN(int n, const OpMapping& m);
  weft_status* ConvertSquaredDifference(int n, const OpMapping& m);
  weft_status* ConvertReciprocal(int n, const OpMapping& m);

 private:
  // A value read by an AttrRule.
  struct RuleValue {
    std::vector<int64_t> ints;
    int64_t i = 0;
    double f = 0;
    weft_dtype dtype = WEFT_DTYPE_INVALID;
    std::string s;
    bool set = true;  // false: the Weft attribute is left out
  };

  const tf::NodeDef& node(int n) const { return gd_.node(n); }
  // The name of a helper node made for TensorFlow node n: NAME#suffix.
  std::string HelperName(int n, const std::string& suffix) const {
    return node(n).name() + "#" + suffix;
  }

  // "cannot load 'PATH': node 'NAME' (OP): WHY"
  weft_status* NodeError(weft_code code, int n, const std::string& why) const;
  weft_status* FileError(weft_code code, const std::string& why) const;

  // The pipeline (graphdef_import.cc).
  weft_status* IndexNodes();
  weft_status* ResolveOutputs(const std::vector<std::string>& requested,
                              std::vector<TfInput>* outputs,
                              std::vector<std::string>* keys_from);
  void MarkNeeded(const std::vector<TfInput>& roots);
  weft_status* CheckSupported(int n);
  weft_status* SortNeeded(std::vector<int>* order);
  weft_status* BuildSignature(const std::vector<TfInput>& roots,
                              const std::vector<std::string>& keys_from,
                              LoadedGraph* out);

  // Attributes, with the node named when one is missing or has the wrong
  // kind (graphdef_ops.cc).
  const tf::AttrValue* Attr(int n, const char* name) const;
  // Attribute `name` of `kind`, or NULL when absent (an error if required).
  weft_status* TypedAttr(int n, const char* name,
                         tf::AttrValue::ValueCase kind, bool required,
                         const tf::AttrValue** out) const;
  // Attribute `name` read by `get`: *dflt when absent, an error when dflt is
  // NULL.
  template <typename T, typename Get>
  weft_status* ScalarAttr(int n, const char* name,
                          tf::AttrValue::ValueCase kind, const T* dflt, T* out,
                          Get get) const;
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
  weft_status* AttrPadding(int n, std::string* out) const;
  // An ops's attributes by the table's rules, and its node built from them.
  weft_status* ReadRules(int n, const OpMapping& m,
                         std::vector<RuleValue>* values);
  weft_status* ReadRule(int n, const AttrRule& rule, RuleValue* value);
  weft_status* BuildTabled(int n, const OpMapping& m,
                           const std::vector<RuleValue>& values);

  // Inputs (graphdef_import.cc).
  int DataInputCount(int n) const;
  weft_status* NeedDataInputs(int n, int count) const;
  weft_status* DataInput(int n, int k, weft_output* out);
  weft_status* DataInputs(int n, int first, int count,
                          std::vector<weft_output>* out);
  // Exactly `count` data inputs, all of them.
  weft_status* AllDataInputs(int n, int count, std::vector<weft_output>* out);
  weft_status* Anchor(int p, weft_node** out);
  // The constant behind data input `k` (through Identity).
  weft_status* ConstantInput(int n, int k, const char* what,
                             const tf::TensorProto** out);

  // Constants (graphdef_tensor.cc), decoded.
  weft_status* DecodeConstantInput(int n, int k, const char* what,
                                   int64_t max_elements, weft_dtype* dtype,
                                   std::string* bytes);
  weft_status* ConstInts(int n, int k, const char* what,
                         std::vector<int64_t>* out);
  // One int: a constant of one element.
  weft_status* ConstInt(int n, int k, const char* what, int64_t* out);
  weft_status* ConstScalarFloat(int n, int k, const char* what, double* out);
  weft_status* DecodeTensor(int n, const tf::TensorProto& t,
                            int64_t max_elements, weft_dtype* dtype,
                            std::vector<int64_t>* dims,
                            std::string* bytes) const;
  weft_status* MakeTensor(int n, const tf::TensorProto& t, weft_tensor** out);
  weft_status* Materialize(int p);
  // A scalar Const of `dtype` named HelperName(n, suffix).
  weft_status* ScalarConstant(int n, const std::string& suffix,
                              weft_dtype dtype, double value,
                              weft_output* out);
  // A Const of `value`, which it consumes; as Build.
  weft_status* BuildConst(int n, weft_tensor* value, weft_node** out,
                          const std::string& name, bool record);

  // Builds a node of `op` for TensorFlow node n: named `name` (the
  // TensorFlow name when empty), with n's control inputs; `attrs` sets
  // attributes.  `record` makes its outputs n's (graphdef_import.cc).
  weft_status* Build(int n, const char* op, const std::vector<weft_output>& in,
                     const std::function<void(weft_op_builder*)>& attrs,
                     weft_node** out, const std::string& name = "",
                     bool as_list = false, bool record = true);
  // A node of `op` that helps build n: named HelperName(n, suffix), not
  // recorded as n's; *out is its output 0.
  weft_status* BuildHelper(int n, const char* op,
                           const std::vector<weft_output>& in,
                           const std::string& suffix, weft_output* out);
  void Record(int n, weft_node* built);

  const tf::GraphDef& gd_;
  const std::string path_;
  weft_graph* graph_;
  std::unordered_map<std::string, int> by_name_;
  std::vector<std::vector<TfInput>> inputs_;
  std::vector<char> needed_;
  std::vector<Imported> imported_;
};

}  // namespace graphdef_import
}  // namespace weft
