// Gradients through conditionals (the gradient of a Merge is a Switch on
// the same predicate, and of a Switch a Merge), and the loop primitives'
// status.
//
// Through a cond, the gradient of the untaken branch is dead, exactly like
// its forward values; it becomes zeros where it leaves the branch (the
// Switch that brought a value in), so no dead value escapes the cond.
#include <algorithm>

#include "control/context.h"
#include "grad/grad_builder.h"
#include "grad/loop_gradient.h"
#include "ops/registry.h"
#include "weft/control.h"

namespace weft {
namespace {

// Gradients through while loops need the forward values of every
// iteration, saved and read back in reverse by a backward loop; that is not
// built yet, and a loop must not silently pass no gradient.
weft_status* LoopGradientMissing(weft_gradient_context* ctx) {
  return Errorf(WEFT_UNIMPLEMENTED,
                "gradients through while loops are not implemented yet: "
                "node '%s' (%s) is part of a loop between the xs and the ys",
                ctx->node->name.c_str(), ctx->node->op_type.c_str());
}

bool InLoop(const weft_node* sw) {
  return sw->inputs[1].node->def->exec == ExecKind::kLoopCond;
}

}  // namespace

void RegisterControlFlowGradients() {
  RegisterGradientWith("Merge", [](GradBuilder& g) {
    weft_output pred;
    if (!g.node()->graph->CondPredicate(g.node(), &pred)) {
      g.Fail(LoopGradientMissing(g.ctx()));
      return;
    }
    weft_output dy = g.dy(0);
    if (dy.node == nullptr) return;  // only value_index was used
    // Input 0 came from the then branch (Switch output 1), input 1 from
    // the else branch (output 0).
    weft_output sw = g.Apply("Switch", {dy, pred});
    for (int k = 0; k < 2; ++k)
      g.Set(k, weft_output{sw.node, k == 0 ? 1 : 0});
  });
  RegisterGradientWith("Switch", [](GradBuilder& g) {
    if (InLoop(g.node())) {
      g.Fail(LoopGradientMissing(g.ctx()));
      return;
    }
    weft_output d_false = g.dy(0), d_true = g.dy(1);
    if (d_false.node == nullptr || d_true.node == nullptr) {
      // Zeros stand in on the side no gradient reached, switched so they
      // are live exactly when that side was taken.
      int missing = d_false.node == nullptr ? 0 : 1;
      weft_output zeros = g.Apply("ZerosLike", {g.x(0)});
      weft_output sw = g.Apply("Switch", {zeros, g.x(1)});
      (missing == 0 ? d_false : d_true) = weft_output{sw.node, missing};
    }
    g.Set(0, g.Apply("Merge", {d_false, d_true}));
  });
  RegisterGradient("Enter", LoopGradientMissing);
  RegisterGradient("Exit", LoopGradientMissing);
  RegisterGradient("NextIteration", LoopGradientMissing);
  RegisterNotDifferentiable("LoopCond");
  for (const char* op : {"AccumulatorPush", "AccumulatorSize", "AccumulatorSizeWithin",
                         "AccumulatorRead"})
    RegisterNotDifferentiable(op);
}

}  // namespace weft

// ---------------------------------------------------------------------------
// While loops.

namespace weft {
namespace {

// Loops whose bodies are being differentiated on this thread, outermost
// first, and the index each one's backward body reads its forward values at.
class ForwardValues;
thread_local std::vector<const WhileLoopInfo*> differentiating;
thread_local std::vector<ForwardValues*> forward_values;

bool IsFloatType(weft_dtype t) {
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64 || t == WEFT_FLOAT16 ||
         t == WEFT_BFLOAT16;
}

weft_dtype TypeOf(weft_output o) { return o.node->output_dtypes[o.index]; }

weft_status* Node(weft_graph* g, const char* op,
                  std::initializer_list<weft_output> inputs,
                  weft_output* out,
                  const std::function<void(weft_op_builder*)>& more = {}) {
  weft_op_builder* b = weft_op_begin(g, op, nullptr);
  for (const weft_output& in : inputs) weft_op_add_input(b, in);
  if (more) more(b);
  weft_node* n = nullptr;
  WEFT_RETURN_IF_ERROR(weft_op_finish(b, &n));
  *out = weft_output{n, 0};
  return nullptr;
}

weft_status* Int32(weft_graph* g, int32_t v, weft_output* out) {
  weft_tensor* t = nullptr;
  WEFT_RETURN_IF_ERROR(
      weft_tensor_create_copy(WEFT_INT32, nullptr, 0, &v, sizeof v, &t));
  weft_status* st = weft_graph_constant(g, nullptr, t, out);
  weft_tensor_destroy(t);
  return st;
}

// Inside the backward loop's body: a forward value of the loop comes from
// its accumulator, read at the forward iteration this backward iteration
// mirrors; a loop invariant comes in as its outer value; anything else the
// backward loop brings in as usual.
class ForwardValues : public ControlContext {
 public:
  // `indices`: the backward iteration's forward iteration numbers, one per
  // loop from the outermost one being differentiated to this one.
  ForwardValues(weft_graph* g, const WhileLoopInfo& loop,
                std::vector<weft_output> indices, std::string scope)
      : ControlContext(g, "the gradient of while loop '" + loop.frame + "'"),
        loop_(loop), indices_(std::move(indices)), scope_(std::move(scope)) {}
  const std::vector<weft_output>& indices() const { return indices_; }

