// From (feeds, fetches, targets) to a plan: prune to what is needed, place
// each node on a device, find kernels, and lay out value slots.
#include "session/plan.h"

#include <cstring>
#include <map>
#include <unordered_map>

#include "base/status.h"
#include "session/device_set.h"

namespace weft {
namespace {

using OutputKey = std::pair<const weft_node*, int32_t>;

struct OutputKeyHash {
  size_t operator()(const OutputKey& k) const {
    return std::hash<const void*>()(k.first) * 31 + k.second;
  }
};

int32_t TypeAttrValue(const weft_node* n) {
  if (n->def->type_attr.empty()) return WEFT_DTYPE_INVALID;
  const AttrValue* v = FindAttr(n->attrs, n->def->type_attr.c_str());
  return v ? static_cast<int32_t>(v->i) : WEFT_DTYPE_INVALID;
}

std::string DtypeList(const std::vector<int32_t>& d) {
  std::string s;
  for (int32_t t : d)
    s += (s.empty() ? "" : ", ") +
         std::string(weft_dtype_name(static_cast<weft_dtype>(t)));
  return s.empty() ? "any" : s;
}

// The devices a node may go to: its constraint within the allowed set.
weft_status* Candidates(const weft_node* n, const std::vector<Device*>& allowed,
                        std::vector<Device*>* out) {
  out->clear();
  if (n->device.empty()) {
    *out = allowed;
    return nullptr;
  }
  for (Device* d : allowed)
    if (DeviceMatches(*d, n->device)) out->push_back(d);
  if (out->empty()) {
    std::string names;
    for (Device* d : allowed) names += (names.empty() ? "" : ", ") + d->name;
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s) is constrained to '%s', which matches no "
                  "device this session may use (%s)", n->name.c_str(),
                  n->op_type.c_str(), n->device.c_str(), names.c_str());
  }
  return nullptr;
}

weft_status* PlaceKernel(const weft_node* n, const std::vector<Device*>& cands,
                         Device** device, const KernelReg** kernel) {
  int32_t dtype = TypeAttrValue(n);
  for (Device* d : cands)
    if (const KernelReg* k =
            Registry::Get().FindKernel(n->op_type, d->type, dtype)) {
      *device = d;
      *kernel = k;
      return nullptr;
    }
  std::string have;
  for (const KernelReg* k : Registry::Get().KernelsFor(n->op_type))
    have += (have.empty() ? "" : "; ") + k->device_type + ": " +
            DtypeList(k->dtypes);
  return Errorf(WEFT_INVALID_ARGUMENT,
                "node '%s': no kernel for op %s with %s=%s on %s (kernels: "
                "%s)", n->name.c_str(), n->op_type.c_str(),
                n->def->type_attr.c_str(),
                weft_dtype_name(static_cast<weft_dtype>(dtype)),
                cands.size() == 1 ? cands[0]->name.c_str()
                                  : "any allowed device",
                have.empty() ? "none" : have.c_str());
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

// Input 0 of Assign and AssignAdd names the variable to write: a reference,
// not a read, so it is no data edge (else initializing a variable would first
// read it).
bool IsRefInput(const weft_node* n, size_t i) {
  return i == 0 && (n->def->exec == ExecKind::kAssign ||
                    n->def->exec == ExecKind::kAssignAdd);
}

}  // namespace

