// weft_cond and weft_while_loop: control structures built from the
// primitives (runtime/ops/control_flow.cc) around user callbacks.
#include <string>
#include <vector>

#include "base/status.h"
#include "control/context.h"
#include "weft/control.h"
#include "weft/tensor.h"

namespace weft {
namespace {

// One node through the public builder (so open contexts rewrite it).
weft_status* Make(weft_graph* g, const char* op, const std::string& name,
                  std::initializer_list<weft_output> inputs,
                  weft_node** out,
                  const std::function<void(weft_op_builder*)>& attrs = {}) {
  weft_op_builder* b = weft_op_begin(g, op, name.c_str());
  for (const weft_output& in : inputs) weft_op_add_input(b, in);
  if (attrs) attrs(b);
  return weft_op_finish(b, out);
}

weft_output Out(weft_node* n, int32_t i = 0) { return weft_output{n, i}; }

// A prefix no node of the graph uses yet.
std::string UniquePrefix(weft_graph* g, const char* name,
                         const char* fallback) {
  std::string base = name && *name ? name : fallback;
  for (int k = 0;; ++k) {
    std::string p = k == 0 ? base : base + "_" + std::to_string(k);
    if (weft_graph_node_by_name(g, (p + "/pivot").c_str()) == nullptr &&
        weft_graph_node_by_name(g, p.c_str()) == nullptr)
      return p;
  }
}

weft_status* CheckPred(weft_output pred, const std::string& what) {
  if (weft_output_dtype(pred) != WEFT_BOOL)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: the predicate must be bool, got "
                  "%s", what.c_str(), weft_dtype_name(weft_output_dtype(pred)));
  int32_t rank = 0;
  int64_t dims[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(weft_output_shape(pred, dims, WEFT_MAX_RANK, &rank));
  if (rank > 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: the predicate must be a scalar, got rank %d",
                  what.c_str(), rank);
  return nullptr;
}

weft_status* CallbackError(weft_status* st, const std::string& what) {
  return Annotate(st, what);
}

class CondContext : public ControlContext {
 public:
  CondContext(weft_graph* g, std::string what, weft_output pred, int branch)
      : ControlContext(g, std::move(what)), pred_(pred), branch_(branch) {}

 protected:
  weft_status* Capture(weft_output v, weft_output* out) override {
    weft_node* s = nullptr;
    WEFT_RETURN_IF_ERROR(Make(graph_, "Switch", "", {v, pred_}, &s));
    *out = Out(s, branch_);
    return nullptr;
  }

 private:
  weft_output pred_;
  int branch_;
};

class LoopContext : public ControlContext {
 public:
  LoopContext(weft_graph* g, std::string frame, int32_t parallel)
      : ControlContext(g, "while loop '" + frame + "'"),
        frame_(std::move(frame)), parallel_(parallel) {}
  bool is_loop() const override { return true; }

  weft_status* Enter(weft_output v, bool invariant, weft_output* out) {
    weft_node* e = nullptr;
    std::string frame = frame_;
    int32_t parallel = parallel_;
    WEFT_RETURN_IF_ERROR(Make(graph_, "Enter", "", {v}, &e,
                              [&](weft_op_builder* b) {
                                weft_op_set_attr_string(b, "frame_name",
                                                        frame.c_str());
                                weft_op_set_attr_bool(b, "is_constant",
                                                      invariant);
                                weft_op_set_attr_int(b, "parallel_iterations",
                                                     parallel);
                              }));
    *out = Out(e);
    return nullptr;
  }

 protected:
  weft_status* Capture(weft_output v, weft_output* out) override {
    WEFT_RETURN_IF_ERROR(Enter(v, true, out));
    invariants_.push_back(out->node);
    return nullptr;
  }

 public:
  std::vector<weft_node*> invariants_;

