// Trainable flags, initializing every variable, and weft_minimize(): the
// gradients of a loss and one update op (ApplyGradientDescent,
// ApplyMomentum, ApplyAdam) per trainable variable the loss depends on,
// grouped under one NoOp that a training step runs as its target.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "session/cost_model.h"
#include "weft/train.h"

namespace weft {
namespace {

bool IsVariable(const weft_node* n) { return n->op_type == "Variable"; }

// `base`, or the first of base_1, base_2, ... that no node of `g` has.
std::string FreshName(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.Find(name) != nullptr; ++k)
    name = base + "_" + std::to_string(k);
  return name;
}

// The node name the caller asked for, which must be free, or a fresh one
// from `fallback`.
weft_status* NameFor(const Graph& g, const char* name, const char* fallback,
                     std::string* out) {
  if (name == nullptr || *name == '\0') {
    *out = FreshName(g, fallback);
    return nullptr;
  }
  if (g.Find(name) != nullptr)
    return Errorf(WEFT_ALREADY_EXISTS, "a node named '%s' already exists",
                  name);
  *out = name;
  return nullptr;
}

// The Assign that weft_graph_variable() made for `var`, or null.
weft_node* InitializerOf(const Graph& g, const weft_node* var) {
  weft_node* n = g.Find(var->name + "/initializer");
  if (n == nullptr || n->op_type != "Assign" || n->inputs.empty() ||
      n->inputs[0].node != var)
    return nullptr;
  return n;
}

weft_status* ScalarConst(weft_graph* g, const std::string& name,
                         weft_dtype dtype, double value, weft_output* out) {
  weft_tensor* t = nullptr;
  WEFT_RETURN_IF_ERROR(weft_tensor_create(dtype, nullptr, 0, &t));
  if (dtype == WEFT_FLOAT32) {
    float f = static_cast<float>(value);
    std::memcpy(weft_tensor_data(t), &f, sizeof f);
  } else {
    std::memcpy(weft_tensor_data(t), &value, sizeof value);
  }
  weft_status* st = weft_graph_constant(g, name.c_str(), t, out);
  weft_tensor_destroy(t);
  return st;
}

weft_status* BuildNode(weft_graph* g, const char* op, const std::string& name,
                       const std::vector<weft_output>& inputs,
                       const std::vector<weft_node*>& control_inputs,
                       weft_node** out) {
  weft_op_builder* b = weft_op_begin(g, op, name.c_str());
  weft_op_add_input_list(b, inputs.data(),
                         static_cast<int32_t>(inputs.size()));
  for (weft_node* c : control_inputs) weft_op_add_control_input(b, c);
  return weft_op_finish(b, out);
}

// A non-trainable variable named `name` (or name_k), holding `initial` once
// initialized, constrained to `device` like the variable it serves.
weft_status* SlotVariable(weft_graph* g, const std::string& name,
                          weft_output initial, const std::string& device,
                          weft_output* out) {
  WEFT_RETURN_IF_ERROR(
      weft_graph_variable(g, name.c_str(), initial, out, nullptr));
  // Not yet visible to any session: nothing the caller holds reaches it.
  out->node->device = device;
  g->impl->SetTrainable(out->node, false);
  return nullptr;
}

// Zeros shaped like `var`, for a slot named `slot`.
weft_status* ZerosLikeVariable(weft_graph* g, const std::string& slot,
                               weft_output var, weft_output* out) {
  weft_output zero;
  WEFT_RETURN_IF_ERROR(ScalarConst(g, FreshName(*g->impl, slot + "/zero"),
                                   var.node->output_dtypes[0], 0, &zero));
  const ShapeInfo& shape = var.node->output_shapes[0];
  weft_op_builder* b =
      weft_op_begin(g, "Fill", FreshName(*g->impl, slot + "/zeros").c_str());
  weft_op_add_input(b, zero);
  weft_op_set_attr_int_list(b, "shape", shape.dims.data(), shape.rank);
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  *out = weft_output{n, 0};
  return nullptr;
}

// Data parallelism in buckets: the gradients (the last variables' first,
// the order the backward pass makes them) packed by dtype into buckets of
// at most `bucket_bytes`, each flattened, concatenated, averaged over the
// ranks by one AllReduce and cut back into its gradients, which replace
// grads[i].  A gradient alone in its bucket is averaged as it is.
weft_status* AverageInBuckets(weft_graph* graph, const std::string& scope,
                              const std::vector<weft_output>& vars,
                              int64_t bucket_bytes,
                              std::vector<weft_output>* grads) {
  const Graph& g = *graph->impl;
  std::vector<std::vector<size_t>> buckets;
  int64_t filled = 0;
  weft_dtype dtype = WEFT_DTYPE_INVALID;
  for (size_t k = vars.size(); k-- > 0;) {
    const weft_output gr = (*grads)[k];
    if (gr.node == nullptr) continue;
    const weft_dtype t = gr.node->output_dtypes[gr.index];
    const int64_t bytes = StaticBytes(gr.node, gr.index);
    if (buckets.empty() || t != dtype || filled + bytes > bucket_bytes) {
      buckets.emplace_back();
      filled = 0;
      dtype = t;
    }
    buckets.back().push_back(k);
    filled += bytes;
  }
  for (const std::vector<size_t>& bucket : buckets) {
    const std::string base =
        FreshName(g, scope + "/bucket/" + vars[bucket.front()].node->name);
    std::vector<weft_output> flats;
    std::vector<int64_t> sizes;
    for (size_t k : bucket) {
      const weft_output gr = (*grads)[k];
      int64_t n = 1;
      for (int64_t d : gr.node->output_shapes[gr.index].dims) n *= d;
      sizes.push_back(n);
      if (bucket.size() == 1) {
        flats.push_back(gr);
        break;
      }
      weft_op_builder* b = weft_op_begin(
          graph, "Reshape", FreshName(g, base + "/flat").c_str());
      weft_op_add_input(b, gr);
      weft_op_set_attr_int_list(b, "shape", &n, 1);
      weft_node* flat = nullptr;
      WEFT_RETURN_IF_ERROR(weft_op_finish(b, &flat));
      flats.push_back(weft_output{flat, 0});
    }
    weft_output packed = flats[0];
    if (bucket.size() > 1) {
      weft_op_builder* b = weft_op_begin(
          graph, "Concat", FreshName(g, base + "/packed").c_str());
      weft_op_add_input_list(b, flats.data(),
                             static_cast<int32_t>(flats.size()));
      weft_op_set_attr_int(b, "axis", 0);
      weft_node* cat = nullptr;
      WEFT_RETURN_IF_ERROR(weft_op_finish(b, &cat));
      packed = weft_output{cat, 0};
    }
    weft_op_builder* b = weft_op_begin(
        graph, "AllReduce", FreshName(g, base + "/allreduce").c_str());
    weft_op_add_input(b, packed);
    weft_op_set_attr_string(b, "reduction", "mean");
    weft_node* mean = nullptr;
    WEFT_RETURN_IF_ERROR(weft_op_finish(b, &mean));
    if (bucket.size() == 1) {
      (*grads)[bucket[0]] = weft_output{mean, 0};
      continue;
    }
    int64_t offset = 0;
    for (size_t j = 0; j < bucket.size(); ++j) {
      const size_t k = bucket[j];
      weft_op_builder* s = weft_op_begin(
          graph, "Slice", FreshName(g, base + "/piece").c_str());
      weft_op_add_input(s, weft_output{mean, 0});
      weft_op_set_attr_int_list(s, "begin", &offset, 1);
      weft_op_set_attr_int_list(s, "size", &sizes[j], 1);
      weft_node* piece = nullptr;
      WEFT_RETURN_IF_ERROR(weft_op_finish(s, &piece));
      const ShapeInfo& shape =
          (*grads)[k].node->output_shapes[(*grads)[k].index];
      weft_op_builder* r = weft_op_begin(
          graph, "Reshape", FreshName(g, base + "/grad").c_str());
      weft_op_add_input(r, weft_output{piece, 0});
      weft_op_set_attr_int_list(r, "shape", shape.dims.data(), shape.rank);
      weft_node* back = nullptr;
      WEFT_RETURN_IF_ERROR(weft_op_finish(r, &back));
      (*grads)[k] = weft_output{back, 0};
      offset += sizes[j];
    }
  }
  return nullptr;
}

weft_status* CheckOptions(const weft_optimizer_options* in,
                          weft_optimizer_options* out) {
  if (in == nullptr) return Error(WEFT_INVALID_ARGUMENT, "options is NULL");
  constexpr size_t kMinimum = offsetof(weft_optimizer_options, learning_rate) +
                              sizeof(double);
  if (in->struct_size < kMinimum)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "optimizer options struct_size %zu is too small (use "
                  "weft_optimizer_options_init)", in->struct_size);
  weft_optimizer_options_init(out, in->kind);
  std::memcpy(out, in, std::min(in->struct_size, sizeof *out));
  if (out->kind < WEFT_OPTIMIZER_GRADIENT_DESCENT ||
      out->kind > WEFT_OPTIMIZER_ADAM)
    return Errorf(WEFT_INVALID_ARGUMENT, "unknown optimizer kind %d",
                  out->kind);
  if (!(out->learning_rate > 0) || !std::isfinite(out->learning_rate))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "learning rate %g must be positive and finite",
                  out->learning_rate);
  if (out->data_parallel != 0 && out->data_parallel != 1)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "data_parallel %d: want 0 (this process's gradients) or 1 "
                  "(averaged over the MPI job's ranks)", out->data_parallel);
  if (out->bucket_bytes < 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "bucket_bytes %lld: want 0 (one AllReduce per gradient) or "
                  "a positive byte count",
                  static_cast<long long>(out->bucket_bytes));
  if (out->kind == WEFT_OPTIMIZER_MOMENTUM &&
      !(out->momentum >= 0 && out->momentum < 1))
    return Errorf(WEFT_INVALID_ARGUMENT, "momentum %g must be in [0, 1)",
                  out->momentum);
  if (out->kind == WEFT_OPTIMIZER_ADAM) {
    if (!(out->beta1 >= 0 && out->beta1 < 1) ||
        !(out->beta2 >= 0 && out->beta2 < 1))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "Adam's beta1 %g and beta2 %g must be in [0, 1)",
                    out->beta1, out->beta2);
    if (!(out->epsilon >= 0) || !std::isfinite(out->epsilon))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "Adam's epsilon %g must be non-negative and finite",
                    out->epsilon);
  }
  return nullptr;
}