weft_status* BuildPlan(const PlanRequest& req, std::shared_ptr<Plan>* out) {
  auto plan = std::make_shared<Plan>();
  const std::vector<Device*>& allowed = *req.devices;

  std::unordered_map<OutputKey, int32_t, OutputKeyHash> fed;
  for (size_t i = 0; i < req.feeds->size(); ++i) {
    const weft_output& f = (*req.feeds)[i];
    if (!fed.emplace(OutputKey{f.node, f.index}, static_cast<int32_t>(i))
             .second)
      return Errorf(WEFT_INVALID_ARGUMENT, "output %s:%d is fed twice",
                    f.node->name.c_str(), f.index);
  }

  // Prune: everything the fetches and targets need, stopping at feeds.
  std::unordered_map<const weft_node*, int32_t> index;
  std::vector<const weft_node*> order;
  std::vector<const weft_node*> stack;
  auto want = [&](const weft_node* n) {
    if (index.emplace(n, static_cast<int32_t>(order.size())).second) {
      order.push_back(n);
      stack.push_back(n);
    }
  };
  for (const weft_output& f : *req.fetches)
    if (!fed.count(OutputKey{f.node, f.index})) want(f.node);
  for (const weft_node* t : *req.targets) want(t);
  while (!stack.empty()) {
    const weft_node* n = stack.back();
    stack.pop_back();
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const weft_output& in = n->inputs[i];
      if (!IsRefInput(n, i) && !fed.count(OutputKey{in.node, in.index}))
        want(in.node);
    }
    for (const weft_node* c : n->control_inputs) want(c);
  }

  plan->nodes.resize(order.size());
  std::vector<Device*> cands;
  // Kernels and state first; sources of values then follow their consumers.
  for (size_t i = 0; i < order.size(); ++i) {
    const weft_node* n = order[i];
    PlanNode& p = plan->nodes[i];
    p.node = n;
    p.kind = n->def->exec;
    switch (p.kind) {
      case ExecKind::kPlaceholder:
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "placeholder '%s' (%s %s) must be fed: the fetches or "
                      "targets need it", n->name.c_str(),
                      weft_dtype_name(n->output_dtypes[0]),
                      n->output_shapes[0].ToString().c_str());
      case ExecKind::kKernel:
        WEFT_RETURN_IF_ERROR(Candidates(n, allowed, &cands));
        WEFT_RETURN_IF_ERROR(PlaceKernel(n, cands, &p.device, &p.kernel));
        if (n->def->stateful) p.run_counter = req.variables->RunCounter(n);
        break;
      case ExecKind::kVariable:
        WEFT_RETURN_IF_ERROR(Candidates(n, allowed, &cands));
        p.device = cands[0];
        p.variable = req.variables->Get(n);
        break;
      default:
        break;
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    PlanNode& p = plan->nodes[i];
    const weft_node* n = p.node;
    if (p.kind == ExecKind::kAssign || p.kind == ExecKind::kAssignAdd) {
      // State stays with its variable, wherever that is.
      const weft_node* var = n->inputs[0].node;
      auto it = index.find(var);
      Device* vd = nullptr;
      if (it != index.end()) {
        vd = plan->nodes[it->second].device;
      } else {
        WEFT_RETURN_IF_ERROR(Candidates(var, allowed, &cands));
        vd = cands[0];
      }
      p.device = vd;
      p.variable = req.variables->Get(var);
      if (p.kind == ExecKind::kAssignAdd) {
        p.kernel = Registry::Get().FindKernel("Add", vd->type,
                                              TypeAttrValue(n));
        if (p.kernel == nullptr)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "node '%s' (AssignAdd): %s has no Add kernel for %s",
                        n->name.c_str(), vd->name.c_str(),
                        weft_dtype_name(n->output_dtypes[0]));
      }
    }
  }
  // Constants and NoOps go where their first consumer is, so a constant is
  // copied to a device once, at plan time, rather than on every run.
  std::vector<std::vector<int32_t>> consumers(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    for (size_t k = 0; k < order[i]->inputs.size(); ++k) {
      const weft_output& in = order[i]->inputs[k];
      if (IsRefInput(order[i], k)) continue;
      auto it = index.find(in.node);
      if (it != index.end() && !fed.count(OutputKey{in.node, in.index}))
        consumers[it->second].push_back(static_cast<int32_t>(i));
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    PlanNode& p = plan->nodes[i];
    if (p.device != nullptr) continue;
    WEFT_RETURN_IF_ERROR(Candidates(p.node, allowed, &cands));
    p.device = cands[0];
    if (p.node->device.empty())
      for (int32_t c : consumers[i])
        if (plan->nodes[c].device) {
          p.device = plan->nodes[c].device;
          break;
        }
    if (p.kind == ExecKind::kConst)
      WEFT_RETURN_IF_ERROR(PrepareConst(p.node, p.device, &p.const_value));
  }

  // Slots: every output of every plan node, then one per feed.
  int32_t slots = 0;
  for (PlanNode& p : plan->nodes) {
    p.output_base = slots;
    p.num_outputs = static_cast<int32_t>(p.node->output_dtypes.size());
    slots += p.num_outputs;
  }
  plan->feed_slots.resize(req.feeds->size());
  for (size_t i = 0; i < req.feeds->size(); ++i)
    plan->feed_slots[i] = slots++;
  plan->num_slots = slots;
  plan->slot_uses.assign(slots, 0);
  auto slot_of = [&](const weft_output& o) -> int32_t {
    auto f = fed.find(OutputKey{o.node, o.index});
    if (f != fed.end()) return plan->feed_slots[f->second];
    return plan->nodes[index.at(o.node)].output_base + o.index;
  };

  for (size_t i = 0; i < order.size(); ++i) {
    PlanNode& p = plan->nodes[i];
    for (size_t k = 0; k < p.node->inputs.size(); ++k) {
      const weft_output& in = p.node->inputs[k];
      if (IsRefInput(p.node, k)) {
        p.input_slots.push_back(-1);  // never read
        continue;
      }
      int32_t s = slot_of(in);
      p.input_slots.push_back(s);
      plan->slot_uses[s]++;
      if (!fed.count(OutputKey{in.node, in.index})) {
        plan->nodes[index.at(in.node)].successors.push_back(
            static_cast<int32_t>(i));
        p.pending++;
      }
    }
    for (const weft_node* c : p.node->control_inputs) {
      plan->nodes[index.at(c)].successors.push_back(static_cast<int32_t>(i));
      p.pending++;
    }
  }
  for (size_t i = 0; i < plan->nodes.size(); ++i)
    if (plan->nodes[i].pending == 0)
      plan->roots.push_back(static_cast<int32_t>(i));
  for (const weft_output& f : *req.fetches) {
    int32_t s = slot_of(f);
    plan->fetch_slots.push_back(s);
    plan->slot_uses[s]++;
  }
  for (const PlanNode& p : plan->nodes)
    if (p.device->has_streams()) {
      bool seen = false;
      for (Device* d : plan->async_devices) seen |= d == p.device;
      if (!seen) plan->async_devices.push_back(p.device);
    }
  *out = std::move(plan);
  return nullptr;
}

}  // namespace weft
