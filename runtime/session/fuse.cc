// Fusion: Conv2D -> BiasAdd -> Relu, where nothing else reads the Conv2D or
// the BiasAdd, becomes one FusedConv2D node (on the CPU, one oneDNN
// convolution with the bias and the ReLU as post-ops: the two element-wise
// passes over the activations go).  The fused node takes the Relu's name
// and place (consumers of the Relu read it through Rep()); the Conv2D and
// BiasAdd drop out with the next prune.  Gradients are unaffected: they
// are built on the graph, read the Relu's output (ReluGrad takes y) and
// the Conv2D's inputs, never the values fused away.
//
// And in the backward pass: ReluGrad(MaxPoolGrad(x, g), x), where nothing
// else reads the MaxPoolGrad, becomes one MaxPoolReluGrad node (each
// window's gradient lands on its maximum only where that is > 0: one pass
// over the input gradient instead of two, and no intermediate buffer).
// The pattern asks the ReluGrad's features to be the pool's own input, as
// the gradients of Relu -> MaxPool (or FusedConv2D -> MaxPool) build it.
//
// And in the update: ApplyGradientDescent(var, alpha, MatMul(a, b)), where
// nothing else reads the MatMul, becomes one MatMulApplyGradientDescent
// node (on the CPU, one oneDNN product whose scaling by -alpha and the
// addition of var are post-ops writing over the variable: the gradient is
// never stored and the update has no pass of its own; the MLP's step
// loses ~12 of ~370 us).  The update's input order, so the executor's
// variable handling (ExecKind::kUpdate, the ref in input 0) is unchanged.
// Only in one process, where the product belongs on the variable's device
// (see Fuse).
//
// Only where every device that could run the first node also has a kernel
// for the fused op with its attributes, so placement never meets a fused
// node it cannot run; nodes with control edges or device constraints that
// differ are left alone.
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "device/registry.h"
#include "session/planner.h"

