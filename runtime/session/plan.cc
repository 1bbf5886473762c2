// From (feeds, fetches, targets) to a plan:
//  1. prune to what is needed, stopping at feeds;
//  2. merge common subexpressions, and prune again through the survivors;
//  3. place: variables once per session, kernels by constraint, kernel
//     availability and cost (argmin over devices of compute time plus the
//     time to bring inputs over), state with its variable, constants and
//     NoOps with their consumers;
//  4. partition: one Send/Recv pair per (value, destination device) for
//     values that cross memories; constants are copied to each device that
//     reads them once, at plan time, instead;
//  5. schedule for memory: delay nodes whose outputs would otherwise wait
//     for their consumers;
//  6. lay out value slots and dependency counts.
#include "session/plan.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/status.h"
#include "session/cse.h"
#include "session/device_set.h"
#include "weft/session.h"

namespace weft {
namespace {

using OutputKey = std::pair<const weft_node*, int32_t>;

struct OutputKeyHash {
  size_t operator()(const OutputKey& k) const {
    return std::hash<const void*>()(k.first) * 31 + k.second;
  }
};

// "SrcT=float32, DstT=int8": every type attribute of a node, which is what
// selects its kernel; "no type attributes" when it has none.
std::string TypeAttrs(const weft_node* n) {
  std::string s;
  for (const auto& [name, v] : n->attrs)
    if (v.type == AttrType::kDtype)
      s += (s.empty() ? "" : ", ") + name + "=" +
           weft_dtype_name(static_cast<weft_dtype>(v.i));
  return s.empty() ? "no type attributes" : s;
}

// The type attributes of a Cast from `src` to `dst`, to find its kernel.
AttrMap CastAttrs(weft_dtype src, weft_dtype dst) {
  AttrMap attrs;
  for (auto [name, t] : {std::pair{"SrcT", src}, std::pair{"DstT", dst}}) {
    AttrValue v;
    v.type = AttrType::kDtype;
    v.i = t;
    attrs.emplace_back(name, v);
  }
  return attrs;
}

std::string DtypeList(const std::vector<int32_t>& d) {
  std::string s;
  for (int32_t t : d)
    s += (s.empty() ? "" : ", ") +
         std::string(weft_dtype_name(static_cast<weft_dtype>(t)));
  return s.empty() ? "any" : s;
}

std::string Names(const std::vector<Device*>& devices) {
  std::string s;
  for (Device* d : devices) s += (s.empty() ? "" : ", ") + d->name;
  return s.empty() ? "none" : s;
}

std::string KernelList(const std::string& op) {
  std::string have;
  for (const KernelReg* k : Registry::Get().KernelsFor(op)) {
    have += (have.empty() ? "" : "; ") + k->device_type + ": " +
            (k->dtype_attr.empty() ? "" : k->dtype_attr + " ") +
            DtypeList(k->dtypes);
    for (const TypeConstraint& c : k->type_constraints)
      have += ", " + c.attr + " " + DtypeList(c.dtypes);
  }
  return have.empty() ? "none" : have;
}

// The devices a node's constraint allows within the session's set.  A
// constraint that matches none of them is an error under strict placement;
// under soft placement the node may go anywhere, and `note` says why.
weft_status* Candidates(const weft_node* n, const std::vector<Device*>& allowed,
                        int32_t policy, std::vector<Device*>* out,
                        std::string* note = nullptr) {
  out->clear();
  if (note) note->clear();
  if (n->device.empty()) {
    *out = allowed;
    return nullptr;
  }
  for (Device* d : allowed)
    if (DeviceMatches(*d, n->device)) out->push_back(d);
  if (!out->empty()) return nullptr;
  if (policy == WEFT_PLACEMENT_SOFT) {
    *out = allowed;
    if (note)
      *note = "soft fallback: '" + n->device +
              "' is not among the session's devices; ";
    return nullptr;
  }
  return Errorf(WEFT_INVALID_ARGUMENT,
                "node '%s' (%s) is constrained to '%s', which matches no "
                "device this session may use (%s), and placement is strict",
                n->name.c_str(), n->op_type.c_str(), n->device.c_str(),
                Names(allowed).c_str());
}

// Puts a graph constant on `device` in a buffer the plan owns, marked as
// state so that a fetch never hands it out for writing.
weft_status* PrepareConst(const weft_node* n, Device* device,
                          TensorValue* out) {
  const TensorValue& src = FindAttr(n->attrs, "value")->tensor;
  out->dtype = src.dtype;
  out->dims = src.dims;
  out->offset = 0;
  size_t bytes = src.byte_size();
  WEFT_RETURN_IF_ERROR(device->Allocate(bytes, &out->buffer));
  if (bytes == 0) return nullptr;
  out->buffer->is_state = true;
  if (device->host_memory()) {
    std::memcpy(out->buffer->handle, src.host_data(), bytes);
    return nullptr;
  }
  return Annotate(device->api->copy_host_to_device(
                      device->handle, nullptr, src.host_data(),
                      out->buffer->handle, 0, bytes),
                  "copying constant '" + n->name + "' to " + device->name);
}

// An int32 scalar `value` on `device`, in a buffer the plan owns.
weft_status* ScalarOn(Device* device, int32_t value, TensorValue* out) {
  out->dtype = WEFT_INT32;
  out->dims = Dims();
  out->offset = 0;
  WEFT_RETURN_IF_ERROR(device->Allocate(sizeof value, &out->buffer));
  out->buffer->is_state = true;
  if (device->host_memory()) {
    std::memcpy(out->buffer->handle, &value, sizeof value);
    return nullptr;
  }
  return device->api->copy_host_to_device(device->handle, nullptr, &value,
                                          out->buffer->handle, 0,
                                          sizeof value);
}

// Inputs that name a variable to write are references, not reads, so no
// data edge (else initializing a variable would first read it).
bool IsRefInput(const weft_node* n, size_t i) { return n->def->IsRefInput(i); }

// Can a kernel on `dst` read memory of `src` (null: host memory) directly?
bool SameMemory(const Device* src, const Device* dst) {
  if (src == dst) return true;
  bool src_host = src == nullptr || src->host_memory();
  return src_host && dst->host_memory();
}

std::string Us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

class Planner {
 public:
  Planner(const PlanRequest& req, Plan* plan)
      : req_(req), opts_(*req.options), plan_(plan),
        allowed_(*req.devices) {}