 protected:
  weft_status* Capture(weft_output v, weft_output* out) override {
    ControlContext* outer = ControlContext::Current(graph_->impl.get());
    const weft_node* n = v.node;
    if (!loop_.nodes.count(n)) return outer->Bring(v, out);
    if (n->def->exec == ExecKind::kEnter &&
        FindAttr(n->attrs, "is_constant")->i != 0)
      return outer->Bring(n->inputs[0], out);
    // The push is a forward node: made with every context closed, so its
    // input stays where it is.
    std::string name = scope_ + "/acc_" + std::to_string(count_++);
    weft_output push;
    std::vector<ControlContext*> open = Suspend(graph_->impl.get());
    weft_status* st = Node(graph_, "AccumulatorPush", {v}, &push,
                           [&](weft_op_builder* b) {
                             weft_op_set_attr_string(b, "accumulator",
                                                     name.c_str());
                           });
    Resume(open);
    WEFT_RETURN_IF_ERROR(st);
    const ShapeInfo& s = n->output_shapes[v.index];
    return Node(graph_, "AccumulatorRead", {}, out,
                [&](weft_op_builder* b) {
                  weft_op_add_input_list(
                      b, indices_.data(),
                      static_cast<int32_t>(indices_.size()));
                  weft_op_set_attr_string(b, "accumulator", name.c_str());
                  weft_op_set_attr_dtype(b, "dtype", TypeOf(v));
                  weft_op_set_attr_shape(b, "shape", s.dims.data(), s.rank);
                  weft_op_set_attr_bool(b, "dead_if_absent", 1);
                  OpBuilderKeepAlive(b, push.node);
                });
  }