namespace weft {
namespace planning {

namespace {

bool Is(const weft_node* n, const char* op) { return n->op_type == op; }

bool Nhwc(const weft_node* n) {
  const AttrValue* f = FindAttr(n->attrs, "data_format");
  return f == nullptr || f->s.empty() || f->s == "NHWC";
}

// Whether `fused_op` has a kernel (for `attrs`) on every allowed device
// that has one for `op`.
bool Runnable(const std::vector<Device*>& allowed, const char* op,
              const char* fused_op, const AttrMap& attrs) {
  for (Device* d : allowed)
    if (Registry::Get().FindKernel(op, d, attrs) &&
        !Registry::Get().FindKernel(fused_op, d, attrs))
      return false;
  return true;
}

// A node that takes over `replaced`'s name, place and outputs.
std::unique_ptr<weft_node> Replacement(const weft_node* replaced,
                                       const char* op) {
  auto fused = std::make_unique<weft_node>();
  fused->graph = replaced->graph;
  fused->id = replaced->id;
  fused->name = replaced->name;
  fused->op_type = op;
  fused->device = replaced->device;
  fused->def = OpRegistry::Global().Find(op);
  fused->output_dtypes = replaced->output_dtypes;
  fused->output_shapes = replaced->output_shapes;
  fused->gradient = replaced->gradient;  // recompute.cc tells passes by it
  return fused;
}

}  // namespace

void Planner::Fuse() {
  // Readers of each output among the nodes the plan needs: data, control
  // and keep-alive edges, and the fetches.
  std::unordered_map<const weft_node*, int32_t> readers;
  for (const weft_node* n : order_) {
    for (size_t k = 0; k < n->inputs.size(); ++k)
      if (!IsFed(n->inputs[k].node, n->inputs[k].index))
        readers[Rep(n->inputs[k].node)]++;
    for (const weft_node* c : n->control_inputs) readers[Rep(c)] += 2;
    for (const weft_node* k : n->keep_alive) readers[Rep(k)] += 2;
  }
  for (const weft_output& f : *req_.fetches) readers[Rep(f.node)] += 2;
  for (const weft_node* t : *req_.targets) readers[Rep(t)] += 2;
  // Nodes whose only reader a fusion took over: they leave the plan.
  std::unordered_set<const weft_node*> absorbed;
  for (const weft_node* relu : order_) {
    if (!Is(relu, "Relu") || !relu->control_inputs.empty()) continue;
    const weft_output& r_in = relu->inputs[0];
    if (IsFed(r_in.node, r_in.index)) continue;
    const weft_node* bias_add = Rep(r_in.node);
    if (!Is(bias_add, "BiasAdd") || !Nhwc(bias_add) ||
        readers[bias_add] != 1 || !bias_add->control_inputs.empty())
      continue;
    const weft_output& b_in = bias_add->inputs[0];
    if (IsFed(b_in.node, b_in.index) || IsFed(bias_add->inputs[1].node,
                                              bias_add->inputs[1].index))
      continue;
    const weft_node* conv = Rep(b_in.node);
    if (!Is(conv, "Conv2D") || !Nhwc(conv) || readers[conv] != 1 ||
        !conv->control_inputs.empty())
      continue;
    if (conv->device != bias_add->device || conv->device != relu->device)
      continue;
    if (!Runnable(allowed_, "Conv2D", "FusedConv2D", conv->attrs)) continue;
    auto fused = Replacement(relu, "FusedConv2D");
    fused->inputs = {conv->inputs[0], conv->inputs[1], bias_add->inputs[1]};
    fused->attrs = conv->attrs;
    AddFusion(relu, std::move(fused),
                        "Conv2D '" + conv->name + "' + BiasAdd '" +
                  bias_add->name + "' + Relu '" + relu->name + "'");
  }
  for (const weft_node* grad : order_) {
    if (!Is(grad, "ReluGrad") || !grad->control_inputs.empty()) continue;
    const weft_output& g_in = grad->inputs[0];
    const weft_output& features = grad->inputs[1];
    if (IsFed(g_in.node, g_in.index)) continue;
    const weft_node* pool = Rep(g_in.node);
    if (!Is(pool, "MaxPoolGrad") || !Nhwc(pool) || readers[pool] != 1 ||
        !pool->control_inputs.empty() || pool->device != grad->device)
      continue;
    // The same value: the pool's input and the ReluGrad's features.
    const weft_output& x = pool->inputs[0];
    if (x.index != features.index || Rep(x.node) != Rep(features.node) ||
        IsFed(x.node, x.index) != IsFed(features.node, features.index))
      continue;
    if (!Runnable(allowed_, "MaxPoolGrad", "MaxPoolReluGrad", pool->attrs))
      continue;
    absorbed.insert(pool);
    auto fused = Replacement(grad, "MaxPoolReluGrad");
    fused->inputs = pool->inputs;
    fused->attrs = pool->attrs;
    AddFusion(grad, std::move(fused),
              "MaxPoolGrad '" + pool->name + "' + ReluGrad '" + grad->name +
                  "'");
  }
  // The update runs where its variable lives (PlaceUpdate), so the fused
  // node takes the product there too: only where the product belongs
  // there anyway.  In one process, that is where the cost model finds it
  // cheapest among the allowed devices with a kernel for it (the placer's
  // measure, less transfers).  Not in a cluster: tasks are split later, and
  // a product whose operands a worker feeds must stay on that worker while
  // the variable lives on a parameter server (tests/mpi/async_ps.c).
  auto belongs_with = [this](const weft_node* product, const weft_node* var) {
    if (req_.cluster != nullptr) return false;
    if (allowed_.size() == 1) return true;
    Device* home = nullptr;
    if (weft_status* st = VariableDevice(var, req_.variables->Get(var),
                                         allowed_, opts_.placement,
                                         req_.costs, &home, nullptr)) {
      weft_status_destroy(st);  // PlaceUpdate reports it
      return false;
    }
    const double here = req_.costs->ComputeUs(product, home);
    for (Device* d : allowed_)
      if (d != home &&
          Registry::Get().FindKernel(product->op_type, d, product->attrs) &&
          req_.costs->ComputeUs(product, d) < here)
        return false;
    return true;
  };
  for (const weft_node* apply : order_) {
    if (!Is(apply, "ApplyGradientDescent") || !apply->control_inputs.empty())
      continue;
    const weft_output& delta = apply->inputs[2];
    if (IsFed(delta.node, delta.index)) continue;
    const weft_node* product = Rep(delta.node);
    if (!Is(product, "MatMul") || readers[product] != 1 ||
        !product->control_inputs.empty() || product->device != apply->device)
      continue;
    AttrMap attrs = product->attrs;  // transpose_a, transpose_b, T
    if (!Runnable(allowed_, "ApplyGradientDescent",
                  "MatMulApplyGradientDescent", attrs) ||
        !belongs_with(product, apply->inputs[0].node))
      continue;
    auto fused = Replacement(apply, "MatMulApplyGradientDescent");
    fused->inputs = {apply->inputs[0], apply->inputs[1], product->inputs[0],
                     product->inputs[1]};
    fused->attrs = std::move(attrs);
    AddFusion(apply, std::move(fused),
              "MatMul '" + product->name + "' + ApplyGradientDescent '" +
                  apply->name + "'");
  }
  FuseWindowIndex(absorbed);
  if (!fused_.empty()) Prune();
}

// `fused` takes `replaced`'s place in the plan (Rep), and run metadata
// lists the fusion under `replaced`'s name, replacing what an earlier
// fusion of the same node said.
void Planner::AddFusion(const weft_node* replaced,
                        std::unique_ptr<weft_node> fused, std::string what) {
  fused_[replaced] = fused.get();
  plan_->synthetic.push_back(std::move(fused));
  for (auto& f : plan_->fused)
    if (f.first == replaced->name) {
      f.second = std::move(what);
      return;
    }
  plan_->fused.push_back({replaced->name, std::move(what)});
}

void Planner::FuseWindowIndex(
    const std::unordered_set<const weft_node*>& absorbed) {
  // The value an input reads: a fed output is itself, any other the
  // output of the node standing for its producer.
  auto value = [this](const weft_output& in) {
    return IsFed(in.node, in.index) ? OutputKey{in.node, in.index}
                                    : OutputKey{Rep(in.node), in.index};
  };
  // The forward MaxPools, by the value they pool.
  std::map<OutputKey, std::vector<const weft_node*>> pools;
  for (const weft_node* n : order_)
    if (Is(n, "MaxPool") && Nhwc(n) && n->control_inputs.empty() &&
        !IsFed(n, 0))
      pools[value(n->inputs[0])].push_back(n);
  if (pools.empty()) return;
  auto same_attr = [](const weft_node* a, const weft_node* b,
                      const char* name) {
    const AttrValue* x = FindAttr(a->attrs, name);
    const AttrValue* y = FindAttr(b->attrs, name);
    return x != nullptr && y != nullptr && x->type == y->type &&
           x->i == y->i && x->s == y->s && x->ints == y->ints;
  };
  std::unordered_map<const weft_node*, const weft_node*> indexed;
  for (const weft_node* orig : order_) {
    // `orig` is a MaxPoolGrad, or a ReluGrad fused with one above.
    if (cse_.replaced.count(orig) != 0 || absorbed.count(orig) != 0) continue;
    const weft_node* grad = Rep(orig);
    const bool relu = Is(grad, "MaxPoolReluGrad");
    if ((!relu && !Is(grad, "MaxPoolGrad")) || !Nhwc(grad) ||
        !grad->control_inputs.empty())
      continue;
    auto found = pools.find(value(grad->inputs[0]));
    if (found == pools.end()) continue;
    const weft_node* pool = nullptr;
    for (const weft_node* p : found->second)
      if (p->device == grad->device && same_attr(p, grad, "ksize") &&
          same_attr(p, grad, "strides") && same_attr(p, grad, "padding") &&
          same_attr(p, grad, "T"))
        pool = p;
    if (pool == nullptr) continue;
    const AttrValue* ksize = FindAttr(pool->attrs, "ksize");
    int64_t window = 1;
    for (int64_t k : ksize->ints) window *= k;
    // input_sizes: the pool's input shape, whose height and width the
    // kernel cannot take from its operands.
    const ShapeInfo& in_shape = grad->output_shapes[0];
    if (window > 256 || !in_shape.known_rank() || in_shape.rank != 4 ||
        in_shape.dims[1] < 0 || in_shape.dims[2] < 0)
      continue;
    const char* grad_op =
        relu ? "MaxPoolReluGradFromWindowIndex" : "MaxPoolGradFromWindowIndex";
    if (!Runnable(allowed_, "MaxPool", "MaxPoolWithWindowIndex",
                  pool->attrs) ||
        !Runnable(allowed_, grad->op_type.c_str(), grad_op, grad->attrs))
      continue;
    const weft_node*& with_index = indexed[pool];
    if (with_index == nullptr) {
      auto p = Replacement(pool, "MaxPoolWithWindowIndex");
      p->inputs = pool->inputs;
      p->attrs = pool->attrs;
      p->output_dtypes.push_back(WEFT_UINT8);
      p->output_shapes.push_back(pool->output_shapes[0]);
      with_index = p.get();
      AddFusion(pool, std::move(p),
                "MaxPool '" + pool->name + "' with its window index");
    }
    auto g = Replacement(orig, grad_op);
    weft_output index{const_cast<weft_node*>(with_index), 1};
    if (relu) {
      g->inputs = {weft_output{const_cast<weft_node*>(pool), 0}, index,
                   grad->inputs[1]};
    } else {
      g->inputs = {index, grad->inputs[1]};
    }
    g->attrs = grad->attrs;
    SetAttr(&g->attrs, "input_sizes", IntListValue(in_shape.dims));
    // What the ReluGrad fusion above said of `orig`, if it fused it.
    std::string what = grad->op_type + " '" + grad->name + "'";
    for (const auto& f : plan_->fused)
      if (f.first == orig->name) what = f.second;
    what += " from MaxPool '" + pool->name + "''s window index";
    weft_node* taken = g.get();
    if (relu) {
      g->output_dtypes.push_back(g->output_dtypes[0]);
      g->output_shapes.push_back(ShapeInfo::Of({in_shape.dims[3]}));
    }
    AddFusion(orig, std::move(g), std::move(what));
    if (relu) TakeBiasGradient(orig, taken, in_shape);
  }
}

// The bias gradient of a conv -> bias -> ReLU -> max-pool layer is
// SumToShapeOf(dz, bias) over the ReluGrad's output dz, a pass over the
// whole activation gradient; MaxPoolReluGradFromWindowIndex (`grad`, which
// took over the ReluGrad `orig`) sums what it hands out per channel as it
// goes, in output 1.  A SumToShapeOf reading dz down to [C] (C its channel
// count, known) becomes an Identity of that output.  (The sum's order
// differs from SumToShapeOf's: the last bits of the bias gradient may.)
void Planner::TakeBiasGradient(const weft_node* orig, weft_node* grad,
                               const ShapeInfo& dz_shape) {
  const int64_t channels = dz_shape.dims[3];
  if (channels < 0) return;
  for (const weft_node* sum : order_) {
    if (!Is(sum, "SumToShapeOf") || !sum->control_inputs.empty() ||
        sum->device != orig->device || cse_.replaced.count(sum) != 0)
      continue;
    const weft_output& x = sum->inputs[0];
    if (x.index != 0 || IsFed(x.node, 0) || Rep(x.node) != Rep(orig))
      continue;
    const ShapeInfo& out = sum->output_shapes[0];
    if (out.rank != 1 || out.dims[0] != channels) continue;
    auto identity = Replacement(sum, "Identity");
    identity->inputs = {weft_output{grad, 1}};
    identity->attrs = sum->attrs;  // T
    AddFusion(sum, std::move(identity),
              "SumToShapeOf '" + sum->name + "' from '" + orig->name +
                  "''s per-channel sums");
  }
}

}  // namespace planning
}  // namespace weft