  weft_status* Build();

 private:
  const weft_node* Rep(const weft_node* n) const {
    auto it = cse_.replaced.find(n);
    return it == cse_.replaced.end() ? n : it->second;
  }
  bool IsFed(const weft_node* n, int32_t i) const {
    return fed_.count(OutputKey{n, i}) != 0;
  }
  void Prune();
  void TopologicalOrder();
  weft_status* AnalyzeFrames();
  weft_status* CheckFrameEdges();
  weft_status* LocalizeFrames();
  std::string FrameName(int32_t f) const;
  weft_status* PlaceVariable(const weft_node* var, Device** out,
                             std::string* reason);
  weft_status* PlaceKernel(int32_t i);
  weft_status* PlaceUpdate(PlanNode* p);
  double InputTransferUs(const weft_node* n, Device* d);
  weft_status* Place();
  weft_status* Partition();
  int32_t NewNode(PlanNode p);
  void AddSlot(int32_t producer, Device* device, weft_dtype dtype,
               const ShapeInfo& shape, std::string name);
  // A Send or Recv node reading `in_slot`, with the Cast that narrows or
  // widens a lossy value when `cast` is set; returns its output slot.
  int32_t AddTransferNode(ExecKind kind, const weft_node* node, Device* d,
                          int32_t transfer, int32_t in_slot,
                          const KernelReg* cast_kernel, const weft_node* cast,
                          weft_dtype dtype, const ShapeInfo& shape,
                          const std::string& value);
  weft_status* ConstOn(int32_t const_node, Device* d, int32_t* slot);
  // `shape` and `value` are taken by value: callers pass elements of the
  // slot vectors, which adding the Send and Recv slots reallocates.
  int32_t TransferTo(int32_t slot, Device* src, weft_dtype dtype,
                     ShapeInfo shape, std::string value, Device* dst);
  const weft_node* CastNode(const std::string& name, weft_dtype from,
                            weft_dtype to, const ShapeInfo& shape);
  void Link();
  void ScheduleForMemory();
  bool Reaches(int32_t from, int32_t to) const;

  const PlanRequest& req_;
  const PlanOptions& opts_;
  Plan* plan_;
  const std::vector<Device*>& allowed_;

  std::unordered_map<OutputKey, int32_t, OutputKeyHash> fed_;
  CseResult cse_;
  std::unordered_map<const weft_node*, int32_t> index_;
  std::vector<const weft_node*> order_;  // pruned graph nodes
  std::vector<int32_t> topo_;            // indexes into order_
  std::vector<int32_t> exec_frame_, out_frame_;  // per order_ node
  // Slot of each output of each pruned node, and of each feed.
  std::vector<int32_t> slot_producer_;   // plan node; -1 for feeds
  std::vector<Device*> slot_device_;     // where the slot's value lives
  std::vector<weft_dtype> slot_dtype_;
  std::vector<ShapeInfo> slot_shape_;
  std::vector<std::string> slot_name_;
  std::vector<int32_t> slot_frame_;
  std::map<std::pair<int32_t, Device*>, int32_t> const_copies_;
  std::map<std::pair<int32_t, Device*>, int32_t> recv_slot_;
};

void Planner::Prune() {
  index_.clear();
  order_.clear();
  std::vector<const weft_node*> stack;
  auto want = [&](const weft_node* n) {
    n = Rep(n);
    if (index_.emplace(n, static_cast<int32_t>(order_.size())).second) {
      order_.push_back(n);
      stack.push_back(n);
    }
  };
  for (const weft_output& f : *req_.fetches)
    if (!IsFed(f.node, f.index)) want(f.node);
  for (const weft_node* t : *req_.targets) want(t);
  while (!stack.empty()) {
    const weft_node* n = stack.back();
    stack.pop_back();
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const weft_output& in = n->inputs[i];
      if (!IsRefInput(n, i) && !IsFed(in.node, in.index)) want(in.node);
    }
    for (const weft_node* c : n->control_inputs) want(c);
    for (const weft_node* k : n->keep_alive) want(k);
    // A loop Merge needs the values its back edges bring.
    if (n->def->exec == ExecKind::kMerge)
      for (const weft_node* b : n->graph->BackEdges(n)) want(b);
  }
}

std::string Planner::FrameName(int32_t f) const {
  return f == 0 ? std::string("the root frame")
                : "frame '" + plan_->frames[f].name + "'";
}

// Each node's frame, from its inputs': an Enter's output is in the child
// frame it names (one per parent frame and name), an Exit's in the parent;
// everything else stays in its inputs' frame.  Values cross frames only
// through Enter and Exit.
weft_status* Planner::AnalyzeFrames() {
  const size_t n = order_.size();
  exec_frame_.assign(n, 0);
  out_frame_.assign(n, 0);
  plan_->control_flow = false;
  for (const weft_node* node : order_)
    if (IsControlFlow(node->def->exec)) plan_->control_flow = true;
  if (!plan_->control_flow) return nullptr;
  plan_->frames.assign(1, PlanFrame{});
  std::map<std::pair<int32_t, std::string>, int32_t> by_name;
  for (int32_t i : topo_) {
    const weft_node* node = order_[i];
    int32_t f = -1;
    const weft_node* first = nullptr;
    auto see = [&](const weft_node* from, int32_t frame) -> weft_status* {
      if (f < 0) {
        f = frame;
        first = from;
        return nullptr;
      }
      if (f == frame) return nullptr;
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s) reads '%s' from %s and '%s' from %s: a "
                    "value from outside a loop must come in through an "
                    "Enter, and leave through an Exit",
                    node->name.c_str(), node->op_type.c_str(),
                    first->name.c_str(), FrameName(f).c_str(),
                    from->name.c_str(), FrameName(frame).c_str());
    };
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      if (IsRefInput(node, k)) continue;
      const weft_output& in = node->inputs[k];
      int32_t frame =
          IsFed(in.node, in.index) ? 0 : out_frame_[index_.at(Rep(in.node))];
      WEFT_RETURN_IF_ERROR(see(in.node, frame));
    }
    for (const weft_node* c : node->control_inputs)
      WEFT_RETURN_IF_ERROR(see(c, out_frame_[index_.at(Rep(c))]));
    if (f < 0) f = 0;
    exec_frame_[i] = out_frame_[i] = f;
    if (node->def->exec == ExecKind::kEnter) {
      const std::string& name = FindAttr(node->attrs, "frame_name")->s;
      auto [it, added] = by_name.emplace(std::make_pair(f, name),
                                         static_cast<int32_t>(
                                             plan_->frames.size()));
      if (added) {
        PlanFrame frame;
        frame.name = name;
        frame.parent = f;
        frame.parallel_iterations = static_cast<int32_t>(
            FindAttr(node->attrs, "parallel_iterations")->i);
        plan_->frames.push_back(std::move(frame));
      }
      out_frame_[i] = it->second;
      plan_->frames[it->second].num_enters++;
    } else if (node->def->exec == ExecKind::kExit) {
      if (f == 0)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (Exit) is not inside a loop frame: its "
                      "input '%s' is in the root frame", node->name.c_str(),
                      node->inputs[0].node->name.c_str());
      out_frame_[i] = plan_->frames[f].parent;
      plan_->frames[f].exits.push_back(i);
    }
  }
  return CheckFrameEdges();
}

