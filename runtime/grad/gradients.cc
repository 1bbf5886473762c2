// Symbol-to-symbol differentiation: weft_gradients() walks the nodes
// between the xs and the ys in reverse creation order (the graph is
// append-only, so creation order is a topological order), sums the
// gradients arriving at each output, and calls each op's gradient function
// to add the nodes that carry them on to the op's inputs.
#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_set>

#include "base/status.h"
#include "grad/loop_gradient.h"
#include "grad/registry.h"
#include "weft/train.h"

namespace weft {
namespace {

using Key = std::pair<const weft_node*, int32_t>;

bool IsFloat(weft_dtype t) {
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64 || t == WEFT_FLOAT16 ||
         t == WEFT_BFLOAT16;
}

// Inputs that name a Variable by reference carry no data, and no gradient.
bool IsRef(const weft_node* n, size_t i) { return n->def->IsRefInput(i); }

// Static shapes that can describe the same tensor: unknown ranks and dims
// match anything.
bool Compatible(const ShapeInfo& a, const ShapeInfo& b) {
  if (a.rank < 0 || b.rank < 0) return true;
  if (a.rank != b.rank) return false;
  for (int32_t d = 0; d < a.rank; ++d)
    if (a.dims[d] >= 0 && b.dims[d] >= 0 && a.dims[d] != b.dims[d])
      return false;
  return true;
}

// Why `grad` cannot be the gradient of input `index` of the context's node
// (another graph, a missing output, another dtype or shape), or "".
std::string InputGradProblem(const weft_gradient_context* ctx, int32_t index,
                             weft_output grad) {
  const weft_node* n = ctx->node;
  std::string at = "op " + n->op_type + ", node '" + n->name +
                   "': the gradient set for input " + std::to_string(index);
  if (grad.node == nullptr || !ctx->graph->impl->Owns(grad.node))
    return at + " is not an output of the graph";
  int32_t outputs = static_cast<int32_t>(grad.node->output_dtypes.size());
  if (grad.index < 0 || grad.index >= outputs)
    return at + " names output " + std::to_string(grad.index) + " of '" +
           grad.node->name + "', which has " + std::to_string(outputs);
  const weft_output& in = n->inputs[index];
  weft_dtype want = in.node->output_dtypes[in.index];
  weft_dtype got = grad.node->output_dtypes[grad.index];
  const ShapeInfo& want_shape = in.node->output_shapes[in.index];
  const ShapeInfo& got_shape = grad.node->output_shapes[grad.index];
  if (want != got || !Compatible(want_shape, got_shape))
    return at + " is " + weft_dtype_name(got) + " " + got_shape.ToString() +
           " but the input is " + weft_dtype_name(want) + " " +
           want_shape.ToString();
  return "";
}

weft_status* CheckOutput(weft_graph* g, weft_output o, const char* what,
                         int32_t i) {
  if (o.node == nullptr || !g->impl->Owns(o.node))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s %d is not an output of this graph", what, i);
  if (o.index < 0 ||
      o.index >= static_cast<int32_t>(o.node->output_dtypes.size()))
    return Errorf(WEFT_INVALID_ARGUMENT, "%s %d names output %d of '%s', "
                  "which has %zu", what, i, o.index, o.node->name.c_str(),
                  o.node->output_dtypes.size());
  weft_dtype t = o.node->output_dtypes[o.index];
  if (!IsFloat(t))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s %d ('%s:%d') is %s: gradients need floating-point "
                  "values", what, i, o.node->name.c_str(), o.index,
                  weft_dtype_name(t));
  return nullptr;
}

weft_status* Build(weft_graph* g, const char* op, const std::string& name,
                   std::initializer_list<weft_output> inputs,
                   weft_output* out) {
  weft_op_builder* b = weft_op_begin(g, op, name.c_str());
  for (const weft_output& in : inputs) weft_op_add_input(b, in);
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  *out = weft_output{n, 0};
  return nullptr;
}

// A name prefix no node of the graph uses yet: "gradients", then
// "gradients_1", ...  A NoOp of that name claims it.
weft_status* NewScope(weft_graph* g, std::string* scope) {
  for (int k = 0;; ++k) {
    std::string s = k == 0 ? "gradients" : "gradients_" + std::to_string(k);
    if (g->impl->Find(s) != nullptr) continue;
    weft_op_builder* b = weft_op_begin(g, "NoOp", s.c_str());
    weft_node* n = nullptr;
    WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
    *scope = s;
    return nullptr;
  }
}

// The scope of the outermost weft_gradients call running on this thread
// (a loop's gradient differentiates its body by a nested call).
thread_local std::string outermost_scope;

class OutermostScope {
 public:
  explicit OutermostScope(const std::string& scope)
      : set_(outermost_scope.empty()) {
    if (set_) {
      outermost_scope = scope;
      BuildingGradients() = true;
    }
  }
  ~OutermostScope() {
    if (set_) {
      outermost_scope.clear();
      BuildingGradients() = false;
    }
  }