// Builds the update ops of one weft_minimize() call under `scope`.
class Minimizer {
 public:
  Minimizer(weft_graph* g, const weft_optimizer_options& o, std::string scope)
      : g_(g), o_(o), scope_(std::move(scope)) {}

  weft_status* Update(weft_output var, weft_output grad);
  // The NoOp `scope` depending on every update (and on Adam's power steps).
  weft_status* Finish(weft_node** out);

 private:
  // Hyperparameters as constants of one dtype, and Adam's beta powers.
  struct Hyper {
    weft_output lr{}, momentum{}, beta1{}, beta2{}, epsilon{};
    weft_output beta1_power{}, beta2_power{};
    std::vector<weft_node*> adam_updates;
  };
  weft_status* HyperFor(weft_output var, Hyper** out);
  weft_status* Const(const char* what, weft_dtype dtype, double value,
                     weft_output* out) {
    return ScalarConst(g_, FreshName(*g_->impl, scope_ + "/" + what), dtype,
                       value, out);
  }
  weft_status* Slot(weft_output var, const char* suffix, weft_output* out);
  weft_status* PowerStep(Hyper& h, weft_output power, weft_output beta,
                         const char* what);

  weft_graph* g_;
  const weft_optimizer_options& o_;
  std::string scope_;
  std::map<weft_dtype, Hyper> hyper_;
  std::vector<weft_node*> updates_;
};