// What frames alone do not say: a back edge stays in its loop's frame, a
// loop-variable Enter feeds only its Merge (its value exists in iteration 0
// alone, so any other reader would wait forever in later iterations), and
// a loop-invariant one feeds no Merge (which would then fire twice).
weft_status* Planner::CheckFrameEdges() {
  for (size_t i = 0; i < order_.size(); ++i) {
    const weft_node* node = order_[i];
    if (node->def->exec == ExecKind::kNextIteration) {
      const weft_node* merge =
          node->graph->Find(FindAttr(node->attrs, "merge")->s);
      int32_t m = index_.at(Rep(merge));
      if (exec_frame_[m] != exec_frame_[i] || exec_frame_[i] == 0)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (NextIteration) is in %s but its Merge "
                      "'%s' is in %s: a back edge must stay inside one loop "
                      "frame", node->name.c_str(),
                      FrameName(exec_frame_[i]).c_str(), merge->name.c_str(),
                      FrameName(exec_frame_[m]).c_str());
    }
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const weft_output& in = node->inputs[k];
      if (IsRefInput(node, k) || IsFed(in.node, in.index)) continue;
      const weft_node* src = Rep(in.node);
      if (src->def->exec != ExecKind::kEnter) continue;
      bool invariant = FindAttr(src->attrs, "is_constant")->i != 0;
      bool merge = node->def->exec == ExecKind::kMerge;
      if (!invariant && !merge)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (%s) reads Enter '%s', which is not "
                      "is_constant: its value exists only in the first "
                      "iteration, so only a Merge may read it (mark "
                      "loop-invariant values is_constant)",
                      node->name.c_str(), node->op_type.c_str(),
                      src->name.c_str());
      if (invariant && merge)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "Merge '%s' reads Enter '%s', which is is_constant: a "
                      "loop variable's Enter must not be", node->name.c_str(),
                      src->name.c_str());
    }
  }
  return nullptr;
}

void Planner::TopologicalOrder() {
  const size_t n = order_.size();
  std::vector<int32_t> pending(n, 0);
  std::vector<std::vector<int32_t>> succ(n);
  for (size_t i = 0; i < n; ++i) {
    const weft_node* node = order_[i];
    auto edge = [&](const weft_node* from) {
      succ[index_.at(Rep(from))].push_back(static_cast<int32_t>(i));
      pending[i]++;
    };
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      const weft_output& in = node->inputs[k];
      if (!IsRefInput(node, k) && !IsFed(in.node, in.index)) edge(in.node);
    }
    for (const weft_node* c : node->control_inputs) edge(c);
  }
  topo_.clear();
  for (size_t i = n; i-- > 0;)
    if (pending[i] == 0) topo_.push_back(static_cast<int32_t>(i));
  for (size_t h = 0; h < topo_.size(); ++h)
    for (int32_t s : succ[topo_[h]])
      if (--pending[s] == 0) topo_.push_back(s);
}

weft_status* Planner::PlaceVariable(const weft_node* var, Device** out,
                                    std::string* reason) {
  return VariableDevice(var, req_.variables->Get(var), allowed_,
                        opts_.placement, out, reason);
}