 private:
  std::string frame_;
  int32_t parallel_;
};

weft_status* Cond(weft_graph* g, const char* name, weft_output pred,
                  weft_branch_fn then_fn, weft_branch_fn else_fn, void* user,
                  int32_t n, weft_output* outputs) {
  if (g == nullptr || then_fn == nullptr || else_fn == nullptr ||
      (n > 0 && outputs == nullptr) || n < 0)
    return Error(WEFT_INVALID_ARGUMENT,
                 "weft_cond: graph, then_fn and else_fn must be given, and "
                 "outputs for num_outputs >= 0 values");
  const std::string prefix = UniquePrefix(g, name, "cond");
  const std::string what = "cond '" + prefix + "'";
  WEFT_RETURN_IF_ERROR(CheckPred(pred, what));
  // The predicate through a Switch of itself: each side's pivot is dead
  // when its branch is not taken.
  weft_node* sw = nullptr;
  WEFT_RETURN_IF_ERROR(Make(g, "Switch", prefix + "/switch_pred", {pred, pred},
                            &sw));
  std::vector<weft_output> branch_out[2];
  weft_branch_fn fns[2] = {else_fn, then_fn};
  const char* side[2] = {"else", "then"};
  for (int branch = 1; branch >= 0; --branch) {
    weft_node* pivot = nullptr;
    WEFT_RETURN_IF_ERROR(Make(g, "Identity",
                              prefix + "/pivot_" + side[branch],
                              {Out(sw, branch)}, &pivot));
    CondContext ctx(g, what + " (" + side[branch] + " branch)", pred, branch);
    ctx.MarkInside(pivot);
    ctx.set_pivot(pivot);
    branch_out[branch].assign(n, weft_output{nullptr, 0});
    ctx.Open();
    weft_status* st = fns[branch](g, user, branch_out[branch].data(), n);
    // A branch may hand back a value from outside: it comes in too.
    for (int32_t i = 0; st == nullptr && i < n; ++i) {
      weft_output& o = branch_out[branch][i];
      if (o.node == nullptr || weft_output_dtype(o) == WEFT_DTYPE_INVALID)
        st = Errorf(WEFT_INVALID_ARGUMENT,
                    "%s: the %s branch did not set output %d", what.c_str(),
                    side[branch], i);
      else
        st = ctx.Bring(o, &o);
    }
    ctx.Close();
    if (st != nullptr)
      return CallbackError(st, what + ", " + side[branch] + " branch");
  }
  for (int32_t i = 0; i < n; ++i) {
    weft_output t = branch_out[1][i], f = branch_out[0][i];
    if (weft_output_dtype(t) != weft_output_dtype(f))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "%s: output %d is %s in the then branch but %s in the "
                    "else branch", what.c_str(), i,
                    weft_dtype_name(weft_output_dtype(t)),
                    weft_dtype_name(weft_output_dtype(f)));
    weft_node* m = nullptr;
    WEFT_RETURN_IF_ERROR(Make(g, "Merge",
                              prefix + "/merge_" + std::to_string(i), {t, f},
                              &m));
    g->impl->SetCondPredicate(m, pred);
    outputs[i] = Out(m);
  }
  return nullptr;
}

// Case k of n as cond(index == k, branch k, case k+1 of n); the last
// branch also takes every index no earlier one matched.
struct CaseState {
  weft_output index;
  int32_t num_branches;
  weft_case_branch_fn fn;
  void* user;
  std::string prefix;
  int32_t branch;  // the branch this level decides
};

weft_status* CaseFrom(weft_graph* g, CaseState* c, weft_output* outputs,
                      int32_t n);

weft_status* CaseTaken(weft_graph* g, void* user, weft_output* out,
                       int32_t n) {
  auto* c = static_cast<CaseState*>(user);
  return c->fn(g, c->user, c->branch, out, n);
}

weft_status* CaseRest(weft_graph* g, void* user, weft_output* out,
                      int32_t n) {
  CaseState next = *static_cast<CaseState*>(user);
  next.branch++;
  return CaseFrom(g, &next, out, n);
}

weft_status* CaseFrom(weft_graph* g, CaseState* c, weft_output* outputs,
                      int32_t n) {
  if (c->branch == c->num_branches - 1)
    return c->fn(g, c->user, c->branch, outputs, n);
  weft_tensor* t = nullptr;
  int32_t k = c->branch;
  WEFT_RETURN_IF_ERROR(
      weft_tensor_create_copy(WEFT_INT32, nullptr, 0, &k, sizeof k, &t));
  weft_output value;
  weft_status* st = weft_graph_constant(g, nullptr, t, &value);
  weft_tensor_destroy(t);
  WEFT_RETURN_IF_ERROR(st);
  weft_node* equal = nullptr;
  WEFT_RETURN_IF_ERROR(Make(g, "Equal", "", {c->index, value}, &equal));
  std::string name = c->prefix + "/branch_" + std::to_string(k);
  return Cond(g, name.c_str(), Out(equal), CaseTaken, CaseRest, c, n,
              outputs);
}

weft_status* Case(weft_graph* g, const char* name, weft_output index,
                  int32_t num_branches, weft_case_branch_fn fn, void* user,
                  int32_t n, weft_output* outputs) {
  if (g == nullptr || fn == nullptr || num_branches < 1 || n < 0 ||
      (n > 0 && outputs == nullptr))
    return Error(WEFT_INVALID_ARGUMENT,
                 "weft_case: graph, at least one branch, branch_fn and "
                 "outputs for num_outputs >= 0 values must be given");
  if (index.node == nullptr || weft_output_dtype(index) != WEFT_INT32)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_case: the branch index must be an int32 scalar, got "
                  "%s", index.node ? weft_dtype_name(weft_output_dtype(index))
                                   : "NULL");
  CaseState c{index, num_branches, fn, user, UniquePrefix(g, name, "case"),
              0};
  return CaseFrom(g, &c, outputs, n);
}