weft_status* Minimizer::HyperFor(weft_output var, Hyper** out) {
  weft_dtype t = var.node->output_dtypes[0];
  auto found = hyper_.find(t);
  if (found != hyper_.end()) {
    *out = &found->second;
    return nullptr;
  }
  Hyper h;
  WEFT_RETURN_IF_ERROR(Const("learning_rate", t, o_.learning_rate, &h.lr));
  if (o_.kind == WEFT_OPTIMIZER_MOMENTUM)
    WEFT_RETURN_IF_ERROR(Const("momentum", t, o_.momentum, &h.momentum));
  if (o_.kind == WEFT_OPTIMIZER_ADAM) {
    WEFT_RETURN_IF_ERROR(Const("beta1", t, o_.beta1, &h.beta1));
    WEFT_RETURN_IF_ERROR(Const("beta2", t, o_.beta2, &h.beta2));
    WEFT_RETURN_IF_ERROR(Const("epsilon", t, o_.epsilon, &h.epsilon));
    // beta^t for the step about to run: beta at the first step, multiplied
    // by beta after each.  Beside the first variable, as TensorFlow does.
    const std::string& device = var.node->device;
    WEFT_RETURN_IF_ERROR(SlotVariable(
        g_, FreshName(*g_->impl, scope_ + "/beta1_power"), h.beta1, device,
        &h.beta1_power));
    WEFT_RETURN_IF_ERROR(SlotVariable(
        g_, FreshName(*g_->impl, scope_ + "/beta2_power"), h.beta2, device,
        &h.beta2_power));
  }
  *out = &hyper_.emplace(t, std::move(h)).first->second;
  return nullptr;
}

