// The gradient registry: one function per op, building the gradient of the
// op's inputs from the gradients of its outputs, as new graph nodes.
//
// Gradient functions build nodes with the public graph API (weft_op_begin
// ... weft_op_finish) on ctx->graph, named under ctx->scope, and set
// ctx->dx[i] for each input i whose gradient is wanted (ctx->wanted[i]);
// an input left {nullptr, 0} gets no gradient.  ctx->dy[o] is the gradient
// arriving at output o, {nullptr, 0} when none does (then it is zero: most
// functions with one output are only called when dy[0] is set; a function
// for an op with several outputs must treat a missing dy as zeros).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "weft/train.h"

struct weft_gradient_context {
  weft_graph* graph = nullptr;
  weft_node* node = nullptr;
  std::string scope;                  // "gradients/<node name>"
  std::vector<weft_output> dy;        // per output of node
  std::vector<bool> wanted;           // per input of node
  std::vector<weft_output> dx;        // per input of node, set by the fn
  // The first gradient weft_gradient_set_input_grad refused, so that a
  // function ignoring the refusal still fails the call; "" when none.
  std::string refused;
};

namespace weft {

using GradFn = std::function<weft_status*(weft_gradient_context* ctx)>;

// Registers the gradient of `op` (replacing an earlier one).
void RegisterGradient(const std::string& op, GradFn fn);
// Declares `op` not differentiable: paths through it carry no gradient.
void RegisterNotDifferentiable(const std::string& op);

// 1: has a gradient; 0: declared not differentiable; -1: neither.
int GradientStatus(const std::string& op);
// The gradient function of `op`, or null.
const GradFn* FindGradient(const std::string& op);

// Per-family registration, called once before the first lookup
// (grad/grads_*.cc).  Each family file defines one.
void RegisterElementwiseGradients();
void RegisterArrayGradients();
void RegisterReduceGradients();
void RegisterNnGradients();
void RegisterLinalgGradients();
// The name scope of the outermost weft_gradients call running on the
// calling thread ("" when none): what gradient functions that must agree
// across a loop's nested gradient calls (a TensorArray's gradient array)
// name things by.
const std::string& OutermostGradientScope();

void RegisterTensorArrayGradients();
void RegisterCollectiveGradients();  // ops/collective.cc
void RegisterControlFlowGradients();  // cond; loops say they have none yet
void RegisterStateGradients();  // state, random and other non-differentiable

}  // namespace weft