weft_status* ScalarConst(weft_graph* g, const std::string& name, int32_t v,
                         weft_output* out) {
  weft_tensor* t = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft_tensor_create_copy(WEFT_INT32, nullptr, 0, &v, sizeof v, &t));
  weft_status* st = weft_graph_constant(g, name.c_str(), t, out);
  weft_tensor_destroy(t);
  return st;
}

weft_status* WhileLoop(weft_graph* g, weft_loop_cond_fn cond,
                       weft_loop_body_fn body, void* user,
                       const weft_output* vars, int32_t n,
                       const weft_while_options* options, weft_output* out) {
  if (g == nullptr || cond == nullptr || body == nullptr || n < 1 ||
      vars == nullptr || out == nullptr)
    return Error(WEFT_INVALID_ARGUMENT,
                 "weft_while_loop: graph, cond, body, at least one loop "
                 "variable and out_vars must be given");
  weft_while_options opt{};
  opt.struct_size = sizeof opt;
  if (options != nullptr) {
    if (options->struct_size < offsetof(weft_while_options, shape_invariants) +
                                   sizeof(options->shape_invariants))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "weft_while_loop: options->struct_size %zu is too small",
                    options->struct_size);
    opt = *options;
  }
  if (opt.parallel_iterations == 0) opt.parallel_iterations = 10;
  if (opt.parallel_iterations < 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_while_loop: parallel_iterations must be >= 1, got %d",
                  opt.parallel_iterations);
  if (opt.maximum_iterations > INT32_MAX)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "weft_while_loop: maximum_iterations must be at most "
                  "2^31-1, got %lld",
                  static_cast<long long>(opt.maximum_iterations));
  const std::string frame = UniquePrefix(g, opt.name, "while");
  const std::string what = "while loop '" + frame + "'";
  const bool counted = opt.maximum_iterations > 0;
  // A hidden counter variable enforces maximum_iterations.
  std::vector<weft_output> init(vars, vars + n);
  if (counted) {
    weft_output zero;
    WEFT_RETURN_IF_ERROR(ScalarConst(g, frame + "/counter_init", 0, &zero));
    init.push_back(zero);
  }
  const int32_t total = static_cast<int32_t>(init.size());
  for (int32_t i = 0; i < n; ++i)
    if (vars[i].node == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT, "%s: loop variable %d is NULL",
                    what.c_str(), i);

  LoopContext ctx(g, frame, opt.parallel_iterations);
  auto info = std::make_shared<WhileLoopInfo>();
  info->frame = frame;
  info->num_vars = n;
  std::vector<weft_output> merged(total);
  std::vector<weft_node*> merges(total);
  for (int32_t i = 0; i < total; ++i) {
    weft_output entered;
    WEFT_RETURN_IF_ERROR(ctx.Enter(init[i], false, &entered));
    ctx.MarkInside(entered.node);
    info->enters.push_back(entered.node);
    const weft_shape* inv =
        opt.shape_invariants != nullptr && i < n ? &opt.shape_invariants[i]
                                                 : nullptr;
    if (inv != nullptr && inv->rank > 0 && inv->dims == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "%s: shape invariant %d has rank %d but no dims",
                    what.c_str(), i, inv->rank);
    std::string mname = frame + "/merge_" + std::to_string(i);
    WEFT_RETURN_IF_ERROR(Make(
        g, "Merge", i == 0 ? frame + "/pivot" : mname, {entered}, &merges[i],
        [&](weft_op_builder* b) {
          if (inv != nullptr)
            weft_op_set_attr_shape(b, "shape", inv->dims, inv->rank);
        }));
    ctx.MarkInside(merges[i]);
    merged[i] = Out(merges[i]);
  }

  // The condition, from the merged values.
  ctx.set_pivot(merges[0]);
  ctx.Open();
  weft_output pred{nullptr, 0};
  weft_status* st = cond(g, user, merged.data(), n, &pred);
  if (st == nullptr && pred.node == nullptr)
    st = Errorf(WEFT_INVALID_ARGUMENT, "the condition gave no predicate");
  if (st == nullptr) st = CheckPred(pred, "the condition");
  if (st == nullptr) st = ctx.Bring(pred, &pred);
  if (st == nullptr && counted) {
    weft_output limit, below;
    weft_node* less = nullptr;
    weft_node* both = nullptr;
    st = ScalarConst(g, frame + "/maximum_iterations",
                     static_cast<int32_t>(opt.maximum_iterations), &limit);
    if (st == nullptr)
      st = Make(g, "Less", frame + "/below_maximum", {merged[n], limit},
                &less);
    if (st == nullptr) {
      below = Out(less);
      st = Make(g, "LogicalAnd", frame + "/continue", {pred, below}, &both);
    }
    if (st == nullptr) pred = Out(both);
  }
  weft_node* loop_cond = nullptr;
  if (st == nullptr)
    st = Make(g, "LoopCond", frame + "/loop_cond", {pred}, &loop_cond);
  std::vector<weft_node*> switches(total);
  for (int32_t i = 0; st == nullptr && i < total; ++i)
    st = Make(g, "Switch", frame + "/switch_" + std::to_string(i),
              {merged[i], Out(loop_cond)}, &switches[i]);
  weft_node* pivot = nullptr;
  if (st == nullptr)
    st = Make(g, "Identity", frame + "/body_pivot", {Out(switches[0], 1)},
              &pivot);
  ctx.Close();
  if (st != nullptr) return CallbackError(st, what + ", condition");

  // The body, from the values that go round again.
  std::vector<weft_output> current(total), next(total, {nullptr, 0});
  for (int32_t i = 0; i < total; ++i) current[i] = Out(switches[i], 1);
  ctx.set_pivot(pivot);
  ctx.Open();
  st = body(g, user, current.data(), n, next.data());
  for (int32_t i = 0; st == nullptr && i < n; ++i) {
    if (next[i].node == nullptr ||
        weft_output_dtype(next[i]) == WEFT_DTYPE_INVALID)
      st = Errorf(WEFT_INVALID_ARGUMENT, "the body did not set loop variable "
                  "%d", i);
    else if (weft_output_dtype(next[i]) != weft_output_dtype(merged[i]))
      st = Errorf(WEFT_INVALID_ARGUMENT,
                  "the body gives loop variable %d as %s, but it is %s", i,
                  weft_dtype_name(weft_output_dtype(next[i])),
                  weft_dtype_name(weft_output_dtype(merged[i])));
    else
      st = ctx.Bring(next[i], &next[i]);
  }
  if (st == nullptr && counted) {
    weft_output one;
    weft_node* inc = nullptr;
    st = ScalarConst(g, frame + "/counter_step", 1, &one);
    if (st == nullptr)
      st = Make(g, "Add", frame + "/counter_next", {current[n], one}, &inc);
    if (st == nullptr) next[n] = Out(inc);
  }
  for (int32_t i = 0; st == nullptr && i < total; ++i) {
    weft_node* ni = nullptr;
    std::string target = weft_node_name(merges[i]);
    st = Make(g, "NextIteration", frame + "/next_" + std::to_string(i),
              {next[i]}, &ni, [&](weft_op_builder* b) {
                weft_op_set_attr_string(b, "merge", target.c_str());
              });
  }
  ctx.Close();
  if (st != nullptr) return CallbackError(st, what + ", body");

  for (int32_t i = 0; i < n; ++i) {
    weft_node* e = nullptr;
    WEFT_RETURN_IF_ERROR(Make(g, "Exit", frame + "/exit_" + std::to_string(i),
                              {Out(switches[i], 0)}, &e));
    out[i] = Out(e);
    info->exits.push_back(e);
  }
  info->body_in = current;
  info->next = next;
  info->invariants = ctx.invariants_;
  info->pivot = pivot;
  info->nodes = ctx.inside();
  for (weft_node* e : info->exits) info->nodes.insert(e);
  g->impl->AddWhileLoop(std::move(info));
  return nullptr;
}

}  // namespace
}  // namespace weft

extern "C" {

weft_status* weft_cond(weft_graph* graph, const char* name, weft_output pred,
                       weft_branch_fn then_fn, weft_branch_fn else_fn,
                       void* user, int32_t num_outputs,
                       weft_output* outputs) {
  return weft::Guard([&]() -> weft_status* {
    return weft::Cond(graph, name, pred, then_fn, else_fn, user, num_outputs,
                      outputs);
  });
}

weft_status* weft_case(weft_graph* graph, const char* name, weft_output index,
                       int32_t num_branches, weft_case_branch_fn branch_fn,
                       void* user, int32_t num_outputs,
                       weft_output* outputs) {
  return weft::Guard([&]() -> weft_status* {
    return weft::Case(graph, name, index, num_branches, branch_fn, user,
                      num_outputs, outputs);
  });
}

weft_status* weft_while_loop(weft_graph* graph, weft_loop_cond_fn cond,
                             weft_loop_body_fn body, void* user,
                             const weft_output* loop_vars, int32_t num_vars,
                             const weft_while_options* options,
                             weft_output* out_vars) {
  return weft::Guard([&]() -> weft_status* {
    return weft::WhileLoop(graph, cond, body, user, loop_vars, num_vars,
                           options, out_vars);
  });
}

}  // extern "C"