weft_status* Minimizer::Slot(weft_output var, const char* suffix,
                             weft_output* out) {
  std::string name = FreshName(*g_->impl, var.node->name + "/" + suffix);
  weft_output zeros;
  WEFT_RETURN_IF_ERROR(ZerosLikeVariable(g_, name, var, &zeros));
  return SlotVariable(g_, name, zeros, var.node->device, out);
}

weft_status* Minimizer::Update(weft_output var, weft_output grad) {
  Hyper* h = nullptr;
  WEFT_RETURN_IF_ERROR(HyperFor(var, &h));
  std::string name =
      FreshName(*g_->impl, scope_ + "/update_" + var.node->name);
  weft_node* n = nullptr;
  switch (o_.kind) {
    case WEFT_OPTIMIZER_GRADIENT_DESCENT:
      WEFT_RETURN_IF_ERROR(
          BuildNode(g_, "ApplyGradientDescent", name, {var, h->lr, grad}, {},
                    &n));
      break;
    case WEFT_OPTIMIZER_MOMENTUM: {
      weft_output accum;
      WEFT_RETURN_IF_ERROR(Slot(var, "Momentum", &accum));
      weft_op_builder* b = weft_op_begin(g_, "ApplyMomentum", name.c_str());
      for (weft_output in : {var, accum, h->lr, grad, h->momentum})
        weft_op_add_input(b, in);
      weft_op_set_attr_bool(b, "use_nesterov", o_.use_nesterov);
      WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
      break;
    }
    default: {
      weft_output m, v;
      WEFT_RETURN_IF_ERROR(Slot(var, "Adam", &m));
      WEFT_RETURN_IF_ERROR(Slot(var, "Adam_1", &v));
      WEFT_RETURN_IF_ERROR(BuildNode(
          g_, "ApplyAdam", name,
          {var, m, v, h->beta1_power, h->beta2_power, h->lr, h->beta1,
           h->beta2, h->epsilon, grad},
          {}, &n));
      h->adam_updates.push_back(n);
      break;
    }
  }
  updates_.push_back(n);
  return nullptr;
}

// power <- power * beta, once every update of the step has read power.
weft_status* Minimizer::PowerStep(Hyper& h, weft_output power,
                                  weft_output beta, const char* what) {
  std::string base = scope_ + "/" + what;
  weft_node* next = nullptr;
  WEFT_RETURN_IF_ERROR(BuildNode(g_, "Mul", FreshName(*g_->impl, base + "_next"),
                                 {power, beta}, {}, &next));
  weft_node* assign = nullptr;
  WEFT_RETURN_IF_ERROR(BuildNode(g_, "Assign",
                                 FreshName(*g_->impl, base + "_update"),
                                 {power, weft_output{next, 0}},
                                 h.adam_updates, &assign));
  updates_.push_back(assign);
  return nullptr;
}