double Planner::InputTransferUs(const weft_node* n, Device* d) {
  double us = 0;
  for (size_t k = 0; k < n->inputs.size(); ++k) {
    if (IsRefInput(n, k)) continue;
    const weft_output& in = n->inputs[k];
    uint64_t bytes = StaticBytes(in.node, in.index);
    if (IsFed(in.node, in.index)) {
      us += req_.costs->TransferUs(bytes, nullptr, d);
      continue;
    }
    const PlanNode& p = plan_->nodes[index_.at(Rep(in.node))];
    // Constants follow their consumers: they cost nothing to move.
    if (p.device == nullptr || p.kind == ExecKind::kConst) continue;
    us += req_.costs->TransferUs(bytes, p.device, d);
  }
  return us;
}

weft_status* Planner::PlaceKernel(int32_t i) {
  PlanNode& p = plan_->nodes[i];
  const weft_node* n = p.node;
  std::vector<Device*> cands;
  std::string why;
  WEFT_RETURN_IF_ERROR(Candidates(n, allowed_, opts_.placement, &cands, &why));
  bool constrained = !n->device.empty() && why.empty();
  std::vector<std::pair<Device*, const KernelReg*>> options;
  for (Device* d : cands)
    if (const KernelReg* k =
            Registry::Get().FindKernel(n->op_type, d->type, n->attrs))
      options.emplace_back(d, k);
  if (options.empty() && constrained) {
    if (opts_.placement == WEFT_PLACEMENT_STRICT)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s': no kernel for op %s with %s on %s, where "
                    "it is constrained ('%s'), and placement is strict "
                    "(kernels: %s)", n->name.c_str(), n->op_type.c_str(),
                    TypeAttrs(n).c_str(), Names(cands).c_str(),
                    n->device.c_str(),
                    KernelList(n->op_type).c_str());
    for (Device* d : allowed_)
      if (const KernelReg* k =
              Registry::Get().FindKernel(n->op_type, d->type, n->attrs))
        options.emplace_back(d, k);
    why = "soft fallback: no " + n->op_type + " kernel on " +
          Names(cands) + "; ";
    cands = allowed_;  // what the search covered, for the error below
  }
  if (options.empty())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': no kernel for op %s with %s on %s (kernels: "
                  "%s)", n->name.c_str(), n->op_type.c_str(),
                  TypeAttrs(n).c_str(), cands.size() == 1 ? cands[0]->name.c_str()
                                    : "any allowed device",
                  KernelList(n->op_type).c_str());
  size_t best = 0;
  if (options.size() == 1) {
    why += constrained && why.empty()
               ? "constraint '" + n->device + "'"
               : (allowed_.size() == 1 ? "the session's only device"
                                       : "the only device with a kernel");
  } else {
    std::vector<double> cost(options.size());
    for (size_t k = 0; k < options.size(); ++k) {
      Device* d = options[k].first;
      cost[k] = req_.costs->ComputeUs(n, d) + InputTransferUs(n, d);
      if (cost[k] < cost[best]) best = k;  // ties: the preferred device
    }
    why += "cost " + Us(cost[best]) + " here";
    for (size_t k = 0; k < options.size(); ++k)
      if (k != best) why += ", " + Us(cost[k]) + " on " + options[k].first->name;
  }
  p.device = options[best].first;
  p.kernel = options[best].second;
  p.reason = std::move(why);
  return nullptr;
}

// An update op runs where its variables are: they must all be on one
// device (an optimizer's slots are made beside their variable).
weft_status* Planner::PlaceUpdate(PlanNode* p) {
  const weft_node* n = p->node;
  for (int32_t r = 0; r < n->def->num_refs; ++r) {
    const weft_node* var = n->inputs[r].node;
    Device* d = nullptr;
    WEFT_RETURN_IF_ERROR(PlaceVariable(var, &d, nullptr));
    if (r == 0) {
      p->device = d;
    } else if (d != p->device) {
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s) updates '%s' on %s and '%s' on %s: the "
                    "variables one update writes must share a device",
                    n->name.c_str(), n->op_type.c_str(),
                    n->inputs[0].node->name.c_str(), p->device->name.c_str(),
                    var->name.c_str(), d->name.c_str());
    }
    p->ref_variables.push_back(req_.variables->Get(var));
  }
  p->lock_order = p->ref_variables;
  std::sort(p->lock_order.begin(), p->lock_order.end());
  p->lock_order.erase(std::unique(p->lock_order.begin(), p->lock_order.end()),
                      p->lock_order.end());
  p->reason = "state: with its variable '" + n->inputs[0].node->name + "'";
  p->kernel = Registry::Get().FindKernel(n->op_type, p->device->type,
                                         n->attrs);
  if (p->kernel == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': no kernel for op %s with %s on %s, where "
                  "its variable '%s' lives (kernels: %s)", n->name.c_str(),
                  n->op_type.c_str(), TypeAttrs(n).c_str(),
                  p->device->name.c_str(), n->inputs[0].node->name.c_str(),
                  KernelList(n->op_type).c_str());
  return nullptr;
}

