// ONNX import (issue 14): an ONNX model (opsets 1 to 17, the default
// domain) becomes a Weft inference graph with one signature,
// serving_default.
//
//  - Graph inputs that are not initializers become Placeholders of the
//    declared dtype and shape (symbolic dims unknown), keyed by their ONNX
//    names.  An input that is also an initializer is a constant: ONNX lets
//    a runtime override such defaults, Weft folds them.
//  - Initializers and Constant nodes become Const nodes.
//  - Each node goes to the converter of its op (onnx_ops_*.cc).  ONNX
//    inputs that Weft takes as attributes (Reshape's shape, Slice's starts,
//    Pad's pads, axes) must be computable while importing: initializers,
//    Constants, Shape of a tensor whose shape is known, and any
//    computation on those (run once, through a session on the graph).
//  - Keys: an ONNX name that is not a valid signature key (letters,
//    digits, `_ . / -`) is mapped by replacing every other byte with `_`;
//    names that would then collide, are empty or longer than 256 bytes are
//    refused (INVALID_ARGUMENT).
//
// What Weft cannot run (ops without a mapping, attribute values, dtypes,
// inputs only known at run time) is refused with UNIMPLEMENTED naming the
// node and the reason; bytes that do not parse are DATA_LOSS.  The file is
// treated as hostile: every index, count and size is checked here, whatever
// onnx::checker said.
#include <set>

#include "base/status.h"
#include "model/model.h"
#include "model/onnx_importer.h"
#include "model/onnx_module.h"

#include <onnx/checker.h>

namespace weft {

namespace {

using onnx_import::ConverterMap;
using onnx_import::Fail;
using onnx_import::ImportError;
using onnx_import::Importer;
using onnx_import::OnnxNode;
using onnx_import::Unsupported;
using onnx_import::Value;

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 17;

const ConverterMap& Converters() {
  static const ConverterMap* map = [] {
    auto* m = new ConverterMap;
    onnx_import::AddMathConverters(m);
    onnx_import::AddNnConverters(m);
    onnx_import::AddShapeConverters(m);
    return m;
  }();
  return *map;
}

bool DefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// The signature key for an ONNX name (see the top of the file).
std::string KeyFor(const std::string& name, const char* what) {
  if (name.empty() || name.size() > 256)
    Fail(WEFT_INVALID_ARGUMENT,
         std::string("graph ") + what + " '" + name.substr(0, 64) +
             "' cannot be a signature key: keys are 1 to 256 bytes");
  std::string key = name;
  for (char& c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' ||
              c == '-';
    if (!ok) c = '_';
  }
  return key;
}

void AddKey(std::set<std::string>* keys, const std::string& key,
            const std::string& name, const char* what) {
  if (!keys->insert(key).second)
    Fail(WEFT_INVALID_ARGUMENT,
         std::string("graph ") + what + " '" + name + "' maps to key '" + key +
             "', which another " + what + " already has");
}

std::string NodeLabel(const onnx::NodeProto& n, int index) {
  std::string label = "node " + std::to_string(index) + " (";
  if (!n.name().empty()) label += "'" + n.name() + "', ";
  return label + n.op_type() + ")";
}

void Import(const std::string& bytes, weft_graph* graph, LoadedGraph* out) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    Fail(WEFT_DATA_LOSS, "not an ONNX model (the protobuf does not parse)");
  if (!model.has_graph())
    Fail(WEFT_DATA_LOSS, "the ONNX model has no graph");
  const onnx::GraphProto& g = model.graph();