weft_status* Minimizer::Finish(weft_node** out) {
  for (auto& entry : hyper_) {
    Hyper& h = entry.second;
    if (h.adam_updates.empty()) continue;
    WEFT_RETURN_IF_ERROR(PowerStep(h, h.beta1_power, h.beta1, "beta1_power"));
    WEFT_RETURN_IF_ERROR(PowerStep(h, h.beta2_power, h.beta2, "beta2_power"));
  }
  return BuildNode(g_, "NoOp", scope_, {}, updates_, out);
}

bool Updatable(const Graph& g, const weft_node* n) {
  if (!IsVariable(n) || !g.IsTrainable(n)) return false;
  weft_dtype t = n->output_dtypes[0];
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64;
}

}  // namespace
}  // namespace weft

using weft::Error;
using weft::Errorf;

extern "C" {

weft_status* weft_variable_set_trainable(weft_graph* graph,
                                         weft_node* variable,
                                         int32_t trainable) {
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  if (!graph->impl->Owns(variable))
    return Error(WEFT_INVALID_ARGUMENT, "variable is not a node of this graph");
  if (!weft::IsVariable(variable))
    return Errorf(WEFT_INVALID_ARGUMENT, "node '%s' is a %s, not a Variable",
                  variable->name.c_str(), variable->op_type.c_str());
  return weft::Guard([&]() -> weft_status* {
    graph->impl->SetTrainable(variable, trainable != 0);
    return nullptr;
  });
}

weft_status* weft_graph_trainable_variables(weft_graph* graph, weft_node** out,
                                            int32_t capacity,
                                            int32_t* out_count) {
  if (graph == nullptr || out_count == nullptr || capacity < 0 ||
      (capacity > 0 && out == nullptr))
    return Error(WEFT_INVALID_ARGUMENT,
                 "graph and out_count are required, and out when capacity "
                 "is positive");
  const weft::Graph& g = *graph->impl;
  int32_t count = 0;
  for (int32_t i = 0, n = g.size(); i < n; ++i) {
    weft_node* node = g.At(i);
    if (!weft::IsVariable(node) || !g.IsTrainable(node)) continue;
    if (count < capacity) out[count] = node;
    ++count;
  }
  *out_count = count;
  return nullptr;
}

weft_status* weft_graph_initialize_all(weft_graph* graph, const char* name,
                                       weft_node** out_node) {
  if (out_node) *out_node = nullptr;
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  return weft::Guard([&]() -> weft_status* {
    const weft::Graph& g = *graph->impl;
    std::string node_name;
    WEFT_RETURN_IF_ERROR(weft::NameFor(g, name, "init_all", &node_name));
    std::vector<weft_node*> inits;
    for (int32_t i = 0, n = g.size(); i < n; ++i) {
      weft_node* node = g.At(i);
      if (!weft::IsVariable(node)) continue;
      if (weft_node* init = weft::InitializerOf(g, node))
        inits.push_back(init);
    }
    return weft::BuildNode(graph, "NoOp", node_name, {}, inits, out_node);
  });
}

void weft_optimizer_options_init_sized(weft_optimizer_options* options,
                                       size_t size, int32_t kind) {
  if (options == nullptr || size < sizeof options->struct_size) return;
  weft_optimizer_options full{};
  full.kind = kind;
  full.learning_rate = 0.01;
  full.momentum = 0.9;
  full.use_nesterov = 0;
  full.beta1 = 0.9;
  full.beta2 = 0.999;
  full.epsilon = 1e-8;
  full.data_parallel = 0;
  full.struct_size = std::min(size, sizeof full);
  std::memcpy(options, &full, full.struct_size);
}

// The exported symbol behind the header's macro, for binaries built against
// earlier headers: it writes no more than their struct held (through
// epsilon).  Parenthesized so that the macro does not expand here.
void(weft_optimizer_options_init)(weft_optimizer_options* options,
                                  int32_t kind) {
  weft_optimizer_options_init_sized(
      options, offsetof(weft_optimizer_options, epsilon) +
                   sizeof options->epsilon, kind);
}

weft_status* weft_minimize(weft_graph* graph, weft_output loss,
                           const weft_optimizer_options* options,
                           const char* name, weft_node** out_train_op) {
  if (out_train_op) *out_train_op = nullptr;
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  weft_optimizer_options o;
  WEFT_RETURN_IF_ERROR(weft::CheckOptions(options, &o));
  if (weft_output_dtype(loss) == WEFT_DTYPE_INVALID ||
      !graph->impl->Owns(loss.node))
    return Error(WEFT_INVALID_ARGUMENT, "loss is not an output of this graph");
  return weft::Guard([&]() -> weft_status* {
    const weft::Graph& g = *graph->impl;
    std::string scope;
    WEFT_RETURN_IF_ERROR(weft::NameFor(g, name, "train", &scope));
    std::vector<weft_output> vars;
    for (int32_t i = 0, n = g.size(); i < n; ++i) {
      weft_node* node = g.At(i);
      if (weft::Updatable(g, node)) vars.push_back(weft_output{node, 0});
    }
    if (vars.empty())
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "loss '%s': the graph has no trainable float32 or "
                    "float64 variable", loss.node->name.c_str());
    std::vector<weft_output> grads(vars.size());
    WEFT_RETURN_IF_ERROR(weft_gradients(graph, &loss, 1, vars.data(),
                                        static_cast<int32_t>(vars.size()),
                                        nullptr, grads.data()));
    weft::Minimizer minimizer(graph, o, scope);
    if (o.data_parallel && o.bucket_bytes > 0)
      WEFT_RETURN_IF_ERROR(
          weft::AverageInBuckets(graph, scope, vars, o.bucket_bytes, &grads));
    bool any = false;
    for (size_t i = 0; i < vars.size(); ++i) {
      if (grads[i].node == nullptr) continue;  // the loss ignores it
      any = true;
      weft_output grad = grads[i];
      if (o.data_parallel && o.bucket_bytes == 0) {
        // Every rank's gradient of its own shard, averaged: each rank then
        // applies the same update.  Placed by the planner like the update.
        weft_op_builder* b = weft_op_begin(
            graph, "AllReduce",
            weft::FreshName(g, scope + "/allreduce/" + vars[i].node->name)
                .c_str());
        weft_op_add_input(b, grad);
        weft_op_set_attr_string(b, "reduction", "mean");
        weft_node* mean = nullptr;
        WEFT_RETURN_IF_ERROR(weft_op_finish(b, &mean));
        grad = weft_output{mean, 0};
      }
      WEFT_RETURN_IF_ERROR(minimizer.Update(vars[i], grad));
    }
    if (!any)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "loss '%s' depends on no trainable variable",
                    loss.node->name.c_str());
    return minimizer.Finish(out_train_op);
  });
}

