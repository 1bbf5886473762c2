// ONNX import, the pieces every op converter uses (runtime/model/onnx_*.cc).
//
// ImportOnnx (onnx_import.cc) parses the model, makes Placeholders of the
// graph inputs and Const nodes of the initializers, then hands each node to
// the converter registered for its op type (onnx_ops_*.cc).  A converter
// reads the node through OnnxNode and builds Weft nodes through Importer.
//
// Errors inside the importer are thrown as ImportError and become a status
// at ImportOnnx; nothing else throws past it.
//
// Layout: ONNX images are NCHW, Weft's Conv2D and pooling NHWC.  A value
// may be held in either layout or both (Value::plain, Value::nhwc); a
// converter that wants one asks for it and the Transpose is made once, when
// first needed.  Convolutions and pools produce NHWC only, element-wise ops
// keep it, so a chain Conv -> BatchNormalization -> Relu -> MaxPool -> Conv
// has no Transpose between its ops; an ONNX Transpose that converts between
// the two layouts costs nothing.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include <onnx/onnx_pb.h>

#include "weft/graph.h"
#include "weft/session.h"
#include "weft/tensor.h"

namespace weft {
namespace onnx_import {

struct ImportError {
  weft_code code;
  std::string message;
};
[[noreturn]] void Fail(weft_code code, std::string message);
[[noreturn]] void Unsupported(std::string reason);  // UNIMPLEMENTED

struct TensorDeleter {
  void operator()(weft_tensor* t) const { weft_tensor_destroy(t); }
};
using TensorPtr = std::unique_ptr<weft_tensor, TensorDeleter>;

// The Weft dtype of an ONNX TensorProto data type; UNIMPLEMENTED for
// strings, complex numbers and unknown codes (naming `what`).
weft_dtype DtypeFromOnnx(int32_t onnx_type, const std::string& what);
// The other way (for the exporter): 0 for a dtype ONNX has no type for.
int32_t OnnxFromDtype(weft_dtype dtype);
// The Weft tensor of an ONNX tensor, every size checked against the bytes
// the file holds.  DATA_LOSS when they disagree.
TensorPtr TensorFromProto(const onnx::TensorProto& proto,
                          const std::string& what);

// A host tensor of `dtype` and `dims` with the values given as doubles or
// int64s (each converted to the dtype).
TensorPtr MakeTensor(weft_dtype dtype, const std::vector<int64_t>& dims,
                     const std::vector<double>& values);
TensorPtr MakeIntTensor(weft_dtype dtype, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& values);
// The elements of an integer tensor (int8 ... uint64), as int64.
std::vector<int64_t> IntsOf(const weft_tensor* t, const std::string& what);
// The elements of a numeric tensor, as doubles (bool as 0/1).
std::vector<double> DoublesOf(const weft_tensor* t, const std::string& what);

bool IsFloat(weft_dtype d);
bool IsInteger(weft_dtype d);

// An ONNX value as Weft holds it: `plain` in ONNX's layout, `nhwc` (for a
// rank-4 NCHW value) the same data transposed to NHWC; at least one set.
struct Value {
  weft_output plain{nullptr, 0};
  weft_output nhwc{nullptr, 0};
};

class Importer;

// One ONNX node while it converts: its inputs, attributes and outputs.
class OnnxNode {
 public:
  OnnxNode(Importer* importer, const onnx::NodeProto& proto, int64_t opset);

  const onnx::NodeProto& proto() const { return proto_; }
  int64_t opset() const { return opset_; }
  Importer& importer() const { return *importer_; }

  // Inputs: Has(i) is false past the end and for an empty name (an
  // optional input left out).
  int num_inputs() const { return proto_.input_size(); }
  bool Has(int i) const;
  // Input i in ONNX's layout; UNIMPLEMENTED/INVALID_ARGUMENT when absent.
  weft_output In(int i) const;
  // Input i as NHWC (rank 4 only).
  weft_output InNhwc(int i) const;
  // Input i is held in NHWC only (a converter that keeps layouts uses it).
  bool PrefersNhwc(int i) const;
  // The value of input i, which must be computable when the graph is built
  // (an initializer, a Constant, or a computation on those); `what` names
  // it in the refusal.
  const weft_tensor* ConstIn(int i, const std::string& what) const;
  std::vector<int64_t> IntsIn(int i, const std::string& what) const;

