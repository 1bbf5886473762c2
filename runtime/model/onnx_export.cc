// ONNX export: a signature of a Weft graph, pruned to what its outputs
// need, as an ONNX model (opset 13) that onnx.checker accepts and ONNX
// runtimes run.  Variables become initializers holding the session's
// current values; constants become initializers.  Weft's image ops are
// NHWC and ONNX's NCHW, so Conv2D and pooling are wrapped in Transposes.
// Anything without an ONNX form (control flow, state updates, random ops)
// is refused with the node named.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/status.h"
#include "graph/graph.h"
#include "model/model.h"
#include "model/onnx_importer.h"
#include "model/onnx_module.h"
#include "weft/version.h"

namespace weft {
namespace {

constexpr int64_t kOpset = 13;

// ONNX's TensorProto.DataType for a Weft dtype; 0 when it has none (the
// importer's table).
int32_t OnnxType(weft_dtype t) { return onnx_import::OnnxFromDtype(t); }

class Exporter {
 public:
  Exporter(weft_graph* graph, weft_session* session, const Signature& sig)
      : graph_(graph), session_(session), sig_(sig) {
    model_.set_ir_version(7);  // the IR of opset 13 (ONNX 1.8)
    model_.set_producer_name("weft");
    model_.set_producer_version(weft_version_string());
    onnx::OperatorSetIdProto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(kOpset);
    g_ = model_.mutable_graph();
    g_->set_name(sig.name);
  }

  weft_status* Run(std::string* bytes) {
    // The signature's inputs are the graph's inputs, by key.
    for (const SignatureEntry& e : sig_.inputs) {
      names_[Key(e.output)] = e.key;
      WEFT_RETURN_IF_ERROR(ValueInfo(e.key, e.output, g_->add_input()));
    }
    std::vector<const weft_node*> order;
    WEFT_RETURN_IF_ERROR(Prune(&order));
    for (const weft_node* n : order) WEFT_RETURN_IF_ERROR(Node(*n));
    for (const SignatureEntry& e : sig_.outputs) {
      onnx::NodeProto* id = g_->add_node();
      id->set_op_type("Identity");
      id->set_name("output/" + e.key);
      id->add_input(Name(e.output));
      id->add_output(e.key);
      WEFT_RETURN_IF_ERROR(ValueInfo(e.key, e.output, g_->add_output()));
    }
    if (!model_.SerializeToString(bytes))
      return Error(WEFT_RESOURCE_EXHAUSTED,
                   "the model is too large for ONNX's 2 GiB protobuf limit");
    return nullptr;
  }

 private:
  static std::string Key(weft_output o) {
    return o.node->name + ":" + std::to_string(o.index);
  }
  std::string Name(weft_output o) {
    auto it = names_.find(Key(o));
    return it != names_.end() ? it->second : Key(o);
  }
  std::string Fresh(const std::string& base) {
    return base + "#" + std::to_string(fresh_++);
  }

  weft_status* ValueInfo(const std::string& name, weft_output o,
                         onnx::ValueInfoProto* out) {
    weft_dtype dt = o.node->output_dtypes[o.index];
    if (OnnxType(dt) == 0)
      return Errorf(WEFT_UNIMPLEMENTED, "'%s' is %s, which ONNX has no type "
                    "for", name.c_str(), weft_dtype_name(dt));
    out->set_name(name);
    onnx::TypeProto_Tensor* t = out->mutable_type()->mutable_tensor_type();
    t->set_elem_type(OnnxType(dt));
    const ShapeInfo& s = o.node->output_shapes[o.index];
    if (s.known_rank()) {
      onnx::TensorShapeProto* shape = t->mutable_shape();
      for (int64_t dim : s.dims) {
        onnx::TensorShapeProto_Dimension* d = shape->add_dim();
        if (dim >= 0) d->set_dim_value(dim);
      }
    }
    return nullptr;
  }

  // What the outputs need, in creation order (which is topological).
  weft_status* Prune(std::vector<const weft_node*>* order) {
    std::unordered_set<const weft_node*> fed;
    for (const SignatureEntry& e : sig_.inputs) fed.insert(e.output.node);
    std::unordered_set<const weft_node*> seen;
    std::vector<const weft_node*> stack;
    for (const SignatureEntry& e : sig_.outputs) stack.push_back(e.output.node);
    while (!stack.empty()) {
      const weft_node* n = stack.back();
      stack.pop_back();
      if (fed.count(n) || !seen.insert(n).second) continue;
      for (const weft_output& in : n->inputs) stack.push_back(in.node);
    }
    order->assign(seen.begin(), seen.end());
    std::sort(order->begin(), order->end(),
              [](const weft_node* a, const weft_node* b) {
                return a->id < b->id;
              });
    return nullptr;
  }