weft_status* weft_broadcast_variables(weft_graph* graph, int32_t root,
                                      const char* name, weft_node** out_op) {
  if (out_op) *out_op = nullptr;
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  if (root < 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "root %d is not a rank", root);
  return weft::Guard([&]() -> weft_status* {
    const weft::Graph& g = *graph->impl;
    std::string scope;
    WEFT_RETURN_IF_ERROR(weft::NameFor(g, name, "broadcast_variables", &scope));
    std::vector<weft_node*> vars;
    for (int32_t i = 0, n = g.size(); i < n; ++i)
      if (weft::IsVariable(g.At(i))) vars.push_back(g.At(i));
    if (vars.empty())
      return Error(WEFT_INVALID_ARGUMENT,
                   "weft_broadcast_variables: the graph has no variables");
    std::vector<weft_node*> assigns;
    for (weft_node* var : vars) {
      const weft_output value{var, 0};
      weft_op_builder* b = weft_op_begin(
          graph, "Broadcast",
          weft::FreshName(g, scope + "/" + var->name).c_str());
      weft_op_add_input(b, value);
      weft_op_set_attr_int(b, "root", root);
      weft_node* from_root = nullptr;
      WEFT_RETURN_IF_ERROR(weft_op_finish(b, &from_root));
      weft_node* assign = nullptr;
      WEFT_RETURN_IF_ERROR(weft::BuildNode(
          graph, "Assign",
          weft::FreshName(g, scope + "/" + var->name + "_assign"),
          {value, weft_output{from_root, 0}}, {}, &assign));
      assigns.push_back(assign);
    }
    return weft::BuildNode(graph, "NoOp", scope, {}, assigns, out_op);
  });
}

}  // extern "C"