 private:
  const WhileLoopInfo& loop_;
  std::vector<weft_output> indices_;
  std::string scope_;
  int count_ = 0;
};

struct BackwardLoop {
  const WhileLoopInfo* loop;
  std::string scope;
  // Inside another loop's backward body: the forward iteration numbers of
  // the loops around this one (empty for a top-level loop).
  std::vector<weft_output> outer_indices;
  std::vector<int32_t> vars;        // float variables, by index
  std::vector<int32_t> invariants;  // float invariants, by index
};

// Backward loop variables: k, then one gradient per float variable, then
// one running sum per float invariant.
weft_status* BackwardCond(weft_graph* g, void*, const weft_output* v,
                          int32_t, weft_output* pred) {
  weft_output zero;
  WEFT_RETURN_IF_ERROR(Int32(g, 0, &zero));
  return Node(g, "Greater", {v[0], zero}, pred);
}

weft_status* BackwardBody(weft_graph* g, void* user, const weft_output* v,
                          int32_t n, weft_output* next) {
  auto* B = static_cast<BackwardLoop*>(user);
  const WhileLoopInfo& L = *B->loop;
  weft_output one, index;
  WEFT_RETURN_IF_ERROR(Int32(g, 1, &one));
  WEFT_RETURN_IF_ERROR(Node(g, "Sub", {v[0], one}, &index));
  next[0] = index;
  const size_t nv = B->vars.size(), ni = B->invariants.size();
  std::vector<weft_output> ys, seeds, xs;
  for (size_t i = 0; i < nv; ++i) {
    ys.push_back(L.next[B->vars[i]]);
    seeds.push_back(v[1 + i]);
    xs.push_back(L.body_in[B->vars[i]]);
  }
  for (size_t j = 0; j < ni; ++j)
    xs.push_back(weft_output{L.invariants[B->invariants[j]], 0});
  std::vector<weft_output> grads(xs.size(), weft_output{nullptr, 0});

  std::vector<weft_output> indices = B->outer_indices;
  indices.push_back(index);
  ForwardValues ctx(g, L, indices, B->scope);
  ctx.set_pivot(ControlContext::Current(g->impl.get())->pivot());
  ctx.MarkInside(index.node);
  ctx.Open();
  differentiating.push_back(&L);
  forward_values.push_back(&ctx);
  weft_status* st = weft_gradients(g, ys.data(), static_cast<int32_t>(nv),
                                   xs.data(), static_cast<int32_t>(xs.size()),
                                   seeds.data(), grads.data());
  forward_values.pop_back();
  differentiating.pop_back();
  // Gradients that did not reach a variable are zeros; sums grow.
  for (size_t i = 0; st == nullptr && i < nv; ++i) {
    if (grads[i].node != nullptr) st = ctx.Bring(grads[i], &next[1 + i]);
    else st = Node(g, "ZerosLike", {v[1 + i]}, &next[1 + i]);
  }
  for (size_t j = 0; st == nullptr && j < ni; ++j) {
    weft_output d = grads[nv + j];
    if (d.node == nullptr) next[1 + nv + j] = v[1 + nv + j];
    else st = Node(g, "Add", {v[1 + nv + j], d}, &next[1 + nv + j]);
  }
  ctx.Close();
  (void)n;
  return st;
}

}  // namespace

bool IsBeingDifferentiated(const WhileLoopInfo* loop) {
  return std::find(differentiating.begin(), differentiating.end(), loop) !=
         differentiating.end();
}

weft_status* BuildWhileGradient(weft_graph* g, const WhileLoopInfo& loop,
                                const std::vector<weft_output>& dy,
                                const std::string& scope,
                                std::vector<weft_output>* d_init,
                                std::vector<weft_output>* d_invariants) {
  d_init->assign(loop.num_vars, weft_output{nullptr, 0});
  d_invariants->assign(loop.invariants.size(), weft_output{nullptr, 0});
  BackwardLoop B;
  B.loop = &loop;
  B.scope = scope + "/" + loop.frame;
  for (int32_t i = 0; i < loop.num_vars; ++i)
    if (IsFloatType(TypeOf(loop.body_in[i]))) B.vars.push_back(i);
  for (size_t j = 0; j < loop.invariants.size(); ++j)
    if (IsFloatType(TypeOf(weft_output{loop.invariants[j], 0})))
      B.invariants.push_back(static_cast<int32_t>(j));
  if (B.vars.empty()) return nullptr;

  if (!forward_values.empty()) B.outer_indices = forward_values.back()->indices();
  // The trip count: the body's pivot saved once per iteration (a forward
  // node, made with every context closed); read once the forward loop has
  // finished: a top-level loop's Exits fire only then, and a nested loop's
  // backward runs inside the backward of a loop that has finished.
  std::string trips = B.scope + "/trips";
  weft_output push, count;
  std::vector<ControlContext*> open = ControlContext::Suspend(g->impl.get());
  weft_status* st = Node(g, "AccumulatorPush", {weft_output{loop.pivot, 0}},
                         &push, [&](weft_op_builder* b) {
                           weft_op_set_attr_string(b, "accumulator",
                                                   trips.c_str());
                         });
  ControlContext::Resume(open);
  WEFT_RETURN_IF_ERROR(st);
  const bool nested = !B.outer_indices.empty();
  WEFT_RETURN_IF_ERROR(Node(
      g, nested ? "AccumulatorSizeWithin" : "AccumulatorSize", {}, &count,
      [&](weft_op_builder* b) {
        if (nested)
          weft_op_add_input_list(
              b, B.outer_indices.data(),
              static_cast<int32_t>(B.outer_indices.size()));
        weft_op_set_attr_string(b, "accumulator", trips.c_str());
        if (!nested) weft_op_add_control_input(b, loop.exits[0]);
        OpBuilderKeepAlive(b, push.node);
      }));
  std::vector<weft_output> init{count};
  for (int32_t i : B.vars) {
    weft_output seed = dy[i];
    if (seed.node == nullptr)
      WEFT_RETURN_IF_ERROR(Node(g, "ZerosLike",
                                {weft_output{loop.exits[i], 0}}, &seed));
    init.push_back(seed);
  }
  for (int32_t j : B.invariants) {
    weft_output zeros;
    WEFT_RETURN_IF_ERROR(Node(g, "ZerosLike",
                              {loop.invariants[j]->inputs[0]}, &zeros));
    init.push_back(zeros);
  }
  std::vector<weft_output> out(init.size());
  weft_while_options o{};
  o.struct_size = sizeof o;
  std::string name = B.scope + "/backward";
  o.name = name.c_str();
  // Shapes as the forward variables declared them.
  std::vector<weft_shape> shapes(init.size(), weft_shape{0, nullptr});
  for (size_t i = 0; i < B.vars.size(); ++i) {
    const ShapeInfo& s = loop.body_in[B.vars[i]].node->output_shapes[
        loop.body_in[B.vars[i]].index];
    shapes[1 + i] = weft_shape{s.rank, s.dims.data()};
  }
  for (size_t j = 0; j < B.invariants.size(); ++j) {
    weft_output w = loop.invariants[B.invariants[j]]->inputs[0];
    const ShapeInfo& s = w.node->output_shapes[w.index];
    shapes[1 + B.vars.size() + j] = weft_shape{s.rank, s.dims.data()};
  }
  o.shape_invariants = shapes.data();
  WEFT_RETURN_IF_ERROR(weft_while_loop(g, BackwardCond, BackwardBody, &B,
                                       init.data(),
                                       static_cast<int32_t>(init.size()), &o,
                                       out.data()));
  for (size_t i = 0; i < B.vars.size(); ++i) (*d_init)[B.vars[i]] = out[1 + i];
  for (size_t j = 0; j < B.invariants.size(); ++j)
    (*d_invariants)[B.invariants[j]] = out[1 + B.vars.size() + j];
  return nullptr;
}

}  // namespace weft