 private:
  bool set_;
};

class Backprop {
 public:
  Backprop(weft_graph* g) : g_(g) {}
  weft_status* Run(const weft_output* ys, int32_t ny, const weft_output* xs,
                   int32_t nx, const weft_output* grad_ys, weft_output* out);

 private:
  // The sum of the gradients that arrived at `k`, or {nullptr, 0}.
  weft_status* Total(const Key& k, const std::string& scope, weft_output* out);
  // Builds the backward loop of `loop` and hands its results to the values
  // that entered the loop.
  weft_status* LoopGradient(const WhileLoopInfo& loop, const std::string& scope);

  weft_graph* g_;
  std::map<Key, std::vector<weft_output>> arrived_;
};

weft_status* Backprop::Total(const Key& k, const std::string& scope,
                             weft_output* out) {
  *out = weft_output{nullptr, 0};
  auto it = arrived_.find(k);
  if (it == arrived_.end() || it->second.empty()) return nullptr;
  std::vector<weft_output>& parts = it->second;
  weft_output sum = parts[0];
  for (size_t i = 1; i < parts.size(); ++i)
    WEFT_RETURN_IF_ERROR(Build(g_, "Add",
                               scope + "/sum_" + std::to_string(k.second) +
                                   "_" + std::to_string(i),
                               {sum, parts[i]}, &sum));
  parts.assign(1, sum);
  *out = sum;
  return nullptr;
}

weft_status* Backprop::LoopGradient(const WhileLoopInfo& loop,
                                    const std::string& scope) {
  std::vector<weft_output> dy(loop.num_vars);
  bool any = false;
  for (int32_t i = 0; i < loop.num_vars; ++i) {
    WEFT_RETURN_IF_ERROR(Total(Key{loop.exits[i], 0}, scope, &dy[i]));
    any |= dy[i].node != nullptr;
  }
  if (!any) return nullptr;
  std::vector<weft_output> d_init, d_inv;
  WEFT_RETURN_IF_ERROR(
      BuildWhileGradient(g_, loop, dy, scope, &d_init, &d_inv));
  for (int32_t i = 0; i < loop.num_vars; ++i)
    if (d_init[i].node != nullptr) {
      const weft_output& in = loop.enters[i]->inputs[0];
      arrived_[Key{in.node, in.index}].push_back(d_init[i]);
    }
  for (size_t j = 0; j < loop.invariants.size(); ++j)
    if (d_inv[j].node != nullptr) {
      const weft_output& in = loop.invariants[j]->inputs[0];
      arrived_[Key{in.node, in.index}].push_back(d_inv[j]);
    }
  return nullptr;
}

weft_status* Backprop::Run(const weft_output* ys, int32_t ny,
                           const weft_output* xs, int32_t nx,
                           const weft_output* grad_ys, weft_output* out) {
  Graph& graph = *g_->impl;
  // Nodes some y depends on, through data inputs.
  std::unordered_set<const weft_node*> to_y;
  std::vector<const weft_node*> stack;
  for (int32_t i = 0; i < ny; ++i)
    if (to_y.insert(ys[i].node).second) stack.push_back(ys[i].node);
  while (!stack.empty()) {
    const weft_node* n = stack.back();
    stack.pop_back();
    for (size_t k = 0; k < n->inputs.size(); ++k)
      if (!IsRef(n, k) && to_y.insert(n->inputs[k].node).second)
        stack.push_back(n->inputs[k].node);
    // A loop's Merge depends on its body through the back edges.
    if (n->def->exec == ExecKind::kMerge)
      for (const weft_node* b : graph.BackEdges(n))
        if (to_y.insert(b).second) stack.push_back(b);
  }
  // Nodes that depend on some x, among those: in creation order, a node
  // depends on an x if it is one or one of its inputs does.  A loop's Merge
  // also depends on its back edges, which come later in creation order: a
  // pass that adds a Merge that way is followed by another, until none is
  // added (one more pass per level of nesting at most).
  int32_t lo = INT32_MAX, hi = -1;
  std::unordered_set<const weft_node*> from_x;
  for (int32_t i = 0; i < nx; ++i) {
    from_x.insert(xs[i].node);
    lo = std::min(lo, xs[i].node->id);
  }
  for (int32_t i = 0; i < ny; ++i) hi = std::max(hi, ys[i].node->id);
  for (bool again = true; again;) {
    again = false;
    for (int32_t id = lo; id <= hi; ++id) {
      const weft_node* n = graph.At(id);
      if (!to_y.count(n) || from_x.count(n)) continue;
      bool dep = false;
      for (size_t k = 0; !dep && k < n->inputs.size(); ++k)
        dep = !IsRef(n, k) && from_x.count(n->inputs[k].node);
      if (!dep && n->def->exec == ExecKind::kMerge)
        for (const weft_node* b : graph.BackEdges(n))
          if (from_x.count(b)) {
            dep = true;
            // Its users came before this pass reached their new input.
            again = true;
          }
      if (dep) from_x.insert(n);
    }
    if (!again) {
      // A back edge reached this pass may make an earlier Merge depend on
      // an x: one more look at the Merges decides.
      for (int32_t id = lo; id <= hi && !again; ++id) {
        const weft_node* n = graph.At(id);
        if (n->def->exec != ExecKind::kMerge || from_x.count(n) ||
            !to_y.count(n))
          continue;
        for (const weft_node* b : graph.BackEdges(n))
          if (from_x.count(b)) again = true;
      }
    }
  }
  std::vector<const weft_node*> between;
  for (int32_t id = lo; id <= hi; ++id) {
    const weft_node* n = graph.At(id);
    if (to_y.count(n) && from_x.count(n)) between.push_back(n);
  }
  if (between.empty()) return nullptr;  // no x reaches a y

  std::string scope;
  WEFT_RETURN_IF_ERROR(NewScope(g_, &scope));
  OutermostScope outermost(scope);
  for (int32_t i = 0; i < ny; ++i) {
    if (!from_x.count(ys[i].node)) continue;
    weft_output seed;
    if (grad_ys != nullptr) {
      seed = grad_ys[i];
    } else {
      weft_op_builder* b = weft_op_begin(
          g_, "OnesLike", (scope + "/seed_" + std::to_string(i)).c_str());
      weft_op_add_input(b, ys[i]);
      weft_node* n = nullptr;
      WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
      seed = weft_output{n, 0};
    }
    arrived_[Key{ys[i].node, ys[i].index}].push_back(seed);
  }

  std::map<Key, std::vector<int32_t>> x_slots;
  for (int32_t i = 0; i < nx; ++i)
    x_slots[Key{xs[i].node, xs[i].index}].push_back(i);

  std::unordered_set<const WhileLoopInfo*> loops_done;
  for (size_t b = between.size(); b-- > 0;) {
    weft_node* n = const_cast<weft_node*>(between[b]);
    // A while loop is differentiated whole, when the walk first meets one
    // of its nodes (an Exit: they are made last): by a backward loop.
    const WhileLoopInfo* loop = nullptr;
    for (const WhileLoopInfo* l : graph.WhileLoopsOf(n))
      if (!IsBeingDifferentiated(l)) {
        loop = l;
        break;
      }
    if (loop != nullptr) {
      if (loops_done.insert(loop).second)
        WEFT_RETURN_IF_ERROR(Annotate(LoopGradient(*loop, scope),
                                      "gradient of while loop '" +
                                          loop->frame + "'"));
      continue;
    }
    weft_gradient_context ctx;
    ctx.graph = g_;
    ctx.node = n;
    ctx.scope = scope + "/" + n->name;
    bool any = false;
    ctx.dy.resize(n->output_dtypes.size());
    for (size_t o = 0; o < ctx.dy.size(); ++o) {
      Key k{n, static_cast<int32_t>(o)};
      WEFT_RETURN_IF_ERROR(Total(k, ctx.scope, &ctx.dy[o]));
      any |= ctx.dy[o].node != nullptr;
      auto xs_here = x_slots.find(k);
      if (xs_here != x_slots.end())
        for (int32_t i : xs_here->second) out[i] = ctx.dy[o];
    }
    if (!any) continue;
    ctx.wanted.resize(n->inputs.size());
    ctx.dx.assign(n->inputs.size(), weft_output{nullptr, 0});
    bool want_any = false;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      const weft_output& in = n->inputs[k];
      ctx.wanted[k] = !IsRef(n, k) && from_x.count(in.node) &&
                      IsFloat(in.node->output_dtypes[in.index]);
      want_any |= ctx.wanted[k];
    }
    if (!want_any) continue;
    int status = GradientStatus(n->op_type);
    if (status == 0) continue;  // declared not differentiable: no gradient
    const GradFn* fn = FindGradient(n->op_type);
    if (fn == nullptr)
      return Errorf(WEFT_UNIMPLEMENTED,
                    "no gradient is defined for op %s (node '%s', between "
                    "the xs and the ys); weft_gradient_register() can add "
                    "one", n->op_type.c_str(), n->name.c_str());
    std::string where = "gradient of node '" + n->name + "' (" + n->op_type +
                        ")";
    WEFT_RETURN_IF_ERROR(Annotate((*fn)(&ctx), where));
    if (!ctx.refused.empty())
      return Error(WEFT_INVALID_ARGUMENT, where + ": " + ctx.refused);
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      if (ctx.dx[k].node == nullptr || !ctx.wanted[k]) continue;
      const weft_output& in = n->inputs[k];
      arrived_[Key{in.node, in.index}].push_back(ctx.dx[k]);
    }
  }
  return nullptr;
}

}  // namespace

