// The planner's passes, one file each (plan.cc orders them):
//   prune.cc      what the fetches need, stopping at feeds; creation order
//   cse.cc        common subexpressions (its own interface, cse.h)
//   frames.cc     control-flow frames: which loop each node runs in, and the
//                 per-frame numbering of the executor's state
//   place.cc      devices for variables, kernels and the rest
//   partition.cc  Send/Recv between memories, value slots, dependency edges
//   fuse.cc       Conv2D -> BiasAdd -> Relu into FusedConv2D,
//                 ReluGrad(MaxPoolGrad) into MaxPoolReluGrad, and
//                 ApplyGradientDescent(MatMul) into MatMulApplyGradientDescent
//   recompute.cc  values the gradient reads, computed again when it does
//   schedule.cc   delays that keep large values from living long
// Internal to runtime/session: BuildPlan (plan.h) is the interface.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "session/cse.h"
#include "session/plan.h"

namespace weft {
namespace planning {

using OutputKey = std::pair<const weft_node*, int32_t>;

struct OutputKeyHash {
  size_t operator()(const OutputKey& k) const {
    return std::hash<const void*>()(k.first) * 31 + k.second;
  }
};

// "SrcT=float32, DstT=int8": every type attribute of a node, which is what
// selects its kernel; "no type attributes" when it has none.
std::string TypeAttrs(const weft_node* n);
// The type attributes of a Cast from `src` to `dst`, to find its kernel.
AttrMap CastAttrs(weft_dtype src, weft_dtype dst);
std::string DtypeList(const std::vector<int32_t>& d);
std::string Names(const std::vector<Device*>& devices);
// The kernels registered for `op`, for error messages.
std::string KernelList(const std::string& op);
// The devices a node's constraint allows within the session's set (see
// place.cc).
weft_status* Candidates(const weft_node* n, const std::vector<Device*>& allowed,
                        int32_t policy, std::vector<Device*>* out,
                        std::string* note = nullptr);
// A graph constant on `device` in a buffer the plan owns.
weft_status* PrepareConst(const weft_node* n, Device* device,
                          TensorValue* out);
// An int32 scalar `value` on `device`, in a buffer the plan owns.
weft_status* ScalarOn(Device* device, int32_t value, TensorValue* out);
// Inputs that name a variable to write are references, not reads, so no
// data edge (else initializing a variable would first read it).
inline bool IsRefInput(const weft_node* n, size_t i) {
  return n->def->IsRefInput(i);
}
// Can a kernel on `dst` read memory of `src` (null: host memory) directly?
bool SameMemory(const Device* src, const Device* dst);
std::string Us(double us);

class Planner {
 public:
  Planner(const PlanRequest& req, Plan* plan)
      : req_(req), opts_(*req.options), plan_(plan),
        allowed_(*req.devices) {}

  weft_status* Build();