weft_status* Planner::Place() {
  plan_->nodes.resize(order_.size());
  for (size_t i = 0; i < order_.size(); ++i) {
    PlanNode& p = plan_->nodes[i];
    p.node = order_[i];
    p.kind = p.node->def->exec;
    if (p.kind == ExecKind::kPlaceholder)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "placeholder '%s' (%s %s) must be fed: the fetches or "
                    "targets need it", p.node->name.c_str(),
                    weft_dtype_name(p.node->output_dtypes[0]),
                    p.node->output_shapes[0].ToString().c_str());
    if (p.kind == ExecKind::kVariable) {
      WEFT_RETURN_IF_ERROR(PlaceVariable(p.node, &p.device, &p.reason));
      p.variable = req_.variables->Get(p.node);
    }
  }
  // Kernels in dependency order, so each sees where its inputs are.
  for (int32_t i : topo_) {
    PlanNode& p = plan_->nodes[i];
    if (p.kind == ExecKind::kForward || IsControlFlow(p.kind) ||
        p.kind == ExecKind::kRuntime) {
      // Where the value already is, so forwarding never moves it.
      const weft_node* n = p.node;
      for (size_t k = 0; k < n->inputs.size() && p.device == nullptr; ++k) {
        const weft_output& in = n->inputs[k];
        if (!IsRefInput(n, k) && !IsFed(in.node, in.index))
          p.device = plan_->nodes[index_.at(Rep(in.node))].device;
      }
      if (p.device != nullptr) p.reason = "with its input";
      continue;
    }
    if (p.kind != ExecKind::kKernel) continue;
    WEFT_RETURN_IF_ERROR(PlaceKernel(i));
    if (p.node->def->stateful)
      p.run_counter = req_.variables->RunCounter(p.node);
  }
  for (PlanNode& p : plan_->nodes) {
    if (p.kind == ExecKind::kUpdate) {
      WEFT_RETURN_IF_ERROR(PlaceUpdate(&p));
      continue;
    }
    if (p.kind != ExecKind::kAssign && p.kind != ExecKind::kAssignAdd)
      continue;
    // State stays with its variable, wherever that is.
    const weft_node* var = p.node->inputs[0].node;
    WEFT_RETURN_IF_ERROR(PlaceVariable(var, &p.device, nullptr));
    p.reason = "state: with its variable '" + var->name + "'";
    p.variable = req_.variables->Get(var);
    if (p.kind == ExecKind::kAssignAdd) {
      // AssignAdd's T is the Add it runs.
      p.kernel = Registry::Get().FindKernel("Add", p.device->type,
                                            p.node->attrs);
      if (p.kernel == nullptr)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (AssignAdd): %s has no Add kernel for %s",
                      p.node->name.c_str(), p.device->name.c_str(),
                      weft_dtype_name(p.node->output_dtypes[0]));
    }
  }
  // Constants and NoOps go where their first consumer is, so a constant is
  // copied to a device once, at plan time, rather than on every run.
  std::vector<std::vector<int32_t>> consumers(order_.size());
  for (size_t i = 0; i < order_.size(); ++i)
    for (size_t k = 0; k < order_[i]->inputs.size(); ++k) {
      const weft_output& in = order_[i]->inputs[k];
      if (IsRefInput(order_[i], k) || IsFed(in.node, in.index)) continue;
      consumers[index_.at(Rep(in.node))].push_back(static_cast<int32_t>(i));
    }
  std::vector<Device*> cands;
  std::string note;
  for (size_t i = 0; i < order_.size(); ++i) {
    PlanNode& p = plan_->nodes[i];
    if (p.device != nullptr) continue;
    WEFT_RETURN_IF_ERROR(
        Candidates(p.node, allowed_, opts_.placement, &cands, &note));
    p.device = cands[0];
    bool constrained = !p.node->device.empty() && note.empty();
    p.reason = constrained ? "constraint '" + p.node->device + "'"
                           : note + "the session's first device";
    if (!constrained)
      for (int32_t c : consumers[i])
        if (Device* d = plan_->nodes[c].device) {
          p.device = d;
          p.reason =
              note + "with its consumer '" + plan_->nodes[c].node->name + "'";
          break;
        }
    if (p.kind == ExecKind::kConst)
      WEFT_RETURN_IF_ERROR(PrepareConst(p.node, p.device, &p.const_value));
  }
  // A back edge never crosses devices: NextIteration sits with its Merge.
  for (size_t i = 0; i < order_.size(); ++i) {
    PlanNode& p = plan_->nodes[i];
    p.frame = exec_frame_[i];
    p.out_frame = out_frame_[i];
    if (p.kind == ExecKind::kMerge) {
      size_t n = p.node->inputs.size() + p.node->graph->BackEdges(p.node).size();
      p.merge_indices.resize(n);
      for (size_t k = 0; k < n; ++k)
        WEFT_RETURN_IF_ERROR(ScalarOn(p.device, static_cast<int32_t>(k),
                                      &p.merge_indices[k]));
    }
    if (p.kind != ExecKind::kNextIteration) continue;
    const weft_node* merge =
        p.node->graph->Find(FindAttr(p.node->attrs, "merge")->s);
    p.device = plan_->nodes[index_.at(Rep(merge))].device;
    p.reason = "with its Merge '" + merge->name + "'";
  }
  return nullptr;
}

int32_t Planner::NewNode(PlanNode p) {
  int32_t id = static_cast<int32_t>(plan_->nodes.size());
  p.output_base = static_cast<int32_t>(slot_producer_.size());
  plan_->nodes.push_back(std::move(p));
  return id;
}

void Planner::AddSlot(int32_t producer, Device* device, weft_dtype dtype,
                      const ShapeInfo& shape, std::string name) {
  slot_producer_.push_back(producer);
  slot_device_.push_back(device);
  slot_dtype_.push_back(dtype);
  slot_shape_.push_back(shape);
  slot_name_.push_back(std::move(name));
  slot_frame_.push_back(producer >= 0 ? plan_->nodes[producer].out_frame : 0);
}

int32_t Planner::AddTransferNode(ExecKind kind, const weft_node* node,
                                 Device* d, int32_t transfer, int32_t in_slot,
                                 const KernelReg* cast_kernel,
                                 const weft_node* cast, weft_dtype dtype,
                                 const ShapeInfo& shape,
                                 const std::string& value) {
  PlanNode p;
  p.node = node;
  p.kind = kind;
  p.device = d;
  p.transfer = transfer;
  p.input_slots = {in_slot};
  p.num_outputs = 1;
  p.frame = p.out_frame = slot_frame_[in_slot];
  if (cast != nullptr) {
    p.kernel = cast_kernel;
    p.cast_node = cast;
  }
  int32_t id = NewNode(std::move(p));
  AddSlot(id, d, dtype, shape, value);
  return plan_->nodes[id].output_base;
}