const std::string& OutermostGradientScope() { return outermost_scope; }

}  // namespace weft

using weft::Error;
using weft::Errorf;

extern "C" {

weft_status* weft_gradients(weft_graph* graph, const weft_output* ys,
                            int32_t num_ys, const weft_output* xs,
                            int32_t num_xs, const weft_output* grad_ys,
                            weft_output* out_grads) {
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  if (num_ys <= 0 || num_xs <= 0 || ys == nullptr || xs == nullptr ||
      out_grads == nullptr)
    return Error(WEFT_INVALID_ARGUMENT,
                 "weft_gradients needs at least one y and one x, and room "
                 "for the gradients");
  for (int32_t i = 0; i < num_xs; ++i) out_grads[i] = weft_output{nullptr, 0};
  return weft::Guard([&]() -> weft_status* {
    for (int32_t i = 0; i < num_ys; ++i)
      WEFT_RETURN_IF_ERROR(weft::CheckOutput(graph, ys[i], "y", i));
    for (int32_t i = 0; i < num_xs; ++i)
      WEFT_RETURN_IF_ERROR(weft::CheckOutput(graph, xs[i], "x", i));
    if (grad_ys != nullptr)
      for (int32_t i = 0; i < num_ys; ++i) {
        WEFT_RETURN_IF_ERROR(
            weft::CheckOutput(graph, grad_ys[i], "grad_y", i));
        const weft_output& y = ys[i];
        const weft_output& gy = grad_ys[i];
        weft_dtype yt = y.node->output_dtypes[y.index];
        weft_dtype gt = gy.node->output_dtypes[gy.index];
        const weft::ShapeInfo& ys_shape = y.node->output_shapes[y.index];
        const weft::ShapeInfo& gs = gy.node->output_shapes[gy.index];
        bool shape_ok = weft::Compatible(ys_shape, gs);
        if (yt != gt || !shape_ok)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "grad_y %d is %s %s but y %d ('%s') is %s %s", i,
                        weft_dtype_name(gt), gs.ToString().c_str(), i,
                        y.node->name.c_str(), weft_dtype_name(yt),
                        ys_shape.ToString().c_str());
      }
    weft::Backprop bp(graph);
    weft_status* st = bp.Run(ys, num_ys, xs, num_xs, grad_ys, out_grads);
    if (st != nullptr)
      for (int32_t i = 0; i < num_xs; ++i)
        out_grads[i] = weft_output{nullptr, 0};
    return st;
  });
}

