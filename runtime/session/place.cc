// Placement: variables once per session, kernels by constraint, kernel
// availability and cost (argmin over devices of compute time plus the time
// to bring inputs over), state with its variable, control flow with its
// data, constants and NoOps with their consumers.
#include "session/planner.h"

#include <cstdio>
#include <cstring>

#include "base/status.h"
#include "session/device_set.h"
#include "weft/session.h"

namespace weft {
namespace planning {

namespace {

// Whether kernel node `p` is called through compute_described: the kernel
// has it, the node fits the executor's arrays, and every output's dtype and
// shape (and so its size, which must not overflow) is known now.
bool DescribedCall(const PlanNode& p) {
  if (p.kind != ExecKind::kKernel || p.kernel->compute_described == nullptr ||
      p.node->inputs.size() > static_cast<size_t>(kDescribedMaxInputs) ||
      p.node->output_shapes.size() > static_cast<size_t>(kDescribedMaxOutputs))
    return false;
  for (size_t o = 0; o < p.node->output_shapes.size(); ++o) {
    const ShapeInfo& s = p.node->output_shapes[o];
    if (s.rank < 0) return false;
    for (int32_t i = 0; i < s.rank; ++i)
      if (s.dims[i] < 0) return false;
    size_t bytes = 0;
    weft_status* st = CheckedByteSize(p.node->output_dtypes[o],
                                      s.dims.data(), s.rank, &bytes);
    if (st != nullptr) {
      weft_status_destroy(st);
      return false;
    }
  }
  return true;
}

}  // namespace

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

// "; /device:OPENCL:0 cannot run float64" for each of `devices` whose
// plugin has a kernel for the node but which cannot run one of its dtypes
// (weft_device_properties.unsupported_dtypes); empty when none.
std::string DtypeRefusals(const weft_node* n,
                          const std::vector<Device*>& devices) {
  std::string s;
  for (Device* d : devices) {
    const int32_t dtype = Registry::UnsupportedDtype(d, n->attrs);
    if (dtype >= 0 && Registry::Get().FindKernel(n->op_type, d->type, n->attrs))
      s += "; " + d->name + " cannot run " +
           weft_dtype_name(static_cast<weft_dtype>(dtype));
  }
  return s;
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
                        std::string* note) {
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

std::string Us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

weft_status* Planner::PlaceVariable(const weft_node* var, Device** out,
                                    std::string* reason) {
  return VariableDevice(var, req_.variables->Get(var), allowed_,
                        opts_.placement, req_.costs, out, reason);
}

double Planner::InputTransferUs(const weft_node* n, Device* d) {
  double us = 0;
  for (size_t k = 0; k < n->inputs.size(); ++k) {
    if (IsRefInput(n, k)) continue;
    const weft_output& in = n->inputs[k];
    uint64_t bytes = StaticBytes(in.node, in.index);
    // A feed, or a value from another task, comes from host memory.
    if (IsFed(in.node, in.index) || Remote(in.node)) {
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
            Registry::Get().FindKernel(n->op_type, d, n->attrs))
      options.emplace_back(d, k);
  if (options.empty() && constrained) {
    if (opts_.placement == WEFT_PLACEMENT_STRICT)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s': no kernel for op %s with %s on %s, where "
                    "it is constrained ('%s'), and placement is strict "
                    "(kernels: %s%s)", n->name.c_str(), n->op_type.c_str(),
                    TypeAttrs(n).c_str(), Names(cands).c_str(),
                    n->device.c_str(), KernelList(n->op_type).c_str(),
                    DtypeRefusals(n, cands).c_str());
    for (Device* d : allowed_)
      if (const KernelReg* k =
              Registry::Get().FindKernel(n->op_type, d, n->attrs))
        options.emplace_back(d, k);
    std::string refused = DtypeRefusals(n, cands);
    why = "soft fallback: no " + n->op_type + " kernel on " +
          Names(cands) + (refused.empty() ? "" : " (" + refused.substr(2) + ")") +
          "; ";
    cands = allowed_;  // what the search covered, for the error below
  }
  if (options.empty())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': no kernel for op %s with %s on %s (kernels: "
                  "%s%s)", n->name.c_str(), n->op_type.c_str(),
                  TypeAttrs(n).c_str(), cands.size() == 1 ? cands[0]->name.c_str()
                                    : "any allowed device",
                  KernelList(n->op_type).c_str(),
                  DtypeRefusals(n, cands).c_str());
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
  p->kernel = Registry::Get().FindKernel(n->op_type, p->device, n->attrs);
  if (p->kernel == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': no kernel for op %s with %s on %s, where "
                  "its variable '%s' lives (kernels: %s%s)", n->name.c_str(),
                  n->op_type.c_str(), TypeAttrs(n).c_str(),
                  p->device->name.c_str(), n->inputs[0].node->name.c_str(),
                  KernelList(n->op_type).c_str(),
                  DtypeRefusals(n, {p->device}).c_str());
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
        if (!IsRefInput(n, k) && !IsFed(in.node, in.index) &&
            !Remote(in.node))
          p.device = plan_->nodes[index_.at(Rep(in.node))].device;
      }
      if (p.device != nullptr) p.reason = "with its input";
      continue;
    }
    if (p.kind != ExecKind::kKernel) continue;
    WEFT_RETURN_IF_ERROR(PlaceKernel(i));
    // An asynchronous kernel may complete later: the executors run it as
    // they run runtime ops that park (RunRuntimeOp).
    if (p.kernel->compute_async != nullptr) p.kind = ExecKind::kRuntime;
    p.described = DescribedCall(p);
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
      p.kernel = Registry::Get().FindKernel("Add", p.device, p.node->attrs);
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
      if (IsRefInput(order_[i], k) || IsFed(in.node, in.index) ||
          Remote(in.node))
        continue;
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

}  // namespace planning