// A copy of constant node `c` on device `d`, made once at plan time.
weft_status* Planner::ConstOn(int32_t c, Device* d, int32_t* slot) {
  auto key = std::make_pair(c, d);
  auto it = const_copies_.find(key);
  if (it != const_copies_.end()) {
    *slot = it->second;
    return nullptr;
  }
  PlanNode copy;
  copy.node = plan_->nodes[c].node;
  copy.kind = ExecKind::kConst;
  copy.device = d;
  copy.num_outputs = 1;
  copy.reason = "copy for consumers on " + d->name;
  copy.frame = copy.out_frame = plan_->nodes[c].frame;
  WEFT_RETURN_IF_ERROR(PrepareConst(copy.node, d, &copy.const_value));
  const weft_node* n = copy.node;
  int32_t id = NewNode(std::move(copy));
  AddSlot(id, d, n->output_dtypes[0], n->output_shapes[0], n->name + ":0");
  *slot = plan_->nodes[id].output_base;
  const_copies_.emplace(key, *slot);
  return nullptr;
}

const weft_node* Planner::CastNode(const std::string& name, weft_dtype from,
                                   weft_dtype to, const ShapeInfo& shape) {
  auto n = std::make_unique<weft_node>();
  n->name = name;
  n->op_type = "Cast";
  n->def = OpRegistry::Global().Find("Cast");
  AttrValue src, dst;
  src.type = dst.type = AttrType::kDtype;
  src.i = from;
  dst.i = to;
  SetAttr(&n->attrs, "SrcT", src);
  SetAttr(&n->attrs, "DstT", dst);
  n->output_dtypes = {to};
  n->output_shapes = {shape};
  plan_->synthetic.push_back(std::move(n));
  return plan_->synthetic.back().get();
}

// The slot holding `slot`'s value on `dst`, adding a Send/Recv pair the
// first time a value goes to a device.
int32_t Planner::TransferTo(int32_t slot, Device* src, weft_dtype dtype,
                            ShapeInfo shape, std::string value, Device* dst) {
  auto key = std::make_pair(slot, dst);
  auto it = recv_slot_.find(key);
  if (it != recv_slot_.end()) return it->second;

  Transfer t;
  t.value = value;
  t.src = src;
  t.dst = dst;
  t.wire_dtype = dtype;
  // Lossy transfers: float32 values narrowed on the sending device and
  // widened on the receiving one, when both have the Cast kernels.  Feeds
  // come from host memory that no device kernel narrows: they go exact.
  const KernelReg* narrow = nullptr;
  const KernelReg* widen = nullptr;
  if (opts_.transfer_precision != WEFT_TRANSFER_EXACT &&
      dtype == WEFT_FLOAT32 && src != nullptr) {
    weft_dtype wire = opts_.transfer_precision == WEFT_TRANSFER_FLOAT16
                          ? WEFT_FLOAT16
                          : WEFT_BFLOAT16;
    narrow = Registry::Get().FindKernel("Cast", src->type,
                                        CastAttrs(WEFT_FLOAT32, wire));
    widen = Registry::Get().FindKernel("Cast", dst->type,
                                       CastAttrs(wire, WEFT_FLOAT32));
    if (narrow && widen) t.wire_dtype = wire;
  }
  if (shape.fully_known()) {
    int64_t n = 1;
    for (int64_t d : shape.dims) n *= d;
    t.bytes = static_cast<uint64_t>(n) * weft_dtype_size(t.wire_dtype);
  }
  int32_t transfer = static_cast<int32_t>(plan_->transfers.size());
  plan_->transfers.push_back(t);

  // The value's producer names the pair in errors (for a feed: the node
  // fed).
  const weft_node* producer = nullptr;
  if (slot_producer_[slot] >= 0) {
    producer = plan_->nodes[slot_producer_[slot]].node;
  } else {
    for (size_t f = 0; f < plan_->feed_slots.size(); ++f)
      if (plan_->feed_slots[f] == slot) producer = (*req_.feeds)[f].node;
  }
  bool lossy = t.wire_dtype != dtype;
  int32_t wire_slot = slot;
  if (src != nullptr)
    wire_slot = AddTransferNode(
        ExecKind::kSend, producer, src, transfer, slot, narrow,
        lossy ? CastNode(value + "/_narrow", dtype, t.wire_dtype, shape)
              : nullptr,
        t.wire_dtype, shape, value);
  int32_t out = AddTransferNode(
      ExecKind::kRecv, producer, dst, transfer, wire_slot, widen,
      lossy ? CastNode(value + "/_widen", t.wire_dtype, dtype, shape)
            : nullptr,
      dtype, shape, value);
  recv_slot_.emplace(key, out);
  return out;
}