  onnx::NodeProto* Add(const std::string& op, const weft_node& n,
                       std::vector<std::string> inputs,
                       const std::string& output) {
    onnx::NodeProto* p = g_->add_node();
    p->set_op_type(op);
    p->set_name(Fresh(n.name));
    for (const std::string& i : inputs) p->add_input(i);
    p->add_output(output);
    return p;
  }
  static void IntsAttr(onnx::NodeProto* p, const char* name,
                       const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void IntAttr(onnx::NodeProto* p, const char* name, int64_t v) {
    onnx::AttributeProto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void StringAttr(onnx::NodeProto* p, const char* name,
                         const std::string& v) {
    onnx::AttributeProto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  // An int64 vector initializer (the tensors ONNX takes for shapes, axes).
  std::string Int64s(const std::string& base, const std::vector<int64_t>& v) {
    onnx::TensorProto* t = g_->add_initializer();
    std::string name = Fresh(base);
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return name;
  }

  weft_status* Initializer(const std::string& name, const TensorValue& v) {
    if (OnnxType(v.dtype) == 0)
      return Errorf(WEFT_UNIMPLEMENTED, "'%s' is %s, which ONNX has no type "
                    "for", name.c_str(), weft_dtype_name(v.dtype));
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(OnnxType(v.dtype));
    for (int32_t i = 0; i < v.dims.rank(); ++i) t->add_dims(v.dims[i]);
    if (v.byte_size() > 0) {
      const void* data = v.host_data();
      if (data == nullptr)
        return Error(WEFT_INTERNAL, "'" + name + "' is not in host memory");
      t->set_raw_data(data, v.byte_size());
    }
    return nullptr;
  }

  // The value the session holds for a variable.
  weft_status* VariableValue(const weft_node& n) {
    if (session_ == nullptr)
      return Error(WEFT_FAILED_PRECONDITION,
                   "node '" + n.name + "' is a Variable and the model has no "
                   "session holding its value");
    weft_output o{const_cast<weft_node*>(&n), 0};
    weft_tensor* value = nullptr;
    WEFT_RETURN_IF_ERROR(Annotate(
        weft_session_run(session_, nullptr, nullptr, 0, &o, 1, nullptr, 0,
                         &value),
        "reading variable '" + n.name + "' for the export"));
    weft_status* st = Initializer(Key(o), value->value);
    weft_tensor_destroy(value);
    return st;
  }

  static const AttrValue* Attr(const weft_node& n, const char* name) {
    return FindAttr(n.attrs, name);
  }

  weft_status* Refuse(const weft_node& n, const std::string& why) {
    return Error(WEFT_UNIMPLEMENTED,
                 "exporting signature '" + sig_.name + "' to ONNX: node '" +
                     n.name + "' (" + n.op_type + "): " + why);
  }

  // NHWC image ops: Transpose in, the ONNX op, Transpose back.
  weft_status* Image(const weft_node& n, const std::string& op,
                     std::vector<std::string> extra_inputs,
                     onnx::NodeProto** out) {
    const AttrValue* format = Attr(n, "data_format");
    if (format != nullptr && format->s != "NHWC")
      return Refuse(n, "data_format " + format->s + " is not exported");
    std::string nchw = Fresh(n.name + "/nchw");
    IntsAttr(Add("Transpose", n, {Name(n.inputs[0])}, nchw), "perm",
             {0, 3, 1, 2});
    std::vector<std::string> inputs{nchw};
    for (const std::string& e : extra_inputs) inputs.push_back(e);
    std::string result = Fresh(n.name + "/result");
    *out = Add(op, n, inputs, result);
    IntsAttr(Add("Transpose", n, {result}, Key({const_cast<weft_node*>(&n), 0})),
             "perm", {0, 2, 3, 1});
    const AttrValue* padding = Attr(n, "padding");
    if (padding != nullptr) {
      if (padding->s == "SAME") {
        StringAttr(*out, "auto_pad", "SAME_UPPER");
      } else if (padding->s == "VALID") {
        StringAttr(*out, "auto_pad", "VALID");
      } else {
        return Refuse(n, "padding " + padding->s + " is not exported");
      }
    }
    const AttrValue* strides = Attr(n, "strides");
    if (strides != nullptr && strides->ints.size() == 4)
      IntsAttr(*out, "strides", {strides->ints[1], strides->ints[2]});
    return nullptr;
  }

  weft_status* Reduce(const weft_node& n, const std::string& op) {
    const AttrValue* axes = Attr(n, "axes");
    const AttrValue* keep = Attr(n, "keep_dims");
    std::string out = Key({const_cast<weft_node*>(&n), 0});
    if (axes != nullptr && axes->ints.empty()) {
      Add("Identity", n, {Name(n.inputs[0])}, out);
      return nullptr;
    }
    std::vector<std::string> inputs{Name(n.inputs[0])};
    // Opset 13 takes ReduceSum's axes as an input, the others' as an
    // attribute.
    if (op == "ReduceSum" && axes != nullptr)
      inputs.push_back(Int64s(n.name + "/axes", axes->ints));
    onnx::NodeProto* p = Add(op, n, inputs, out);
    if (op != "ReduceSum" && axes != nullptr) IntsAttr(p, "axes", axes->ints);
    IntAttr(p, "keepdims", keep != nullptr && keep->i ? 1 : 0);
    return nullptr;
  }

  weft_status* Node(const weft_node& n) {
    static const std::map<std::string, std::string> kSame = {
        {"Add", "Add"},         {"Sub", "Sub"},         {"Mul", "Mul"},
        {"Div", "Div"},         {"Maximum", "Max"},     {"Minimum", "Min"},
        {"Pow", "Pow"},         {"Relu", "Relu"},       {"Sigmoid", "Sigmoid"},
        {"Tanh", "Tanh"},       {"Exp", "Exp"},         {"Log", "Log"},
        {"Neg", "Neg"},         {"Abs", "Abs"},         {"Sqrt", "Sqrt"},
        {"Floor", "Floor"},     {"Ceil", "Ceil"},       {"Identity", "Identity"},
        {"BiasAdd", "Add"},     {"Softmax", "Softmax"}, {"LogSoftmax", "LogSoftmax"},
        {"Equal", "Equal"},     {"Less", "Less"},       {"Greater", "Greater"},
        {"Reciprocal", "Reciprocal"}, {"Sign", "Sign"},  {"Erf", "Erf"},
    };
    const std::string out = Key({const_cast<weft_node*>(&n), 0});
    const std::string& op = n.op_type;
    if (op == "Placeholder")
      return Refuse(n, "the signature's outputs need this input, which the "
                       "signature does not feed");
    if (op == "Const") {
      const AttrValue* v = Attr(n, "value");
      if (v == nullptr) return Refuse(n, "no value");
      return Initializer(out, v->tensor);
    }
    if (op == "Variable") return VariableValue(n);
    if (op == "BiasAdd") {
      const AttrValue* format = Attr(n, "data_format");
      if (format != nullptr && format->s != "NHWC")
        return Refuse(n, "data_format " + format->s + " is not exported");
    }
    auto same = kSame.find(op);
    if (same != kSame.end()) {
      std::vector<std::string> inputs;
      for (const weft_output& in : n.inputs) inputs.push_back(Name(in));
      onnx::NodeProto* p = Add(same->second, n, inputs, out);
      // Weft's softmaxes take the last axis; opset 13's default is -1 too,
      // but say so.
      if (op == "Softmax" || op == "LogSoftmax") IntAttr(p, "axis", -1);
      return nullptr;
    }
    if (op == "Square") {
      Add("Mul", n, {Name(n.inputs[0]), Name(n.inputs[0])}, out);
      return nullptr;
    }
    if (op == "Rsqrt") {
      std::string root = Fresh(n.name + "/sqrt");
      Add("Sqrt", n, {Name(n.inputs[0])}, root);
      Add("Reciprocal", n, {root}, out);
      return nullptr;
    }
    if (op == "MatMul") {
      std::string a = Name(n.inputs[0]), b = Name(n.inputs[1]);
      for (int k = 0; k < 2; ++k) {
        const AttrValue* t = Attr(n, k ? "transpose_b" : "transpose_a");
        if (t == nullptr || !t->i) continue;
        std::string& side = k ? b : a;
        std::string transposed = Fresh(n.name + (k ? "/b_t" : "/a_t"));
        IntsAttr(Add("Transpose", n, {side}, transposed), "perm", {1, 0});
        side = transposed;
      }
      Add("MatMul", n, {a, b}, out);
      return nullptr;
    }
    if (op == "Reshape") {
      const AttrValue* shape = Attr(n, "shape");
      if (shape == nullptr) return Refuse(n, "no shape");
      // ONNX reads a 0 as "keep this dimension" unless allowzero (opset
      // 14); Weft's 0 is an empty dimension.
      for (int64_t d : shape->ints)
        if (d == 0) return Refuse(n, "a 0 in the shape has no opset-13 form");
      Add("Reshape", n, {Name(n.inputs[0]), Int64s(n.name + "/shape",
                                                  shape->ints)},
          out);
      return nullptr;
    }
    if (op == "Transpose") {
      const AttrValue* perm = Attr(n, "perm");
      if (perm == nullptr) return Refuse(n, "no perm");
      IntsAttr(Add("Transpose", n, {Name(n.inputs[0])}, out), "perm",
               perm->ints);
      return nullptr;
    }
    if (op == "Cast") {
      const AttrValue* to = Attr(n, "DstT");
      int32_t type = to ? OnnxType(static_cast<weft_dtype>(to->i)) : 0;
      if (type == 0) return Refuse(n, "no ONNX type for the destination");
      IntAttr(Add("Cast", n, {Name(n.inputs[0])}, out), "to", type);
      return nullptr;
    }
    if (op == "Concat") {
      const AttrValue* axis = Attr(n, "axis");
      std::vector<std::string> inputs;
      for (const weft_output& in : n.inputs) inputs.push_back(Name(in));
      IntAttr(Add("Concat", n, inputs, out), "axis", axis ? axis->i : 0);
      return nullptr;
    }
    if (op == "ArgMax" || op == "ArgMin") {
      const AttrValue* axis = Attr(n, "axis");
      const AttrValue* type = Attr(n, "output_type");
      bool int32 = type != nullptr && type->i == WEFT_INT32;
      std::string index = int32 ? Fresh(n.name + "/int64") : out;
      onnx::NodeProto* p = Add(op, n, {Name(n.inputs[0])}, index);
      IntAttr(p, "axis", axis ? axis->i : 0);
      IntAttr(p, "keepdims", 0);
      if (int32)
        IntAttr(Add("Cast", n, {index}, out), "to", onnx::TensorProto::INT32);
      return nullptr;
    }
    if (op == "Mean") return Reduce(n, "ReduceMean");
    if (op == "Sum") return Reduce(n, "ReduceSum");
    if (op == "Max") return Reduce(n, "ReduceMax");
    if (op == "Min") return Reduce(n, "ReduceMin");
    if (op == "Prod") return Reduce(n, "ReduceProd");
    if (op == "Squeeze" || op == "ExpandDims") {
      std::vector<int64_t> axes;
      if (op == "ExpandDims") {
        axes.push_back(Attr(n, "axis") ? Attr(n, "axis")->i : 0);
      } else if (const AttrValue* dims = Attr(n, "squeeze_dims")) {
        axes = dims->ints;
      }
      std::vector<std::string> inputs{Name(n.inputs[0])};
      if (!axes.empty() || op == "ExpandDims")
        inputs.push_back(Int64s(n.name + "/axes", axes));
      Add(op == "Squeeze" ? "Squeeze" : "Unsqueeze", n, inputs, out);
      return nullptr;
    }
    if (op == "Conv2D") {
      // The filter is [h, w, in, out]; ONNX wants [out, in, h, w].
      std::string filter = Fresh(n.name + "/oihw");
      IntsAttr(Add("Transpose", n, {Name(n.inputs[1])}, filter), "perm",
               {3, 2, 0, 1});
      onnx::NodeProto* conv = nullptr;
      WEFT_RETURN_IF_ERROR(Image(n, "Conv", {filter}, &conv));
      const AttrValue* dilations = Attr(n, "dilations");
      if (dilations != nullptr && dilations->ints.size() == 4)
        IntsAttr(conv, "dilations", {dilations->ints[1], dilations->ints[2]});
      return nullptr;
    }
    if (op == "MaxPool" || op == "AvgPool") {
      onnx::NodeProto* pool = nullptr;
      WEFT_RETURN_IF_ERROR(
          Image(n, op == "MaxPool" ? "MaxPool" : "AveragePool", {}, &pool));
      const AttrValue* ksize = Attr(n, "ksize");
      if (ksize == nullptr || ksize->ints.size() != 4)
        return Refuse(n, "ksize is not 4 numbers");
      IntsAttr(pool, "kernel_shape", {ksize->ints[1], ksize->ints[2]});
      return nullptr;
    }
    return Refuse(n, "the op has no ONNX form here (the exporter writes "
                     "inference graphs: arithmetic, MatMul, convolutions, "
                     "pooling, activations, reductions and reshapes)");
  }

  weft_graph* graph_;
  weft_session* session_;
  const Signature& sig_;
  onnx::ModelProto model_;
  onnx::GraphProto* g_ = nullptr;
  std::unordered_map<std::string, std::string> names_;
  int fresh_ = 0;
};

}  // namespace

weft_status* ExportOnnxModel(weft_graph* graph, weft_session* session,
                             const Signature& signature, std::string* bytes) {
  Exporter exporter(graph, session, signature);
  return exporter.Run(bytes);
}

}  // namespace weft
