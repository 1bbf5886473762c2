// An execution plan: the pruned, optimized, placed and partitioned subgraph
// for one (feeds, fetches, targets) signature, laid out as flat arrays so
// that a run does no graph work at all.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/registry.h"
#include "graph/graph.h"
#include "session/cost_model.h"
#include "session/thread_tuner.h"
#include "session/variables.h"

namespace weft {

// The most inputs and outputs a node may have to be called through
// compute_described (PlanNode::described): the executor describes them in
// arrays on its stack.
constexpr int kDescribedMaxInputs = 8;
constexpr int kDescribedMaxOutputs = 4;

struct PlanNode {
  const weft_node* node = nullptr;  // kSend/kRecv: the value's producer
  ExecKind kind = ExecKind::kKernel;
  Device* device = nullptr;
  // kKernel; Add for kAssignAdd; the Cast that narrows (kSend) or widens
  // (kRecv) a lossy transfer, run as `cast_node`.
  const KernelReg* kernel = nullptr;
  const weft_node* cast_node = nullptr;
  int32_t transfer = -1;  // kSend, kRecv: index in Plan::transfers
  std::vector<int32_t> input_slots;
  int32_t output_base = 0;
  int32_t num_outputs = 0;
  std::vector<int32_t> successors;  // one entry per edge into a plan node
  // Plan nodes this one waits for without reading a value (a TaskSend of
  // a control edge waits for the node the edge starts at).
  std::vector<int32_t> control_preds;
  int32_t pending = 0;              // edges from plan nodes
  TensorValue const_value;          // kConst: on `device`
  VariableState* variable = nullptr;  // kVariable, kAssign, kAssignAdd
  std::vector<VariableState*> ref_variables;  // kUpdate, in input order
  // kUpdate: the distinct ref_variables in address order, the order the
  // executor locks them in (so two updates sharing variables cannot
  // deadlock), sorted once here rather than on every run.
  std::vector<VariableState*> lock_order;
  std::atomic<uint64_t>* run_counter = nullptr;  // stateful kernels
  // kKernel: the inputs (bit i: input i) the kernel might write its output
  // over (Run::Forwardable decides at run time): values another kernel on
  // this device made, named by one input, not fetched; none in plans with
  // control flow.
  uint32_t forward_candidates = 0;
  // kKernel: the kernel has compute_described (plugin interface 1.8) and
  // every output's dtype and shape is known here, so the executor makes
  // the outputs and describes every tensor before one call.
  bool described = false;
  std::string reason;  // why the node is on `device`, for run metadata
  // Control flow.  In a plan with frames, slots are numbered per frame: a
  // node reads its inputs from its `frame`'s iteration (frame 0 is the
  // root) and writes its outputs to `out_frame`'s (Enter: the child frame;
  // Exit: the parent; otherwise `frame`).  `local` indexes the node's
  // per-iteration state in `frame`.
  int32_t frame = 0;
  int32_t out_frame = 0;
  int32_t local = 0;
  // Edges to wait for in iterations after the first: a loop Merge waits
  // for its back edge, not its Enter; other nodes wait for all edges.
  int32_t pending_next = 0;
  // kMerge: value_index values 0..n-1 on `device`, made once per plan.
  std::vector<TensorValue> merge_indices;
};

// A loop frame of the plan (frame 0 is the root, entered once per run).
struct PlanFrame {
  std::string name;
  int32_t parent = -1;
  int32_t parallel_iterations = 1;
  int32_t num_nodes = 0;  // nodes whose `frame` this is
  int32_t num_slots = 0;  // slots that live in this frame
  int32_t num_enters = 0;  // Enter nodes into this frame
  std::vector<int32_t> exits;  // Exit nodes of this frame
};

// One Send/Recv pair: a value crossing from one device (or from the host,
// for a feed) to another.
struct Transfer {
  std::string value;         // "node:index"
  Device* src = nullptr;     // null: a feed, in host memory
  Device* dst = nullptr;
  weft_dtype wire_dtype = WEFT_DTYPE_INVALID;
  uint64_t bytes = 0;        // per run; 0 when known only at run time
};

// One node of a straight-line plan (Plan::sequence): the node, the input
// slots it reads last (released after it: indices into Plan::releases),
// and which of its inputs it is the last reader of (bit i: input i; what
// Run::Forwardable learns from the run's use counts otherwise).
struct SequenceStep {
  int32_t node = 0;
  int32_t release_begin = 0;
  int32_t release_end = 0;
  uint32_t last_read = 0;
};

struct Plan {
  std::vector<PlanNode> nodes;
  // A plan in which at no point two kernels can be ready at once (a chain:
  // nothing could run in parallel) and which holds only nodes that run on
  // the calling thread to completion (kernels and constants, variable
  // reads, no-ops; no streams, transfers or runtime ops): the order its
  // nodes run in and when each slot is released, fixed here, so that a
  // plain run walks it without counting dependencies or uses
  // (Run::ExecuteSequence).  Only for plans whose devices all use host
  // memory.  Empty otherwise.
  std::vector<SequenceStep> sequence;
  std::vector<int32_t> releases;
  std::vector<int32_t> roots;
  int32_t num_slots = 0;
  std::vector<int32_t> feed_slots;   // per feed
  std::vector<int32_t> fetch_slots;  // per fetch
  // Per fetch: no later fetch names its slot, so a flat run's end moves
  // the value out of the slot (emptied next anyway) instead of copying it.
  std::vector<uint8_t> fetch_moves;
  // Reads of each slot by plan nodes, plus one per fetch (so fetched values
  // are never released early).
  std::vector<int32_t> slot_uses;
  std::vector<Device*> async_devices;  // devices with streams in the plan
  std::vector<Device*> devices;        // every device the plan uses
  std::vector<Transfer> transfers;
  std::vector<std::pair<const weft_node*, const weft_node*>> merged;  // CSE
  // Fusions: the fused node's name (the Relu's) and what it replaced.
  std::vector<std::pair<std::string, std::string>> fused;
  // Recomputation: the node that recomputes a value in the backward pass,
  // and what it stands for.
  std::vector<std::pair<std::string, std::string>> recomputed;
  int32_t schedule_edges = 0;  // edges added to delay nodes (memory)
  // Control flow: frames, when any node of the plan is a control-flow
  // primitive (then slots are per frame and the frame executor runs it).
  bool control_flow = false;
  // Cluster sessions: the other tasks (ranks) with nodes of this plan.
  std::vector<int32_t> task_peers;
  // Asynchronous clusters: RequestNamesHash of the plan's feeds, fetches
  // and targets, computed once (session/serve.h).
  uint64_t request_names = 0;
  std::vector<PlanFrame> frames;
  // The collective nodes (OpDef::collective) in creation order: the order
  // a run starts them in on every rank.
  std::vector<const weft_node*> collectives;
  // Nodes made by the planner (the Casts of lossy transfers, fused and
  // recomputing nodes).
  std::vector<std::unique_ptr<weft_node>> synthetic;
  // The per-run arrays of finished runs, kept for the next run of the plan
  // (executor.cc): a run then allocates and zeroes nothing per node.
  std::shared_ptr<struct RunArenaPool> arenas;
  // Chooses the kernels' thread count per run when the session leaves it
  // to the runtime (thread_tuner.h).
  std::shared_ptr<ThreadTuner> tuner;
};

namespace exec {
class Run;
}

// A run's per-slot and per-node state, sized for one plan, and the run
// object itself (made by the first run that takes the arena).  Between
// runs every slot is empty.
struct RunArena {
  RunArena();
  ~RunArena();  // executor.cc, where exec::Run is complete
  std::vector<TensorValue> slots;
  // Counted down by Run::CountDown (plainly or with __atomic builtins).
  std::unique_ptr<int32_t[]> pending;  // per node
  std::unique_ptr<int32_t[]> uses;     // per slot
  std::unique_ptr<std::atomic<int64_t>[]> slot_bytes;
  std::unique_ptr<std::atomic<int64_t>[]> live, peak;  // per device
  // A run without a pool: the caller's queue of ready nodes (empty between
  // runs; its capacity stays, so a run allocates nothing for it).
  std::vector<int32_t> ready;
  // The run's condition variables (Run::cv_, Run::cf_cv_): nobody waits on
  // them between runs, and kept here they are not made and destroyed with
  // every run.
  std::condition_variable cv, cf_cv;
  // Last: destroyed first, while the slots and the rest it refers to are
  // still there.
  std::unique_ptr<exec::Run> run;
};

struct RunArenaPool {
  static constexpr size_t kMaxKept = 4;  // concurrent runs beyond: fresh ones
  // One arena outside the lock: a plan run by one thread at a time (the
  // common case) takes and returns it with one atomic exchange each.
  std::atomic<RunArena*> spare{nullptr};
  std::mutex mu;
  std::vector<std::unique_ptr<RunArena>> free;
  ~RunArenaPool() { delete spare.load(std::memory_order_acquire); }
};

struct PlanOptions {
  int32_t placement = 0;           // weft_placement_policy
  int32_t transfer_precision = 0;  // weft_transfer_precision
  uint32_t optimizations = ~0u;    // WEFT_OPTIMIZE_*
  int32_t recompute = 0;           // weft_recompute_policy
};

namespace distributed {
struct Cluster;
}

struct PlanRequest {
  const std::vector<weft_output>* feeds;
  const std::vector<weft_output>* fetches;
  const std::vector<weft_node*>* targets;
  const std::vector<Device*>* devices;  // allowed, in preference order
  VariableStore* variables;
  const PlanOptions* options;
  CostModel* costs;
  // Cluster sessions: the cluster, and a name for the plan that every rank
  // gives it alike (the session and the feeds, fetches and targets).
  const distributed::Cluster* cluster = nullptr;
  std::string name;
  // Asynchronous clusters: the rank whose run this is (the one that made
  // it, or a serving task's client); -1 in synchronous ones.
  int32_t client = -1;
};

weft_status* BuildPlan(const PlanRequest& request, std::shared_ptr<Plan>* out);

// The device of Variable node `var`, whose state is `state`: chosen once,
// under the state's lock, by the first plan that places the variable or the
// first checkpoint restore into it, whichever comes first, so that all of a
// session's plans agree.  Among the devices of `allowed` that the
// variable's constraint matches (under `placement`, a
// weft_placement_policy), with `costs`: the one where its heaviest reader
// in the graph costs least (an optimizer's slot: beside the variable its
// update writes), where every op writing it has a kernel; else (and
// without `costs`) the first.
weft_status* VariableDevice(const weft_node* var, VariableState* state,
                            const std::vector<Device*>& allowed,
                            int32_t placement, CostModel* costs, Device** out,
                            std::string* reason);

}  // namespace weft
