// Fusion: Conv2D -> BiasAdd -> Relu, where nothing else reads the Conv2D or
// the BiasAdd, becomes one FusedConv2D node (on the CPU, one oneDNN
// convolution with the bias and the ReLU as post-ops: the two element-wise
// passes over the activations go).  The fused node takes the Relu's name
// and place (consumers of the Relu read it through Rep()); the Conv2D and
// BiasAdd drop out with the next prune.  Gradients are unaffected: they
// are built on the graph, read the Relu's output (ReluGrad takes y) and
// the Conv2D's inputs, never the values fused away.
//
// Only where every device that could run the Conv2D also has a FusedConv2D
// kernel for its attributes, so placement never meets a fused node it
// cannot run; nodes with control edges or device constraints that differ
// are left alone.
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
  const OpDef* fused_def = OpRegistry::Global().Find("FusedConv2D");
  bool fused_any = false;
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
    // A FusedConv2D kernel wherever a Conv2D kernel could run.
    bool runnable = true;
    for (Device* d : allowed_)
      if (Registry::Get().FindKernel("Conv2D", d->type, conv->attrs) &&
          !Registry::Get().FindKernel("FusedConv2D", d->type, conv->attrs))
        runnable = false;
    if (!runnable) continue;
    auto fused = std::make_unique<weft_node>();
    fused->graph = relu->graph;
    fused->id = relu->id;
    fused->name = relu->name;
    fused->op_type = "FusedConv2D";
    fused->device = relu->device;
    fused->def = fused_def;
    fused->inputs = {conv->inputs[0], conv->inputs[1], bias_add->inputs[1]};
    fused->attrs = conv->attrs;
    fused->output_dtypes = relu->output_dtypes;
    fused->output_shapes = relu->output_shapes;
    fused_[relu] = fused.get();
    plan_->fused.push_back(
        {relu->name, "Conv2D '" + conv->name + "' + BiasAdd '" +
                         bias_add->name + "' + Relu '" + relu->name + "'"});
    plan_->synthetic.push_back(std::move(fused));
    fused_any = true;
  }
  if (fused_any) Prune();
}

}  // namespace planning
}  // namespace weft
