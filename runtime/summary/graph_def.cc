// A Weft graph as a TensorFlow GraphDef, for TensorBoard's graph dashboard
// (summary_writer.cc writes it into an event file).  Op names stay Weft's
// (TensorBoard draws any op); every declared attribute becomes an AttrValue;
// "_output_shapes" gives the edges their shapes; `device` is where the node
// ran when the caller has run metadata, else the node's own constraint.
// The graph dashboard only draws it: nothing here needs TensorFlow to be
// able to run it (weft_model_export_onnx is the interchange format).
#include "summary/graph_def.h"

#include <unordered_map>

#include "base/status.h"
#include "graph/graph.h"
#include "model/graphdef_import.h"
#include "tf_graph.pb.h"

namespace weft {
namespace summary {
namespace {

tf::DataType TfDtype(weft_dtype d) {
  for (int t = tf::DT_FLOAT; t <= tf::DT_UINT64; ++t)
    if (graphdef_import::WeftDtype(t) == d) return static_cast<tf::DataType>(t);
  return tf::DT_INVALID;
}

void PutShape(const ShapeInfo& s, tf::TensorShapeProto* out) {
  if (!s.known_rank()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t d : s.dims) out->add_dim()->set_size(d < 0 ? -1 : d);
}

void PutAttr(const AttrValue& v, tf::AttrValue* out) {
  switch (v.type) {
    case AttrType::kInt: out->set_i(v.i); break;
    case AttrType::kFloat: out->set_f(static_cast<float>(v.f)); break;
    case AttrType::kBool: out->set_b(v.i != 0); break;
    case AttrType::kDtype:
      out->set_type(TfDtype(static_cast<weft_dtype>(v.i)));
      break;
    case AttrType::kString: out->set_s(v.s); break;
    case AttrType::kIntList:
      out->mutable_list()->mutable_i()->Add(v.ints.begin(), v.ints.end());
      break;
    case AttrType::kFloatList:
      for (double f : v.floats)
        out->mutable_list()->add_f(static_cast<float>(f));
      break;
    case AttrType::kShape: {
      ShapeInfo s;
      s.rank = static_cast<int32_t>(v.i);
      s.dims = v.ints;
      PutShape(s, out->mutable_shape());
      break;
    }
    case AttrType::kTensor: {
      const TensorValue& t = v.tensor;
      tf::TensorProto* p = out->mutable_tensor();
      p->set_dtype(TfDtype(t.dtype));
      for (int32_t k = 0; k < t.dims.rank(); ++k)
        p->mutable_tensor_shape()->add_dim()->set_size(t.dims[k]);
      // The dashboard shows a constant's dtype and shape; its bytes only
      // when small (a large embedding would make the file huge).
      constexpr size_t kMaxConstantBytes = 1024;
      const void* data = t.host_data();
      if (data != nullptr && t.byte_size() <= kMaxConstantBytes)
        p->set_tensor_content(data, t.byte_size());
      break;
    }
  }
}

std::string InputName(weft_output o) {
  return o.index == 0 ? o.node->name
                      : o.node->name + ":" + std::to_string(o.index);
}

}  // namespace

weft_status* GraphDefBytes(
    const Graph& g,
    const std::function<const char*(const weft_node*)>& device_of,
    std::string* out) {
  tf::GraphDef def;
  def.mutable_versions()->set_producer(1);
  for (int32_t i = 0; i < g.size(); ++i) {
    const weft_node* node = g.At(i);
    tf::NodeDef* n = def.add_node();
    n->set_name(node->name);
    n->set_op(node->op_type);
    const char* device = device_of ? device_of(node) : nullptr;
    n->set_device(device != nullptr ? device : node->device);
    for (const weft_output& in : node->inputs) n->add_input(InputName(in));
    for (const weft_node* c : node->control_inputs)
      n->add_input("^" + c->name);
    auto* attrs = n->mutable_attr();
    for (const auto& [name, value] : node->attrs) {
      bool declared = false;
      for (const AttrDef& d : node->def->attrs) declared |= d.name == name;
      if (declared) PutAttr(value, &(*attrs)[name]);
    }
    if (!node->output_shapes.empty()) {
      tf::AttrValue::ListValue* shapes =
          (*attrs)["_output_shapes"].mutable_list();
      for (const ShapeInfo& s : node->output_shapes)
        PutShape(s, shapes->add_shape());
    }
  }
  if (!def.SerializeToString(out))
    return Error(WEFT_RESOURCE_EXHAUSTED,
                 "the graph is too large for an event file (2 GiB)");
  return nullptr;
}

}  // namespace summary
}  // namespace weft