  // Attributes.  Each read marks the attribute understood; after the
  // converter, one it never read is refused, so no attribute is silently
  // ignored.
  bool HasAttr(const std::string& name) const;
  int64_t Int(const std::string& name, int64_t fallback) const;
  double Float(const std::string& name, double fallback) const;
  std::string String(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> Ints(const std::string& name,
                            const std::vector<int64_t>& fallback) const;
  std::vector<float> Floats(const std::string& name) const;
  const onnx::TensorProto* TensorAttr(const std::string& name) const;
  // Marks an attribute read without a value check (one that does not
  // change inference results, such as BatchNormalization's momentum).
  void Ignore(const std::string& name) const;

  int num_outputs() const { return proto_.output_size(); }
  // Output i is wanted (named).
  bool Wants(int i) const;
  void SetOut(int i, weft_output out);
  void SetOutNhwc(int i, weft_output out);

  // Refusals after the converter: unread attributes, unset outputs.
  void Finish() const;

 private:
  const onnx::AttributeProto* Attr(const std::string& name, int type) const;

  Importer* importer_;
  const onnx::NodeProto& proto_;
  int64_t opset_;
  mutable std::unordered_set<std::string> read_;
  std::vector<bool> set_;
};

using Converter = std::function<void(OnnxNode&)>;
using ConverterMap = std::unordered_map<std::string, Converter>;
// Each file of converters adds its ops.
void AddMathConverters(ConverterMap* map);
void AddNnConverters(ConverterMap* map);
void AddShapeConverters(ConverterMap* map);

class Importer {
 public:
  explicit Importer(weft_graph* graph) : graph_(graph) {}
  ~Importer();
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  weft_graph* graph() const { return graph_; }

  // Values by ONNX name.
  bool Defined(const std::string& name) const;
  Value& Get(const std::string& name);
  void Define(const std::string& name, Value value);
  weft_output Plain(Value& v);
  weft_output Nhwc(Value& v);

  // Building nodes; a refusal of the graph builder is thrown with its code.
  using Attrs = std::function<void(weft_op_builder*)>;
  weft_node* Node(const char* op, const std::vector<weft_output>& inputs,
                  const Attrs& attrs = nullptr, bool list_input = false);
  weft_output Op(const char* op, const std::vector<weft_output>& inputs,
                 const Attrs& attrs = nullptr) {
    return {Node(op, inputs, attrs), 0};
  }
  // An op whose one input is a list (Concat).
  weft_output OpList(const char* op, const std::vector<weft_output>& inputs,
                     const Attrs& attrs = nullptr) {
    return {Node(op, inputs, attrs, true), 0};
  }
  weft_output Const(TensorPtr value);
  weft_output Scalar(weft_dtype dtype, double value);
  weft_output Int64s(const std::vector<int64_t>& values);
  weft_output Placeholder(const std::string& name, weft_dtype dtype,
                          const std::vector<int64_t>& dims, int32_t rank);

  // Common nodes.
  weft_output Transpose(weft_output x, const std::vector<int64_t>& perm);
  weft_output Reshape(weft_output x, const std::vector<int64_t>& shape);
  weft_output Cast(weft_output x, weft_dtype to);

  weft_dtype Dtype(weft_output o) const;
  // Rank (-1 unknown) and dims (-1 unknown) inferred for `o`.
  int32_t Rank(weft_output o) const;
  std::vector<int64_t> Dims(weft_output o) const;
  // Every dim known.
  bool FullyKnown(weft_output o) const;

  // The value of `o` when it can be computed now (its inputs all
  // constants); NULL otherwise.  Borrowed from the importer.
  const weft_tensor* Fold(weft_output o);

 private:
  weft_node* Build(const char* op, const std::vector<weft_output>& inputs,
                   const Attrs& attrs, bool list_input);
  std::string MissingKernel(const weft_node* node, const char* op);

  weft_graph* graph_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_set<const weft_node*> constant_nodes_;
  std::map<std::pair<const weft_node*, int32_t>, TensorPtr> folded_;
  weft_session* fold_session_ = nullptr;
};

// ONNX's axis in [-rank, rank) as a non-negative axis; INVALID_ARGUMENT
// naming `what` otherwise.
int64_t NormalizeAxis(int64_t axis, int64_t rank, const std::string& what);
std::string JoinInts(const std::vector<int64_t>& v);

}  // namespace onnx_import
}  // namespace weft
