// weft_tensor_array_*: TensorArray nodes (runtime/ops/tensor_array.cc) with
// their name, loop depth, dtype and element shape filled in from the node
// that made the array.
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "control/context.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "weft/control.h"

namespace weft {
namespace {

// The TensorArray node `array` names, checked.
weft_status* Maker(weft_graph* g, const weft_tensor_array& array,
                   const char* fn, const weft_node** out) {
  if (g == nullptr || array.name == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: graph and array.name must be "
                  "given", fn);
  const weft_node* n = weft_graph_node_by_name(g, array.name);
  if (n == nullptr || n->op_type != "TensorArray")
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: '%s' is not a TensorArray of this graph", fn,
                  array.name);
  if (array.flow.node == nullptr ||
      weft_output_dtype(array.flow) != WEFT_FLOAT32)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: array '%s' has no flow (a float32 value from "
                  "weft_tensor_array_create or a write)", fn, array.name);
  *out = n;
  return nullptr;
}

// A value written to the array (rows of it for unstack, `rows`): its dtype
// must be the array's, its static shape must fit the element shape.
weft_status* CheckValue(const weft_node* maker, weft_output value, bool rows,
                        const char* fn) {
  if (value.node == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: value must be given", fn);
  weft_dtype want =
      static_cast<weft_dtype>(FindAttr(maker->attrs, "dtype")->i);
  if (weft_output_dtype(value) != want)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: array '%s' holds %s, the value is %s", fn,
                  maker->name.c_str(), weft_dtype_name(want),
                  weft_dtype_name(weft_output_dtype(value)));
  const ShapeInfo& s = value.node->output_shapes[value.index];
  const AttrValue* e = FindAttr(maker->attrs, "element_shape");
  if (!s.known_rank() || e->i < 0) return nullptr;
  if (rows && s.rank == 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: a scalar has no rows", fn);
  const int32_t skip = rows ? 1 : 0;
  bool ok = s.rank - skip == e->i;
  for (int32_t d = 0; ok && d < e->i; ++d) {
    int64_t a = s.dims[d + skip], b = e->ints[d];
    ok = a < 0 || b < 0 || a == b;
  }
  if (!ok) {
    ShapeInfo es;
    es.rank = static_cast<int32_t>(e->i);
    es.dims = e->ints;
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: array '%s' holds elements of shape %s; the value%s "
                  "has shape %s", fn, maker->name.c_str(),
                  es.ToString().c_str(), rows ? " (rows of it)" : "",
                  s.ToString().c_str());
  }
  return nullptr;
}

// A node on the array, with its name and depth set.
weft_op_builder* Begin(weft_graph* g, const weft_node* maker, const char* op,
                       std::initializer_list<weft_output> inputs) {
  std::string name = maker->name + "/" + op;
  std::string unique = name;
  for (int k = 1; weft_graph_node_by_name(g, unique.c_str()) != nullptr; ++k)
    unique = name + "_" + std::to_string(k);
  weft_op_builder* b = weft_op_begin(g, op, unique.c_str());
  for (const weft_output& in : inputs) weft_op_add_input(b, in);
  weft_op_set_attr_string(b, "tensor_array", maker->name.c_str());
  weft_op_set_attr_int(b, "depth", FindAttr(maker->attrs, "depth")->i);
  return b;
}

// The static element shape: the maker's, or else (as TensorFlow infers it)
// that of the value written last before `flow`, found by following the flow
// back through writes and the control-flow nodes a loop or cond puts on it.
ShapeInfo ElementShape(const weft_node* maker, weft_output flow) {
  const AttrValue* a = FindAttr(maker->attrs, "element_shape");
  ShapeInfo s;
  s.rank = static_cast<int32_t>(a->i);
  s.dims = a->ints;
  if (s.known_rank()) return s;
  // Depth-first over what a flow passes through; a loop's Merge also
  // through its back edges (the body's writes).
  std::vector<const weft_node*> todo = {flow.node};
  std::unordered_set<const weft_node*> seen;
  while (!todo.empty() && seen.size() < 10000) {
    const weft_node* n = todo.back();
    todo.pop_back();
    if (n == nullptr || n == maker || !seen.insert(n).second) continue;
    const std::string& op = n->op_type;
    const AttrValue* named = FindAttr(n->attrs, "tensor_array");
    const bool ours = named != nullptr && named->s == maker->name;
    if (ours && op == "TensorArrayWrite")
      return n->inputs[1].node->output_shapes[n->inputs[1].index];
    if (ours && op == "TensorArrayUnstack") {
      ShapeInfo v = n->inputs[0].node->output_shapes[n->inputs[0].index];
      if (!v.known_rank() || v.rank < 1) return ShapeInfo::Unknown();
      v.rank -= 1;
      v.dims.erase(v.dims.begin());
      return v;
    }
    if (op == "Merge")
      for (const weft_node* next : n->graph->BackEdges(n))
        todo.push_back(next);
    if (op == "Enter" || op == "Merge" || op == "Exit" || op == "Switch" ||
        op == "Identity" || op == "NextIteration" || ours)
      for (const weft_output& in : n->inputs) todo.push_back(in.node);
  }
  return s;
}

// dtype and element_shape of what the array holds.
void TypeAttrs(weft_op_builder* b, const weft_node* maker, weft_output flow) {
  weft_op_set_attr_dtype(
      b, "dtype",
      static_cast<weft_dtype>(FindAttr(maker->attrs, "dtype")->i));
  ShapeInfo s = ElementShape(maker, flow);
  weft_op_set_attr_shape(b, "element_shape",
                         s.known_rank() ? s.dims.data() : nullptr, s.rank);
}

weft_status* Finish(weft_op_builder* b, weft_output* out) {
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  *out = weft_output{n, 0};
  return nullptr;
}

}  // namespace
}  // namespace weft