namespace {

// Can every op that writes `var` run on `d`?  (Assign is the executor's
// own; AssignAdd runs an Add; an optimizer's update its kernel.)
bool WritersRunOn(const std::vector<const weft_node*>& writers, Device* d) {
  for (const weft_node* w : writers) {
    if (w->def->exec == ExecKind::kAssign) continue;
    const std::string op =
        w->def->exec == ExecKind::kAssignAdd ? "Add" : w->op_type;
    if (Registry::Get().FindKernel(op, d, w->attrs) == nullptr) return false;
  }
  return true;
}

// Where a variable that may go to several devices (`cands`, in preference
// order) should live: with its heaviest reader, on the device where that
// reader's kernel costs least by the cost model (the argmin kernels get,
// without the transfers, which depend on the variable), among the devices
// where every op writing it has a kernel.  An optimizer's slot (written by
// an update whose first variable is another) follows that variable.  The
// whole graph is read, not one plan: the first plan to place a variable
// may be its initializer's, which says nothing about its use.  Null when
// nothing decides (no reader with a kernel): the first candidate then.
Device* PreferredVariableDevice(const weft_node* var,
                                const std::vector<Device*>& cands,
                                CostModel* costs, std::string* why,
                                int depth = 0) {
  const Graph& g = *var->graph;
  std::vector<const weft_node*> readers, writers;
  const weft_node* primary = nullptr;
  for (int32_t i = 0, n = g.size(); i < n; ++i) {
    const weft_node* node = g.At(i);
    for (size_t k = 0; k < node->inputs.size(); ++k) {
      if (node->inputs[k].node != var) continue;
      if (!node->def->IsRefInput(k)) {
        readers.push_back(node);
      } else {
        writers.push_back(node);
        if (k > 0 && node->def->exec == ExecKind::kUpdate)
          primary = node->inputs[0].node;
      }
    }
  }
  if (primary != nullptr && primary != var && depth < 4) {
    Device* d = PreferredVariableDevice(primary, cands, costs, why, depth + 1);
    if (d != nullptr && WritersRunOn(writers, d)) {
      *why = "state: beside '" + primary->name + "', whose update writes it";
      return d;
    }
    return nullptr;
  }
  const weft_node* heaviest = nullptr;
  double heaviest_us = -1;
  for (const weft_node* r : readers) {
    if (r->def->exec != ExecKind::kKernel) continue;
    const double us = costs->ComputeUs(r, cands[0]);
    if (us > heaviest_us) {
      heaviest = r;
      heaviest_us = us;
    }
  }
  if (heaviest == nullptr) return nullptr;
  Device* best = nullptr;
  double best_us = 0;
  std::string others;
  for (Device* d : cands) {
    if (Registry::Get().FindKernel(heaviest->op_type, d, heaviest->attrs) ==
            nullptr ||
        !WritersRunOn(writers, d))
      continue;
    const double us = costs->ComputeUs(heaviest, d);
    if (best == nullptr || us < best_us) {
      if (best != nullptr) others += ", " + planning::Us(best_us) + " on " +
                                     best->name;
      best = d;
      best_us = us;
    } else {
      others += ", " + planning::Us(us) + " on " + d->name;
    }
  }
  if (best == nullptr) return nullptr;
  *why = "state: with its heaviest reader '" + heaviest->name + "' (" +
         heaviest->op_type + ": " + planning::Us(best_us) + " here" + others +
         ")";
  return best;
}

}  // namespace

weft_status* VariableDevice(const weft_node* var, VariableState* v,
                            const std::vector<Device*>& allowed,
                            int32_t placement, CostModel* costs, Device** out,
                            std::string* reason) {
  std::lock_guard<std::mutex> lock(v->mu);
  if (v->device == nullptr) {
    std::vector<Device*> cands;
    std::string note;
    WEFT_RETURN_IF_ERROR(planning::Candidates(var, allowed, placement, &cands, &note));
    v->device = cands[0];
    v->device_reason = var->device.empty() || !note.empty()
                           ? note + "state: the session's first device"
                           : "constraint '" + var->device + "'";
    std::string why;
    if (cands.size() > 1 && costs != nullptr)
      if (Device* d = PreferredVariableDevice(var, cands, costs, &why)) {
        v->device = d;
        v->device_reason = note + why;
      }
  }
  *out = v->device;
  if (reason) *reason = v->device_reason;
  return nullptr;
}

}  // namespace weft
