// The importer's shared pieces (onnx_importer.h): nodes, their attributes,
// values and their layouts, node building, constant folding.
#include "model/onnx_importer.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/status.h"
#include "ops/shape_checks.h"
#include "weft/ops.h"

namespace weft {
namespace onnx_import {

namespace {

// Constant subgraphs are computed while importing only up to this size:
// structural inputs (shapes, axes, pads) are small, and a hostile file
// must not make loading compute a huge tensor.
constexpr int64_t kMaxFoldElements = int64_t{1} << 22;

}  // namespace

// ---- OnnxNode ------------------------------------------------------------

OnnxNode::OnnxNode(Importer* importer, const onnx::NodeProto& proto,
                   int64_t opset)
    : importer_(importer),
      proto_(proto),
      opset_(opset),
      set_(static_cast<size_t>(proto.output_size()), false) {}

bool OnnxNode::Has(int i) const {
  return i >= 0 && i < proto_.input_size() && !proto_.input(i).empty();
}

weft_output OnnxNode::In(int i) const {
  if (!Has(i))
    Fail(WEFT_INVALID_ARGUMENT,
         "input " + std::to_string(i) + " is required but not given");
  return importer_->Plain(importer_->Get(proto_.input(i)));
}

weft_output OnnxNode::InNhwc(int i) const {
  if (!Has(i))
    Fail(WEFT_INVALID_ARGUMENT,
         "input " + std::to_string(i) + " is required but not given");
  return importer_->Nhwc(importer_->Get(proto_.input(i)));
}

bool OnnxNode::PrefersNhwc(int i) const {
  if (!Has(i)) return false;
  const Value& v = importer_->Get(proto_.input(i));
  return v.plain.node == nullptr && v.nhwc.node != nullptr;
}

const weft_tensor* OnnxNode::ConstIn(int i, const std::string& what) const {
  const weft_tensor* t = importer_->Fold(In(i));
  if (t == nullptr)
    Unsupported(what + " ('" + proto_.input(i) +
                "') is computed when the model runs; Weft needs it when the "
                "graph is built (an initializer, a Constant, or shapes known "
                "in advance)");
  return t;
}

std::vector<int64_t> OnnxNode::IntsIn(int i, const std::string& what) const {
  return IntsOf(ConstIn(i, what), what);
}

const onnx::AttributeProto* OnnxNode::Attr(const std::string& name,
                                           int type) const {
  for (const onnx::AttributeProto& a : proto_.attribute()) {
    if (a.name() != name) continue;
    read_.insert(name);
    if (!a.ref_attr_name().empty())
      Unsupported("attribute " + name + " refers to a function's attribute");
    if (a.type() != type)
      Fail(WEFT_INVALID_ARGUMENT,
           "attribute " + name + " has type " +
               onnx::AttributeProto::AttributeType_Name(a.type()) +
               "; the op takes " +
               onnx::AttributeProto::AttributeType_Name(
                   static_cast<onnx::AttributeProto::AttributeType>(type)));
    return &a;
  }
  return nullptr;
}

bool OnnxNode::HasAttr(const std::string& name) const {
  for (const onnx::AttributeProto& a : proto_.attribute())
    if (a.name() == name) return true;
  return false;
}

int64_t OnnxNode::Int(const std::string& name, int64_t fallback) const {
  const auto* a = Attr(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

double OnnxNode::Float(const std::string& name, double fallback) const {
  const auto* a = Attr(name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::string OnnxNode::String(const std::string& name,
                             const std::string& fallback) const {
  const auto* a = Attr(name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::vector<int64_t> OnnxNode::Ints(const std::string& name,
                                    const std::vector<int64_t>& fallback) const {
  const auto* a = Attr(name, onnx::AttributeProto::INTS);
  if (a == nullptr) return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> OnnxNode::Floats(const std::string& name) const {
  const auto* a = Attr(name, onnx::AttributeProto::FLOATS);
  if (a == nullptr) return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

const onnx::TensorProto* OnnxNode::TensorAttr(const std::string& name) const {
  const auto* a = Attr(name, onnx::AttributeProto::TENSOR);
  return a ? &a->t() : nullptr;
}

void OnnxNode::Ignore(const std::string& name) const { read_.insert(name); }

bool OnnxNode::Wants(int i) const {
  return i >= 0 && i < proto_.output_size() && !proto_.output(i).empty();
}

void OnnxNode::SetOut(int i, weft_output out) {
  if (!Wants(i)) return;
  Value v;
  v.plain = out;
  importer_->Define(proto_.output(i), v);
  set_[i] = true;
}

void OnnxNode::SetOutNhwc(int i, weft_output out) {
  if (!Wants(i)) return;
  Value v;
  v.nhwc = out;
  importer_->Define(proto_.output(i), v);
  set_[i] = true;
}

void OnnxNode::Finish() const {
  for (const onnx::AttributeProto& a : proto_.attribute())
    if (read_.count(a.name()) == 0)
      Unsupported("attribute " + a.name() + " is not supported");
  for (int i = 0; i < proto_.output_size(); ++i)
    if (!proto_.output(i).empty() && !set_[i])
      Unsupported("output " + std::to_string(i) + " ('" + proto_.output(i) +
                  "') is not supported");
}

// ---- Importer ------------------------------------------------------------

Importer::~Importer() { weft_session_destroy(fold_session_); }

bool Importer::Defined(const std::string& name) const {
  return values_.count(name) != 0;
}

Value& Importer::Get(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end())
    Fail(WEFT_INVALID_ARGUMENT,
         "input '" + name + "' is not defined by an earlier node, an "
                            "initializer or a graph input");
  return it->second;
}

void Importer::Define(const std::string& name, Value value) {
  if (!values_.emplace(name, value).second)
    Fail(WEFT_INVALID_ARGUMENT,
         "value '" + name + "' is defined twice (ONNX graphs are SSA)");
}

weft_output Importer::Plain(Value& v) {
  if (v.plain.node == nullptr) v.plain = Transpose(v.nhwc, {0, 3, 1, 2});
  return v.plain;
}

weft_output Importer::Nhwc(Value& v) {
  if (v.nhwc.node == nullptr) {
    if (Rank(v.plain) != 4)
      Fail(WEFT_INVALID_ARGUMENT,
           "the input must have rank 4 (NCHW), not " +
               std::to_string(Rank(v.plain)));
    v.nhwc = Transpose(v.plain, {0, 2, 3, 1});
  }
  return v.nhwc;
}

weft_node* Importer::Build(const char* op,
                           const std::vector<weft_output>& inputs,
                           const Attrs& attrs, bool list_input) {
  weft_op_builder* b = weft_op_begin(graph_, op, nullptr);
  if (list_input)
    weft_op_add_input_list(b, inputs.data(),
                           static_cast<int32_t>(inputs.size()));
  else
    for (const weft_output& in : inputs) weft_op_add_input(b, in);
  if (attrs) attrs(b);
  weft_node* node = nullptr;
  weft_status* st = weft_op_finish(b, &node);
  if (st != nullptr) {
    std::string m = weft_status_message(st);
    weft_code c = weft_status_code(st);
    weft_status_destroy(st);
    Fail(c, std::string("Weft's ") + op + " refuses it: " + m);
  }
  bool constant = !inputs.empty();
  for (const weft_output& in : inputs)
    constant = constant && constant_nodes_.count(in.node) != 0;
  if (constant) constant_nodes_.insert(node);
  return node;
}

weft_node* Importer::Node(const char* op, const std::vector<weft_output>& inputs,
                          const Attrs& attrs, bool list_input) {
  weft_node* node = Build(op, inputs, attrs, list_input);
  std::string why = MissingKernel(node, op);
  if (why.empty()) return node;
  // float16 and bfloat16 are storage types to most kernels: an op of one
  // output is computed in float32 and rounded back, which for element-wise
  // arithmetic is the correctly rounded half-precision result.  The node
  // just built is left unused.
  bool half = false;
  for (const weft_output& in : inputs) {
    weft_dtype d = Dtype(in);
    half = half || d == WEFT_FLOAT16 || d == WEFT_BFLOAT16;
  }
  if (half && weft_node_num_outputs(node) == 1 &&
      std::string(op) != "Cast") {
    const weft_dtype back = Dtype({node, 0});
    std::vector<weft_output> wide;
    for (const weft_output& in : inputs) {
      weft_dtype d = Dtype(in);
      wide.push_back(d == WEFT_FLOAT16 || d == WEFT_BFLOAT16
                         ? Cast(in, WEFT_FLOAT32)
                         : in);
    }
    weft_node* w = Build(op, wide, attrs, list_input);
    if (MissingKernel(w, op).empty()) {
      if (Dtype({w, 0}) == WEFT_FLOAT32 && back != WEFT_FLOAT32)
        return Cast({w, 0}, back).node;
      return w;
    }
  }
  Unsupported(why);
}

namespace {

// The dtype a node holds in attribute `attr` (T, SrcT, DstT), or INVALID.
weft_dtype NodeDtype(const weft_node* node, const char* attr) {
  weft_attr_value v{};
  v.struct_size = sizeof v;
  weft_status* st = weft_node_attr(node, attr, &v);
  if (st != nullptr) {
    weft_status_destroy(st);
    return WEFT_DTYPE_INVALID;
  }
  return static_cast<weft_dtype>(v.i);
}

bool Accepts(const int32_t* dtypes, int32_t count, weft_dtype d) {
  for (int32_t i = 0; i < count; ++i)
    if (dtypes[i] == d) return true;
  return false;
}

}  // namespace

// A node no loaded kernel can run would fail at its first run, as
// INVALID_ARGUMENT; for an imported model that is a dtype Weft cannot
// compute, refused now with the node named.  Ops with no kernel at all are
// run by the runtime itself (Const, Identity's kind).  Returns why, or ""
// when a kernel takes the node.
std::string Importer::MissingKernel(const weft_node* node, const char* op) {
  const int32_t count = weft_kernel_count(op);
  if (count <= 0) return "";
  std::string offered;
  for (int32_t k = 0; k < count; ++k) {
    weft_kernel_description d{};
    d.struct_size = sizeof d;
    weft_status* st = weft_kernel_describe(op, k, &d);
    if (st != nullptr) {
      weft_status_destroy(st);
      continue;
    }
    if (d.dtype_attr == nullptr || d.dtype_attr[0] == '\0') return "";
    const weft_dtype t = NodeDtype(node, d.dtype_attr);
    bool ok = Accepts(d.dtypes, d.num_dtypes, t);
    std::string have = std::string(d.dtype_attr) + "=" + weft_dtype_name(t);
    for (int32_t c = 0; ok && c < d.num_type_constraints; ++c) {
      const weft_kernel_type_constraint& tc = d.type_constraints[c];
      const weft_dtype v = NodeDtype(node, tc.attr);
      ok = Accepts(tc.dtypes, tc.num_dtypes, v);
      have += std::string(", ") + tc.attr + "=" + weft_dtype_name(v);
    }
    if (ok) return "";
    if (offered.empty()) {
      offered = have + "; ";
      for (int32_t i = 0; i < d.num_dtypes; ++i)
        offered += std::string(i ? ", " : "") +
                   weft_dtype_name(static_cast<weft_dtype>(d.dtypes[i]));
    }
  }
  return std::string("Weft's ") + op + " has no kernel for " +
              (offered.empty() ? "it" : offered.substr(0, offered.find(';'))) +
              " in the loaded plugins" +
              (offered.empty() ? ""
                               : " (they take " +
                                     offered.substr(offered.find(';') + 2) +
                                     ")");
}

weft_output Importer::Const(TensorPtr value) {
  weft_output out{};
  weft_status* st = weft_graph_constant(graph_, nullptr, value.get(), &out);
  if (st != nullptr) {
    std::string m = weft_status_message(st);
    weft_code c = weft_status_code(st);
    weft_status_destroy(st);
    Fail(c, "a constant: " + m);
  }
  constant_nodes_.insert(out.node);
  folded_[{out.node, 0}] = std::move(value);
  return out;
}

weft_output Importer::Scalar(weft_dtype dtype, double value) {
  // A 16-bit float constant is made in float32 and cast: the cast rounds
  // to nearest even, which is what a literal in the model would hold.
  if (dtype == WEFT_FLOAT16 || dtype == WEFT_BFLOAT16)
    return Cast(Const(MakeTensor(WEFT_FLOAT32, {}, {value})), dtype);
  return Const(MakeTensor(dtype, {}, {value}));
}

weft_output Importer::Int64s(const std::vector<int64_t>& values) {
  return Const(MakeIntTensor(WEFT_INT64,
                             {static_cast<int64_t>(values.size())}, values));
}

weft_output Importer::Placeholder(const std::string& name, weft_dtype dtype,
                                  const std::vector<int64_t>& dims,
                                  int32_t rank) {
  weft_output out{};
  weft_status* st = weft_graph_placeholder(graph_, name.c_str(), dtype,
                                           dims.data(), rank, &out);
  if (st != nullptr) {
    std::string m = weft_status_message(st);
    weft_code c = weft_status_code(st);
    weft_status_destroy(st);
    Fail(c, "graph input '" + name + "': " + m);
  }
  return out;
}

weft_output Importer::Transpose(weft_output x, const std::vector<int64_t>& perm) {
  return Op("Transpose", {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "perm", perm.data(),
                              static_cast<int32_t>(perm.size()));
  });
}

weft_output Importer::Reshape(weft_output x, const std::vector<int64_t>& shape) {
  return Op("Reshape", {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "shape", shape.data(),
                              static_cast<int32_t>(shape.size()));
  });
}

weft_output Importer::Cast(weft_output x, weft_dtype to) {
  if (Dtype(x) == to) return x;
  return Op("Cast", {x},
            [&](weft_op_builder* b) { weft_op_set_attr_dtype(b, "DstT", to); });
}

weft_dtype Importer::Dtype(weft_output o) const { return weft_output_dtype(o); }

int32_t Importer::Rank(weft_output o) const {
  int32_t rank = -1;
  weft_status* st = weft_output_shape(o, nullptr, 0, &rank);
  weft_status_destroy(st);  // OUT_OF_RANGE for capacity 0: rank is set
  return rank;
}

std::vector<int64_t> Importer::Dims(weft_output o) const {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* st = weft_output_shape(o, dims, WEFT_MAX_RANK, &rank);
  if (st != nullptr) {
    weft_status_destroy(st);
    return {};
  }
  if (rank < 0) return {};
  return std::vector<int64_t>(dims, dims + rank);
}

bool Importer::FullyKnown(weft_output o) const {
  if (Rank(o) < 0) return false;
  for (int64_t d : Dims(o))
    if (d < 0) return false;
  return true;
}

const weft_tensor* Importer::Fold(weft_output o) {
  auto it = folded_.find({o.node, o.index});
  if (it != folded_.end()) return it->second.get();
  if (constant_nodes_.count(o.node) == 0) return nullptr;
  // Every value the computation makes must be small, not only its result:
  // ReduceSum of a ConstantOfShape([2^20, 2^20]) is one number.  Const
  // nodes hold their values already.
  std::vector<const weft_node*> stack = {o.node};
  std::unordered_set<const weft_node*> seen = {o.node};
  while (!stack.empty()) {
    const weft_node* node = stack.back();
    stack.pop_back();
    if (std::string(weft_node_op_type(node)) == "Const") continue;
    for (int32_t i = 0; i < weft_node_num_outputs(node); ++i) {
      const weft_output out{const_cast<weft_node*>(node), i};
      if (!FullyKnown(out)) return nullptr;
      int64_t count = 1;
      for (int64_t d : Dims(out))
        if (!CheckedMul(count, d, &count) || count > kMaxFoldElements)
          return nullptr;
    }
    for (int32_t i = 0; i < weft_node_num_inputs(node); ++i) {
      const weft_node* in = weft_node_input(node, i).node;
      if (in != nullptr && seen.insert(in).second) stack.push_back(in);
    }
  }
  if (fold_session_ == nullptr) {
    weft_status* st = weft_session_create(graph_, nullptr, &fold_session_);
    if (st != nullptr) {
      std::string m = weft_status_message(st);
      weft_code c = weft_status_code(st);
      weft_status_destroy(st);
      Fail(c, "computing a constant input: " + m);
    }
  }
  weft_tensor* value = nullptr;
  weft_status* st = weft_session_run(fold_session_, nullptr, nullptr, 0, &o, 1,
                                     nullptr, 0, &value);
  if (st != nullptr) {
    std::string m = weft_status_message(st);
    weft_code c = weft_status_code(st);
    weft_status_destroy(st);
    Fail(c, "computing a constant input: " + m);
  }
  const weft_tensor* result = value;
  folded_[{o.node, o.index}] = TensorPtr(value);
  return result;
}

}  // namespace onnx_import
}  // namespace weft