  // Every op first, so that a model needing several missing ops says so
  // once, naming them all.
  const ConverterMap& converters = Converters();
  std::set<std::string> missing;
  std::string first_missing;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    std::string op = n.op_type();
    if (!DefaultDomain(n.domain())) op = n.domain() + "." + op;
    if (DefaultDomain(n.domain()) && converters.count(op)) continue;
    if (missing.empty()) first_missing = NodeLabel(n, i);
    missing.insert(op);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& op : missing) list += (list.empty() ? "" : ", ") + op;
    Unsupported(first_missing + ": Weft has no mapping for ONNX op" +
                (missing.size() > 1 ? "s " : " ") + list);
  }

  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto& o : model.opset_import())
    if (DefaultDomain(o.domain())) opset = o.version();
  if (opset < 0)
    Fail(WEFT_INVALID_ARGUMENT, "the model imports no opset of ONNX's "
                                "default domain");
  if (opset < kMinOpset || opset > kMaxOpset)
    Unsupported("the model uses opset " + std::to_string(opset) +
                "; this importer reads opsets " + std::to_string(kMinOpset) +
                " to " + std::to_string(kMaxOpset));

  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.size() > 400) what = what.substr(0, 400) + "...";
    Fail(WEFT_INVALID_ARGUMENT, "not a valid ONNX model: " + what);
  } catch (...) {
    Fail(WEFT_INVALID_ARGUMENT, "not a valid ONNX model (onnx::checker)");
  }

  if (g.sparse_initializer_size() > 0)
    Unsupported("the graph has sparse initializers");

  Importer im(graph);
  Signature sig;
  sig.name = WEFT_DEFAULT_SIGNATURE;

  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto& t = g.initializer(i);
    if (t.name().empty())
      Fail(WEFT_INVALID_ARGUMENT, "initializer " + std::to_string(i) +
                                      " has no name");
    Value v;
    v.plain = im.Const(onnx_import::TensorFromProto(
        t, "initializer '" + t.name() + "'"));
    im.Define(t.name(), v);
  }

  std::set<std::string> keys;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (im.Defined(in.name())) continue;  // an initializer's default
    const std::string what = "graph input '" + in.name() + "'";
    if (!in.type().has_tensor_type())
      Unsupported(what + " is not a tensor (sequences, maps and optionals "
                         "are not supported)");
    const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
    weft_dtype dtype = onnx_import::DtypeFromOnnx(tt.elem_type(), what);
    std::vector<int64_t> dims;
    int32_t rank = -1;
    if (tt.has_shape()) {
      if (tt.shape().dim_size() > WEFT_MAX_RANK)
        Unsupported(what + " has rank above " + std::to_string(WEFT_MAX_RANK));
      rank = tt.shape().dim_size();
      for (const auto& d : tt.shape().dim())
        dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value()
                                                               : -1);
    }
    std::string key = KeyFor(in.name(), "input");
    AddKey(&keys, key, in.name(), "input");
    Value v;
    v.plain = im.Placeholder(key, dtype, dims, rank);
    im.Define(in.name(), v);
    sig.inputs.push_back({key, v.plain});
  }

  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    try {
      OnnxNode node(&im, n, opset);
      for (int k = 0; k < n.input_size(); ++k)
        if (!n.input(k).empty()) im.Get(n.input(k));  // defined before use
      converters.at(n.op_type())(node);
      node.Finish();
    } catch (ImportError& e) {
      e.message = NodeLabel(n, i) + ": " + e.message;
      throw;
    }
  }

  keys.clear();
  for (const onnx::ValueInfoProto& o : g.output()) {
    if (!im.Defined(o.name()))
      Fail(WEFT_INVALID_ARGUMENT,
           "graph output '" + o.name() + "' is computed by no node");
    std::string key = KeyFor(o.name(), "output");
    AddKey(&keys, key, o.name(), "output");
    weft_output value = im.Plain(im.Get(o.name()));
    // A graph input fetched as an output goes through an Identity, so the
    // fetch is never the fed tensor itself.
    if (std::string(weft_node_op_type(value.node)) == "Placeholder")
      value = im.Op("Identity", {value});
    sig.outputs.push_back({key, value});
  }
  out->signatures.push_back(std::move(sig));
}

}  // namespace

weft_status* ImportOnnxModel(const std::string& bytes, const std::string& path,
                             weft_graph* graph, LoadedGraph* out) {
  weft_status* st = Guard([&]() -> weft_status* {
    try {
      Import(bytes, graph, out);
    } catch (const ImportError& e) {
      return Error(e.code, e.message);
    }
    return nullptr;
  });
  if (st != nullptr) return Annotate(st, "cannot load '" + path + "'");
  return nullptr;
}

}  // namespace weft