weft_status* Planner::Partition() {
  // Slots: every output of every graph node in the plan, then the feeds.
  const int32_t n_graph = static_cast<int32_t>(plan_->nodes.size());
  for (int32_t i = 0; i < n_graph; ++i) {
    PlanNode& p = plan_->nodes[i];
    p.output_base = static_cast<int32_t>(slot_producer_.size());
    p.num_outputs = static_cast<int32_t>(p.node->output_dtypes.size());
    for (int32_t o = 0; o < p.num_outputs; ++o)
      AddSlot(i, p.device, p.node->output_dtypes[o], p.node->output_shapes[o],
              p.node->name + ":" + std::to_string(o));
  }
  plan_->feed_slots.resize(req_.feeds->size());
  for (size_t i = 0; i < req_.feeds->size(); ++i) {
    const weft_output& f = (*req_.feeds)[i];
    plan_->feed_slots[i] = static_cast<int32_t>(slot_producer_.size());
    AddSlot(-1, nullptr, f.node->output_dtypes[f.index],
            f.node->output_shapes[f.index],
            f.node->name + ":" + std::to_string(f.index));
  }
  auto slot_of = [&](const weft_output& o) -> int32_t {
    auto f = fed_.find(OutputKey{o.node, o.index});
    if (f != fed_.end()) return plan_->feed_slots[f->second];
    return plan_->nodes[index_.at(Rep(o.node))].output_base + o.index;
  };
  // Inputs: where a value is in memory the node's device cannot read, the
  // node reads it from a Recv on its own device.
  for (int32_t i = 0; i < n_graph; ++i) {
    const weft_node* n = plan_->nodes[i].node;
    Device* dst = plan_->nodes[i].device;
    std::vector<int32_t> slots;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      if (IsRefInput(n, k)) {
        slots.push_back(-1);  // never read
        continue;
      }
      int32_t s = slot_of(n->inputs[k]);
      Device* src = slot_device_[s];
      if (!SameMemory(src, dst)) {
        int32_t producer = slot_producer_[s];
        if (producer >= 0 && plan_->nodes[producer].kind == ExecKind::kConst)
          WEFT_RETURN_IF_ERROR(ConstOn(producer, dst, &s));
        else
          s = TransferTo(s, src, slot_dtype_[s], slot_shape_[s],
                         slot_name_[s], dst);
      }
      slots.push_back(s);
    }
    if (n->def->exec == ExecKind::kMerge)
      for (const weft_node* b : n->graph->BackEdges(n)) {
        auto it = index_.find(Rep(b));
        if (it == index_.end()) continue;
        slots.push_back(plan_->nodes[it->second].output_base);
      }
    plan_->nodes[i].input_slots = std::move(slots);
  }
  for (const weft_output& f : *req_.fetches) {
    int32_t s = slot_of(f);
    if (slot_frame_[s] != 0)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "fetch '%s:%d' is a value inside loop %s, which has one "
                    "value per iteration: fetch what the loop's Exit gives",
                    f.node->name.c_str(), f.index,
                    FrameName(slot_frame_[s]).c_str());
    plan_->fetch_slots.push_back(s);
  }
  plan_->num_slots = static_cast<int32_t>(slot_producer_.size());
  return nullptr;
}

// Dependency edges: data (through slots) and control.
void Planner::Link() {
  plan_->slot_uses.assign(plan_->num_slots, 0);
  const int32_t n_graph = static_cast<int32_t>(order_.size());
  for (size_t i = 0; i < plan_->nodes.size(); ++i) {
    PlanNode& p = plan_->nodes[i];
    for (int32_t s : p.input_slots) {
      if (s < 0) continue;
      plan_->slot_uses[s]++;
      int32_t producer = slot_producer_[s];
      if (producer >= 0) {
        plan_->nodes[producer].successors.push_back(static_cast<int32_t>(i));
        // A back edge arrives in the iterations after the first.
        if (plan_->nodes[producer].kind == ExecKind::kNextIteration)
          p.pending_next++;
        else
          p.pending++;
      }
    }
    // Constant copies keep the original's control inputs: in a loop, those
    // make the copy run in every iteration of the frame.
    if ((static_cast<int32_t>(i) < n_graph || p.kind == ExecKind::kConst) &&
        p.kind != ExecKind::kSend && p.kind != ExecKind::kRecv)
      for (const weft_node* c : p.node->control_inputs) {
        plan_->nodes[index_.at(Rep(c))].successors.push_back(
            static_cast<int32_t>(i));
        p.pending++;
      }
    if (p.kind != ExecKind::kMerge) p.pending_next = p.pending;
  }
  for (int32_t s : plan_->fetch_slots) plan_->slot_uses[s]++;
}

// Numbers nodes and slots per frame, the indexes of per-iteration state.
weft_status* Planner::LocalizeFrames() {
  std::vector<PlanFrame>& frames = plan_->frames;
  for (PlanFrame& f : frames) f.num_nodes = f.num_slots = 0;
  std::vector<int32_t> local(plan_->num_slots);
  for (int32_t s = 0; s < plan_->num_slots; ++s)
    local[s] = frames[slot_frame_[s]].num_slots++;
  for (PlanNode& p : plan_->nodes) {
    p.local = frames[p.frame].num_nodes++;
    if (p.frame != 0 && p.pending == 0 && p.kind != ExecKind::kMerge)
      return Errorf(WEFT_INTERNAL,
                    "node '%s' (%s) in %s has no inputs there, so nothing "
                    "would start it", p.node->name.c_str(),
                    p.node->op_type.c_str(), FrameName(p.frame).c_str());
    for (int32_t& s : p.input_slots) {
      if (s < 0) continue;
      if (slot_frame_[s] != p.frame)
        return Errorf(WEFT_INTERNAL,
                      "node '%s' (%s) in %s reads slot '%s' of %s",
                      p.node->name.c_str(), p.node->op_type.c_str(),
                      FrameName(p.frame).c_str(), slot_name_[s].c_str(),
                      FrameName(slot_frame_[s]).c_str());
      s = local[s];
    }
    if (p.num_outputs > 0) p.output_base = local[p.output_base];
  }
  for (int32_t& s : plan_->feed_slots) s = local[s];
  for (int32_t& s : plan_->fetch_slots) s = local[s];
  return nullptr;
}

// Is `to` reachable from `from` along successors?  Bounded: a search that
// grows too large answers "yes", which only forgoes an optimization.
bool Planner::Reaches(int32_t from, int32_t to) const {
  std::vector<int32_t> stack{from};
  std::unordered_set<int32_t> seen{from};
  size_t budget = 20000;
  while (!stack.empty()) {
    int32_t n = stack.back();
    stack.pop_back();
    if (n == to) return true;
    for (int32_t s : plan_->nodes[n].successors)
      if (seen.insert(s).second) {
        if (--budget == 0) return true;
        stack.push_back(s);
      }
  }
  return false;
}