 private:
  // What stands for `n` in the plan: the node CSE kept in its place, or
  // the fused node that took over its output, or the copy of a gradient
  // node that reads recomputed values instead.
  const weft_node* Rep(const weft_node* n) const {
    auto it = cse_.replaced.find(n);
    if (it != cse_.replaced.end()) n = it->second;
    if (!fused_.empty()) {
      auto f = fused_.find(n);
      if (f != fused_.end()) n = f->second;
    }
    if (!rewired_.empty()) {
      auto r = rewired_.find(n);
      if (r != rewired_.end()) n = r->second;
    }
    return n;
  }
  bool IsFed(const weft_node* n, int32_t i) const {
    return fed_.count(OutputKey{n, i}) != 0;
  }
  void Prune();
  void Fuse();  // fuse.cc
  // MaxPool -> MaxPoolWithWindowIndex where a max-pool gradient (not in
  // `absorbed`) can read the index instead of the pool's input.
  void FuseWindowIndex(const std::unordered_set<const weft_node*>& absorbed);
  void AddFusion(const weft_node* replaced, std::unique_ptr<weft_node> fused,
                 std::string what);
  void TakeBiasGradient(const weft_node* orig, weft_node* grad,
                        const ShapeInfo& dz_shape);
  bool Recompute();  // recompute.cc; true when it changed the graph
  void TopologicalOrder();
  weft_status* AnalyzeFrames();
  weft_status* CheckEntersAfterExits();
  weft_status* CheckFrameEdges();
  weft_status* LocalizeFrames();
  std::string FrameName(int32_t f) const;
  weft_status* PlaceVariable(const weft_node* var, Device** out,
                             std::string* reason);
  weft_status* PlaceKernel(int32_t i);
  weft_status* PlaceUpdate(PlanNode* p);
  double InputTransferUs(const weft_node* n, Device* d);
  weft_status* SplitTasks();  // tasks.cc; cluster sessions only
  // Is `n` on another task of the cluster (SplitTasks dropped it)?
  bool Remote(const weft_node* n) const {
    return !remote_.empty() && remote_.count(Rep(n)) != 0;
  }
  weft_status* Place();
  weft_status* Partition();
  // The slot holding `o` here: a feed's, a local node's, or what
  // RemoteSlot makes for a value from another task.
  weft_status* SlotOf(const weft_output& o, int32_t* slot);
  // Cluster sessions (partition.cc): the host device the transfers use,
  // the slot of a value from another task, the TaskSends of this task's
  // values and control edges.
  weft_status* TaskHost(Device** out);
  weft_status* RemoteSlot(const weft_output& o, int32_t* slot);
  weft_status* RemoteToken(const weft_node* n, int32_t* node);
  weft_status* AddTaskSends();
  // A TaskSend of `value` to rank `dest` in `frame`, reading `in_slot` (a
  // value) or, when that is -1, waiting for plan node `after` (a token).
  void AddTaskSend(Device* host, const std::string& value, int32_t dest,
                   int32_t frame, int32_t in_slot, int32_t after,
                   std::string reason);
  // The control loops of the frames this task shares with others, and the
  // edges that start each iteration's TaskRecvs (tasks.cc).
  weft_status* AddControlLoops();
  // A node the planner makes, of registered op `op`, with one output
  // per entry of `dtypes` (scalars).
  weft_node* FlowNode(const char* op, const std::string& name,
                      std::vector<weft_dtype> dtypes);
  weft_node* TaskNode(const OpDef* def, const std::string& name,
                      const std::string& edge, int32_t peer,
                      const std::string& value);
  // A TaskRecv of `value` (dtype, shape as sent) from rank `from`: its
  // plan node.
  int32_t AddTaskRecv(Device* host, int32_t from, const std::string& value,
                      weft_dtype dtype, const ShapeInfo& shape, int32_t frame,
                      std::string reason);
  // A Cast of `in_slot` to `to` on `host` (lossy transfers): its slot.
  int32_t AddTaskCast(Device* host, int32_t in_slot, weft_dtype to,
                      const KernelReg* kernel, const std::string& name,
                      std::string reason);
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
  // A node the planner makes (owned by the plan), of op `def`, named
  // `name`; the caller sets its attributes and outputs.
  weft_node* SyntheticNode(const OpDef* def, const std::string& name);
  const weft_node* CastNode(const std::string& name, weft_dtype from,
                            weft_dtype to, const ShapeInfo& shape);
  void Link();
  void ScheduleForMemory();
  // Fills Plan::sequence when the plan is straight-line (schedule.cc).
  void Sequence();
  bool Reaches(int32_t from, int32_t to) const;

  const PlanRequest& req_;
  const PlanOptions& opts_;
  Plan* plan_;
  const std::vector<Device*>& allowed_;

  std::unordered_map<OutputKey, int32_t, OutputKeyHash> fed_;
  CseResult cse_;
  std::unordered_map<const weft_node*, const weft_node*> fused_;
  std::unordered_map<const weft_node*, const weft_node*> rewired_;
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
  // Cluster sessions: nodes on other tasks (and which), this task's values
  // and control edges other tasks need (by destination rank), and what
  // partitioning made for them.
  std::unordered_map<const weft_node*, int32_t> remote_;
  std::map<OutputKey, std::set<int32_t>> task_sends_;
  std::map<const weft_node*, std::set<int32_t>> token_sends_;
  std::map<OutputKey, int32_t> remote_slot_;
  std::map<const weft_node*, int32_t> remote_token_;
  // Remote nodes' frames (exec, out): where their values arrive.
  std::unordered_map<const weft_node*, std::pair<int32_t, int32_t>>
      remote_frames_;
  // A frame this task shares with other tasks: its LoopCond, the tasks
  // this one tells when its part of a frame instance has finished (those
  // with Exits of the frame), and those it hears it from (when it has
  // Exits: they deliver only once every task's part has finished).
  struct ControlFrame {
    int32_t frame = 0;
    const weft_node* loop_cond = nullptr;
    std::vector<int32_t> done_to, done_from;
  };
  std::vector<ControlFrame> control_frames_;  // parents first
  // The TaskRecv plan nodes (AddControlLoops starts those inside loops).
  std::vector<int32_t> task_recvs_;
  Device* task_host_ = nullptr;
};

}  // namespace planning
}  // namespace weft
