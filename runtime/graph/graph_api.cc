// The C API for building and inspecting graphs.
#include <cstring>
#include <memory>

#include "base/status.h"
#include "control/context.h"
#include "graph/graph.h"

using weft::AttrType;
using weft::AttrValue;
using weft::Error;
using weft::Errorf;

struct weft_op_builder {
  std::shared_ptr<weft::Graph> graph;
  std::unique_ptr<weft_node> node;
  // The first misuse seen by a setter, reported by weft_op_finish.
  std::string error;

  void Fail(const std::string& message) {
    if (error.empty()) error = message;
  }
  void Set(const char* name, AttrValue v) {
    if (name == nullptr || *name == '\0') return Fail("attribute name is empty");
    weft::SetAttr(&node->attrs, name, std::move(v));
  }
};

namespace weft {

void OpBuilderKeepAlive(weft_op_builder* b, weft_node* keep) {
  if (b != nullptr && b->node) b->node->keep_alive.push_back(keep);
}

}  // namespace weft

namespace {

const char* OrEmpty(const char* s) { return s ? s : ""; }

bool ValidOutput(const weft::Graph* g, weft_output o) {
  return g->Owns(o.node) && o.index >= 0 &&
         o.index < static_cast<int32_t>(o.node->output_dtypes.size());
}

}  // namespace