using weft::Errorf;

extern "C" {

weft_status* weft_tensor_array_create(weft_graph* graph, const char* name,
                                      weft_dtype dtype, weft_output size,
                                      const weft_shape* element_shape,
                                      int32_t dynamic_size,
                                      weft_tensor_array* out) {
  if (graph == nullptr || out == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_create: graph and out must be given");
  if (element_shape != nullptr &&
      (element_shape->rank < -1 || element_shape->rank > WEFT_MAX_RANK ||
       (element_shape->rank > 0 && element_shape->dims == nullptr)))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_create: element_shape rank %d is not "
                  "-1..%d with dims", element_shape->rank, WEFT_MAX_RANK);
  std::string base = name != nullptr && *name ? name : "TensorArray";
  std::string unique = base;
  for (int k = 1; weft_graph_node_by_name(graph, unique.c_str()) != nullptr;
       ++k)
    unique = base + "_" + std::to_string(k);
  weft_op_builder* b = weft_op_begin(graph, "TensorArray", unique.c_str());
  weft_op_add_input(b, size);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  if (element_shape != nullptr)
    weft_op_set_attr_shape(b, "element_shape", element_shape->dims,
                           element_shape->rank);
  weft_op_set_attr_bool(b, "dynamic_size", dynamic_size != 0);
  weft_op_set_attr_int(b, "depth",
                       weft::ControlContext::LoopDepth(graph->impl.get()));
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  out->name = n->name.c_str();
  out->flow = weft_output{n, 0};
  return nullptr;
}

weft_status* weft_tensor_array_write(weft_graph* graph,
                                     weft_tensor_array* array,
                                     weft_output index, weft_output value) {
  if (array == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_write: array must be given");
  const weft_node* maker = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft::Maker(graph, *array, "weft_tensor_array_write", &maker));
  WEFT_RETURN_IF_ERROR(
      weft::CheckValue(maker, value, false, "weft_tensor_array_write"));
  weft_output flow;
  WEFT_RETURN_IF_ERROR(weft::Finish(
      weft::Begin(graph, maker, "TensorArrayWrite",
                  {index, value, array->flow}),
      &flow));
  array->flow = flow;
  return nullptr;
}

weft_status* weft_tensor_array_unstack(weft_graph* graph,
                                       weft_tensor_array* array,
                                       weft_output value) {
  if (array == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_unstack: array must be given");
  const weft_node* maker = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft::Maker(graph, *array, "weft_tensor_array_unstack", &maker));
  WEFT_RETURN_IF_ERROR(
      weft::CheckValue(maker, value, true, "weft_tensor_array_unstack"));
  weft_output flow;
  WEFT_RETURN_IF_ERROR(weft::Finish(
      weft::Begin(graph, maker, "TensorArrayUnstack", {value, array->flow}),
      &flow));
  array->flow = flow;
  return nullptr;
}

weft_status* weft_tensor_array_read(weft_graph* graph,
                                    weft_tensor_array array,
                                    weft_output index, weft_output* out) {
  const weft_node* maker = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft::Maker(graph, array, "weft_tensor_array_read", &maker));
  if (out == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_read: out must be given");
  weft_op_builder* b =
      weft::Begin(graph, maker, "TensorArrayRead", {index, array.flow});
  weft::TypeAttrs(b, maker, array.flow);
  return weft::Finish(b, out);
}

weft_status* weft_tensor_array_stack(weft_graph* graph,
                                     weft_tensor_array array,
                                     weft_output* out) {
  const weft_node* maker = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft::Maker(graph, array, "weft_tensor_array_stack", &maker));
  if (out == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_stack: out must be given");
  weft_op_builder* b =
      weft::Begin(graph, maker, "TensorArrayStack", {array.flow});
  weft::TypeAttrs(b, maker, array.flow);
  return weft::Finish(b, out);
}

weft_status* weft_tensor_array_size(weft_graph* graph,
                                    weft_tensor_array array,
                                    weft_output* out) {
  const weft_node* maker = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft::Maker(graph, array, "weft_tensor_array_size", &maker));
  if (out == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_tensor_array_size: out must be given");
  return weft::Finish(
      weft::Begin(graph, maker, "TensorArraySize", {array.flow}), out);
}

}  // extern "C"