int32_t weft_op_gradient_status(const char* op_type) {
  if (op_type == nullptr) return -1;
  return weft::GradientStatus(op_type);
}

weft_graph* weft_gradient_graph(weft_gradient_context* ctx) {
  return ctx ? ctx->graph : nullptr;
}

weft_node* weft_gradient_node(weft_gradient_context* ctx) {
  return ctx ? ctx->node : nullptr;
}

weft_output weft_gradient_output_grad(weft_gradient_context* ctx,
                                      int32_t index) {
  if (ctx == nullptr || index < 0 ||
      index >= static_cast<int32_t>(ctx->dy.size()))
    return weft_output{nullptr, 0};
  return ctx->dy[index];
}

int32_t weft_gradient_input_wanted(weft_gradient_context* ctx,
                                   int32_t index) {
  if (ctx == nullptr || index < 0 ||
      index >= static_cast<int32_t>(ctx->wanted.size()))
    return 0;
  return ctx->wanted[index] ? 1 : 0;
}

weft_status* weft_gradient_set_input_grad(weft_gradient_context* ctx,
                                          int32_t index, weft_output grad) {
  if (ctx == nullptr) return Error(WEFT_INVALID_ARGUMENT, "ctx is NULL");
  if (index < 0 || index >= static_cast<int32_t>(ctx->dx.size()))
    return Errorf(WEFT_OUT_OF_RANGE, "node '%s' has %zu inputs, not %d",
                  ctx->node->name.c_str(), ctx->dx.size(), index + 1);
  return weft::Guard([&]() -> weft_status* {
    std::string problem = weft::InputGradProblem(ctx, index, grad);
    if (!problem.empty()) {
      if (ctx->refused.empty()) ctx->refused = problem;
      return Error(WEFT_INVALID_ARGUMENT, problem);
    }
    ctx->dx[index] = grad;
    return nullptr;
  });
}

weft_status* weft_gradient_register(const char* op_type, weft_gradient_fn fn,
                                    void* arg) {
  if (op_type == nullptr || fn == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "op_type and fn are required");
  if (weft::OpRegistry::Global().Find(op_type) == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "unknown op '%s'", op_type);
  weft::GradientStatus(op_type);  // the library's first, so this one wins
  weft::RegisterGradient(op_type, [fn, arg](weft_gradient_context* ctx) {
    return fn(arg, ctx);
  });
  return nullptr;
}

}  // extern "C"