extern "C" {

weft_status* weft_graph_create(weft_graph** out_graph) {
  if (out_graph == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "out_graph is NULL");
  *out_graph = nullptr;
  return weft::Guard([&]() -> weft_status* {
    *out_graph = new weft_graph{std::make_shared<weft::Graph>()};
    return nullptr;
  });
}

void weft_graph_destroy(weft_graph* graph) { delete graph; }

weft_op_builder* weft_op_begin(weft_graph* graph, const char* op_type,
                               const char* name) {
  auto* b = new (std::nothrow) weft_op_builder;
  if (b == nullptr) return nullptr;
  try {
    b->node = std::make_unique<weft_node>();
    if (graph == nullptr) b->Fail("graph is NULL");
    else b->graph = graph->impl;
    if (op_type == nullptr || *op_type == '\0') b->Fail("op type is empty");
    else b->node->op_type = op_type;
    b->node->name = OrEmpty(name);
  } catch (...) {
    delete b;
    return nullptr;
  }
  return b;
}

void weft_op_add_input(weft_op_builder* b, weft_output input) {
  if (b == nullptr) return;
  if (b->graph && !ValidOutput(b->graph.get(), input)) {
    if (!b->graph->Owns(input.node))
      b->Fail("input " + std::to_string(b->node->inputs.size()) +
              " is not a node of this graph");
    else
      b->Fail("input " + std::to_string(b->node->inputs.size()) +
              " names output " + std::to_string(input.index) + " of '" +
              input.node->name + "', which has " +
              std::to_string(input.node->output_dtypes.size()) + " output(s)");
    return;
  }
  b->node->inputs.push_back(input);
}

void weft_op_add_input_list(weft_op_builder* b, const weft_output* inputs,
                            int32_t count) {
  if (b == nullptr) return;
  if (count < 0 || (count > 0 && inputs == nullptr))
    return b->Fail("bad input list");
  for (int32_t i = 0; i < count; ++i) weft_op_add_input(b, inputs[i]);
}

void weft_op_add_control_input(weft_op_builder* b, weft_node* node) {
  if (b == nullptr) return;
  if (b->graph && !b->graph->Owns(node))
    return b->Fail("control input is not a node of this graph");
  b->node->control_inputs.push_back(node);
}

void weft_op_set_device(weft_op_builder* b, const char* device) {
  if (b) b->node->device = OrEmpty(device);
}

void weft_op_set_attr_int(weft_op_builder* b, const char* name, int64_t v) {
  if (!b) return;
  AttrValue a;
  a.type = AttrType::kInt;
  a.i = v;
  b->Set(name, std::move(a));
}

void weft_op_set_attr_float(weft_op_builder* b, const char* name, double v) {
  if (!b) return;
  AttrValue a;
  a.type = AttrType::kFloat;
  a.f = v;
  b->Set(name, std::move(a));
}

void weft_op_set_attr_bool(weft_op_builder* b, const char* name, int32_t v) {
  if (!b) return;
  AttrValue a;
  a.type = AttrType::kBool;
  a.i = v != 0;
  b->Set(name, std::move(a));
}

void weft_op_set_attr_dtype(weft_op_builder* b, const char* name,
                            weft_dtype v) {
  if (!b) return;
  AttrValue a;
  a.type = AttrType::kDtype;
  a.i = v;
  b->Set(name, std::move(a));
}

void weft_op_set_attr_string(weft_op_builder* b, const char* name,
                             const char* v) {
  if (!b) return;
  AttrValue a;
  a.type = AttrType::kString;
  a.s = OrEmpty(v);
  b->Set(name, std::move(a));
}

void weft_op_set_attr_int_list(weft_op_builder* b, const char* name,
                               const int64_t* v, int32_t count) {
  if (!b) return;
  if (count < 0 || (count > 0 && v == nullptr))
    return b->Fail(std::string("bad list for attribute ") + OrEmpty(name));
  AttrValue a;
  a.type = AttrType::kIntList;
  a.ints.assign(v, v + count);
  b->Set(name, std::move(a));
}

void weft_op_set_attr_float_list(weft_op_builder* b, const char* name,
                                 const double* v, int32_t count) {
  if (!b) return;
  if (count < 0 || (count > 0 && v == nullptr))
    return b->Fail(std::string("bad list for attribute ") + OrEmpty(name));
  AttrValue a;
  a.type = AttrType::kFloatList;
  a.floats.assign(v, v + count);
  b->Set(name, std::move(a));
}

void weft_op_set_attr_shape(weft_op_builder* b, const char* name,
                            const int64_t* dims, int32_t rank) {
  if (!b) return;
  if (rank < -1 || rank > WEFT_MAX_RANK || (rank > 0 && dims == nullptr))
    return b->Fail(std::string("bad shape for attribute ") + OrEmpty(name));
  AttrValue a;
  a.type = AttrType::kShape;
  a.i = rank;
  if (rank > 0) a.ints.assign(dims, dims + rank);
  for (int64_t d : a.ints)
    if (d < -1)
      return b->Fail(std::string("shape attribute ") + OrEmpty(name) +
                     " has a dimension below -1");
  b->Set(name, std::move(a));
}

void weft_op_set_attr_tensor(weft_op_builder* b, const char* name,
                             const weft_tensor* v) {
  if (!b) return;
  if (v == nullptr)
    return b->Fail(std::string("tensor for attribute ") + OrEmpty(name) +
                   " is NULL");
  AttrValue a;
  a.type = AttrType::kTensor;
  a.tensor = v->value;
  b->Set(name, std::move(a));
}

weft_status* weft_op_finish(weft_op_builder* b, weft_node** out_node) {
  if (out_node) *out_node = nullptr;
  if (b == nullptr)
    return Error(WEFT_RESOURCE_EXHAUSTED,
                 "weft_op_begin failed (out of memory)");
  std::unique_ptr<weft_op_builder> owned(b);
  const std::string& op = b->node->op_type;
  const std::string& name = b->node->name;
  if (!b->error.empty())
    return Errorf(WEFT_INVALID_ARGUMENT, "node '%s' (%s): %s",
                  name.empty() ? "<unnamed>" : name.c_str(), op.c_str(),
                  b->error.c_str());
  return weft::Guard([&]() -> weft_status* {
    if (b->node->device.empty()) b->node->device = b->graph->DefaultDevice();
    weft::ControlContext* context = weft::ControlContext::Current(b->graph.get());
    if (context != nullptr)
      WEFT_RETURN_IF_ERROR(context->Prepare(b->node.get()));
    weft_node* added = nullptr;
    WEFT_RETURN_IF_ERROR(b->graph->AddNode(std::move(b->node), &added));
    if (context != nullptr) weft::ControlContext::Added(b->graph.get(), added);
    if (out_node) *out_node = added;
    return nullptr;
  });
}

void weft_op_abandon(weft_op_builder* b) { delete b; }

void weft_graph_set_device(weft_graph* graph, const char* device) {
  if (graph == nullptr) return;
  try {
    graph->impl->SetDefaultDevice(device ? device : "");
  } catch (...) {
    // Out of memory: the scope stays as it was.
  }
}

weft_status* weft_graph_constant(weft_graph* graph, const char* name,
                                 const weft_tensor* value, weft_output* out) {
  weft_op_builder* b = weft_op_begin(graph, "Const", name);
  weft_op_set_attr_tensor(b, "value", value);
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  if (out) *out = weft_output{n, 0};
  return nullptr;
}

weft_status* weft_graph_placeholder(weft_graph* graph, const char* name,
                                    weft_dtype dtype, const int64_t* dims,
                                    int32_t rank, weft_output* out) {
  weft_op_builder* b = weft_op_begin(graph, "Placeholder", name);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  weft_op_set_attr_shape(b, "shape", dims, rank);
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  if (out) *out = weft_output{n, 0};
  return nullptr;
}

weft_status* weft_graph_apply(weft_graph* graph, const char* op_type,
                              const char* name, const weft_output* inputs,
                              int32_t num_inputs, weft_output* out) {
  weft_op_builder* b = weft_op_begin(graph, op_type, name);
  weft_op_add_input_list(b, inputs, num_inputs);
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  if (out) *out = weft_output{n, 0};
  return nullptr;
}

weft_status* weft_graph_variable(weft_graph* graph, const char* name,
                                 weft_output initial_value,
                                 weft_output* out_value,
                                 weft_node** out_initializer) {
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  if (!ValidOutput(graph->impl.get(), initial_value))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "variable '%s': initial value is not an output of this graph",
                  OrEmpty(name));
  const weft::ShapeInfo& s =
      initial_value.node->output_shapes[initial_value.index];
  if (!s.fully_known())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "variable '%s': initial value has shape %s; a variable "
                  "needs a fully known shape", OrEmpty(name),
                  s.ToString().c_str());
  weft_op_builder* b = weft_op_begin(graph, "Variable", name);
  weft_op_set_attr_dtype(
      b, "dtype", initial_value.node->output_dtypes[initial_value.index]);
  weft_op_set_attr_shape(b, "shape", s.dims.data(), s.rank);
  weft_node* var = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &var));
  std::string init_name = var->name + "/initializer";
  b = weft_op_begin(graph, "Assign", init_name.c_str());
  weft_op_add_input(b, weft_output{var, 0});
  weft_op_add_input(b, initial_value);
  weft_node* init = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &init));
  if (out_value) *out_value = weft_output{var, 0};
  if (out_initializer) *out_initializer = init;
  return nullptr;
}