// Memory-aware scheduling.  A node that is ready long before its consumer
// would hold its output through all the work in between; instead it waits
// (by an added dependency edge) for the last-finishing other input of its
// earliest consumer, so it runs as late as that consumer allows and its
// output lives briefly.  Only nodes with large outputs are delayed: for
// small ones the lost parallelism costs more than the memory saved.
void Planner::ScheduleForMemory() {
  constexpr uint64_t kMinBytes = 64 << 10;
  const size_t n = plan_->nodes.size();
  // Longest path from a root, in nodes (ASAP level).
  std::vector<int32_t> level(n, 0), pending(n);
  std::vector<int32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    pending[i] = plan_->nodes[i].pending;
    if (pending[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  std::vector<int32_t> topo;
  while (!ready.empty()) {
    int32_t i = ready.back();
    ready.pop_back();
    topo.push_back(i);
    for (int32_t s : plan_->nodes[i].successors) {
      level[s] = std::max(level[s], level[i] + 1);
      if (--pending[s] == 0) ready.push_back(s);
    }
  }
  // Producers of each node (data and control), from the successor lists.
  std::vector<std::vector<int32_t>> preds(n);
  for (size_t i = 0; i < n; ++i)
    for (int32_t s : plan_->nodes[i].successors)
      preds[s].push_back(static_cast<int32_t>(i));
  for (int32_t v : topo) {
    PlanNode& p = plan_->nodes[v];
    if (p.kind != ExecKind::kKernel && p.kind != ExecKind::kRecv) continue;
    if (p.successors.empty() || p.frame != 0) continue;
    uint64_t bytes = 0;
    if (p.kind == ExecKind::kRecv) {
      bytes = plan_->transfers[p.transfer].bytes;
    } else {
      for (int32_t o = 0; o < p.num_outputs; ++o)
        if (p.node->output_shapes[o].fully_known())
          bytes += StaticBytes(p.node, o);
    }
    if (bytes < kMinBytes) continue;
    int32_t consumer = p.successors[0];
    for (int32_t s : p.successors)
      if (level[s] < level[consumer]) consumer = s;
    int32_t gate = -1;
    for (int32_t q : preds[consumer])
      if (q != v && (gate < 0 || level[q] > level[gate])) gate = q;
    if (gate < 0 || level[gate] <= level[v]) continue;  // no slack
    // Within the root frame only: an edge into or out of a loop would tie
    // every iteration to one node.
    if (plan_->nodes[gate].frame != 0) continue;
    if (Reaches(v, gate)) continue;                      // would cycle
    plan_->nodes[gate].successors.push_back(v);
    p.pending++;
    preds[v].push_back(gate);
    plan_->schedule_edges++;
  }
}

weft_status* Planner::Build() {
  for (size_t i = 0; i < req_.feeds->size(); ++i) {
    const weft_output& f = (*req_.feeds)[i];
    if (!fed_.emplace(OutputKey{f.node, f.index}, static_cast<int32_t>(i))
             .second)
      return Errorf(WEFT_INVALID_ARGUMENT, "output %s:%d is fed twice",
                    f.node->name.c_str(), f.index);
  }
  Prune();
  if (opts_.optimizations & WEFT_OPTIMIZE_CSE) {
    cse_ = EliminateCommonSubexpressions(
        order_, [this](const weft_node* n, int32_t i) { return IsFed(n, i); });
    if (!cse_.replaced.empty()) Prune();
    plan_->merged = cse_.merges;
  }
  TopologicalOrder();
  WEFT_RETURN_IF_ERROR(AnalyzeFrames());
  WEFT_RETURN_IF_ERROR(Place());
  WEFT_RETURN_IF_ERROR(Partition());
  Link();
  if (opts_.optimizations & WEFT_OPTIMIZE_MEMORY_SCHEDULE) ScheduleForMemory();
  if (plan_->control_flow) WEFT_RETURN_IF_ERROR(LocalizeFrames());

  for (size_t i = 0; i < plan_->nodes.size(); ++i)
    if (plan_->nodes[i].pending == 0 && plan_->nodes[i].frame == 0)
      plan_->roots.push_back(static_cast<int32_t>(i));
  for (const PlanNode& p : plan_->nodes) {
    auto add = [](std::vector<Device*>* v, Device* d) {
      if (std::find(v->begin(), v->end(), d) == v->end()) v->push_back(d);
    };
    add(&plan_->devices, p.device);
    if (p.device->has_streams()) add(&plan_->async_devices, p.device);
  }
  return nullptr;
}

}  // namespace

weft_status* VariableDevice(const weft_node* var, VariableState* v,
                            const std::vector<Device*>& allowed,
                            int32_t placement, Device** out,
                            std::string* reason) {
  std::lock_guard<std::mutex> lock(v->mu);
  if (v->device == nullptr) {
    std::vector<Device*> cands;
    std::string note;
    WEFT_RETURN_IF_ERROR(Candidates(var, allowed, placement, &cands, &note));
    v->device = cands[0];
    v->device_reason = var->device.empty() || !note.empty()
                           ? note + "state: the session's first device"
                           : "constraint '" + var->device + "'";
  }
  *out = v->device;
  if (reason) *reason = v->device_reason;
  return nullptr;
}

weft_status* BuildPlan(const PlanRequest& req, std::shared_ptr<Plan>* out) {
  auto plan = std::make_shared<Plan>();
  Planner planner(req, plan.get());
  WEFT_RETURN_IF_ERROR(planner.Build());
  *out = std::move(plan);
  return nullptr;
}

}  // namespace weft
