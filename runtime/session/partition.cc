// Partitioning: one Send/Recv pair per (value, destination device) for
// values that cross memories (constants are copied to each device that
// reads them once, at plan time, instead), the value slots, and the
// dependency edges the executor counts.
#include <algorithm>

#include "session/planner.h"

#include "base/status.h"
#include "distributed/cluster.h"
#include "weft/session.h"

namespace weft {
namespace planning {

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

// Can a kernel on `dst` read memory of `src` (null: host memory) directly?
bool SameMemory(const Device* src, const Device* dst) {
  if (src == dst) return true;
  bool src_host = src == nullptr || src->host_memory();
  return src_host && dst->host_memory();
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

weft_node* Planner::SyntheticNode(const OpDef* def, const std::string& name) {
  auto n = std::make_unique<weft_node>();
  n->name = name;
  n->op_type = def->name;
  n->def = def;
  plan_->synthetic.push_back(std::move(n));
  return plan_->synthetic.back().get();
}

const weft_node* Planner::CastNode(const std::string& name, weft_dtype from,
                                   weft_dtype to, const ShapeInfo& shape) {
  weft_node* n = SyntheticNode(OpRegistry::Global().Find("Cast"), name);
  AttrValue src, dst;
  src.type = dst.type = AttrType::kDtype;
  src.i = from;
  dst.i = to;
  SetAttr(&n->attrs, "SrcT", src);
  SetAttr(&n->attrs, "DstT", dst);
  n->output_dtypes = {to};
  n->output_shapes = {shape};
  return n;
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
    narrow = Registry::Get().FindKernel("Cast", src,
                                        CastAttrs(WEFT_FLOAT32, wire));
    widen = Registry::Get().FindKernel("Cast", dst,
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

weft_status* Planner::SlotOf(const weft_output& o, int32_t* slot) {
  auto f = fed_.find(OutputKey{o.node, o.index});
  if (f != fed_.end()) {
    *slot = plan_->feed_slots[f->second];
    return nullptr;
  }
  if (Remote(o.node)) return RemoteSlot(o, slot);
  *slot = plan_->nodes[index_.at(Rep(o.node))].output_base + o.index;
  return nullptr;
}

weft_status* Planner::Partition() {
  // Slots: every output of every graph node in the plan, then the feeds.
  const int32_t n_graph = static_cast<int32_t>(plan_->nodes.size());
  for (int32_t i = 0; i < n_graph; ++i) {
    PlanNode& p = plan_->nodes[i];
    p.output_base = static_cast<int32_t>(slot_producer_.size());
    p.num_outputs = static_cast<int32_t>(p.node->output_dtypes.size());
    Device* memory = p.node->def->host_outputs ? nullptr : p.device;
    for (int32_t o = 0; o < p.num_outputs; ++o)
      AddSlot(i, memory, p.node->output_dtypes[o], p.node->output_shapes[o],
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
      int32_t s = -1;
      WEFT_RETURN_IF_ERROR(SlotOf(n->inputs[k], &s));
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
    if (!remote_.empty())
      for (const weft_node* c : n->control_inputs) {
        int32_t token = -1;  // Link makes the edge from it
        if (Remote(c)) WEFT_RETURN_IF_ERROR(RemoteToken(c, &token));
      }
  }
  if (!task_sends_.empty() || !token_sends_.empty())
    WEFT_RETURN_IF_ERROR(AddTaskSends());
  WEFT_RETURN_IF_ERROR(AddControlLoops());
  // An asynchronous cluster's serving task returns no fetches: they go to
  // the running task (SplitTasks sends those made here).
  const bool fetches_here =
      req_.cluster == nullptr || req_.client < 0 ||
      req_.client == req_.cluster->local;
  for (const weft_output& f : *req_.fetches) {
    if (!fetches_here) break;
    int32_t s = -1;
    WEFT_RETURN_IF_ERROR(SlotOf(f, &s));
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
        const int32_t from = Remote(c) ? remote_token_.at(Rep(c))
                                       : index_.at(Rep(c));
        plan_->nodes[from].successors.push_back(static_cast<int32_t>(i));
        p.pending++;
      }
    for (int32_t from : p.control_preds) {
      plan_->nodes[from].successors.push_back(static_cast<int32_t>(i));
      p.pending++;
    }
    if (p.kind != ExecKind::kMerge) p.pending_next = p.pending;
  }
  for (int32_t s : plan_->fetch_slots) plan_->slot_uses[s]++;
  if (plan_->control_flow) return;
  std::vector<bool> fetched(plan_->num_slots, false);
  for (int32_t s : plan_->fetch_slots) fetched[s] = true;
  for (PlanNode& p : plan_->nodes) {
    if (p.kind != ExecKind::kKernel || p.device->has_streams()) continue;
    const int32_t n = static_cast<int32_t>(p.input_slots.size());
    for (int32_t i = 0; i < n && i < 32; ++i) {
      const int32_t s = p.input_slots[i];
      if (s < 0 || fetched[s] || slot_producer_[s] < 0) continue;
      const PlanNode& from = plan_->nodes[slot_producer_[s]];
      if (from.kind != ExecKind::kKernel || from.device != p.device ||
          std::count(p.input_slots.begin(), p.input_slots.end(), s) != 1)
        continue;
      p.forward_candidates |= 1u << i;
    }
  }
}

}  // namespace planning
}  // namespace weft