weft_node* weft_graph_node_by_name(weft_graph* graph, const char* name) {
  if (graph == nullptr || name == nullptr) return nullptr;
  return graph->impl->Find(name);
}

int32_t weft_graph_node_count(weft_graph* graph) {
  return graph ? graph->impl->size() : 0;
}

weft_node* weft_graph_node_at(weft_graph* graph, int32_t index) {
  return graph ? graph->impl->At(index) : nullptr;
}

const char* weft_node_name(const weft_node* n) { return n ? n->name.c_str() : ""; }
const char* weft_node_op_type(const weft_node* n) {
  return n ? n->op_type.c_str() : "";
}
const char* weft_node_device(const weft_node* n) {
  return n ? n->device.c_str() : "";
}
int32_t weft_node_num_inputs(const weft_node* n) {
  return n ? static_cast<int32_t>(n->inputs.size()) : 0;
}
weft_output weft_node_input(const weft_node* n, int32_t index) {
  if (n == nullptr || index < 0 ||
      index >= static_cast<int32_t>(n->inputs.size()))
    return weft_output{nullptr, -1};
  return n->inputs[index];
}
int32_t weft_node_num_control_inputs(const weft_node* n) {
  return n ? static_cast<int32_t>(n->control_inputs.size()) : 0;
}
int32_t weft_node_num_outputs(const weft_node* n) {
  return n ? static_cast<int32_t>(n->output_dtypes.size()) : 0;
}

weft_dtype weft_output_dtype(weft_output o) {
  if (o.node == nullptr || o.index < 0 ||
      o.index >= static_cast<int32_t>(o.node->output_dtypes.size()))
    return WEFT_DTYPE_INVALID;
  return o.node->output_dtypes[o.index];
}

weft_status* weft_output_shape(weft_output o, int64_t* dims, int32_t capacity,
                               int32_t* out_rank) {
  if (weft_output_dtype(o) == WEFT_DTYPE_INVALID) {
    if (o.node == nullptr)
      return Error(WEFT_INVALID_ARGUMENT, "the output names no node (NULL)");
    return Errorf(WEFT_INVALID_ARGUMENT, "node '%s' has no output %d",
                  o.node->name.c_str(), o.index);
  }
  // Refused before anything is written, so that NULL with a capacity of 0
  // stays a way to ask for the rank alone.
  if (capacity < 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "capacity %d is negative", capacity);
  if (dims == nullptr && capacity > 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "dims is NULL with capacity %d", capacity);
  const weft::ShapeInfo& s = o.node->output_shapes[o.index];
  if (out_rank) *out_rank = s.rank;
  if (s.rank > capacity)
    return Errorf(WEFT_OUT_OF_RANGE, "output has rank %d, capacity is %d",
                  s.rank, capacity);
  for (int32_t i = 0; i < s.rank; ++i) dims[i] = s.dims[i];
  return nullptr;
}

}  // extern "C"
