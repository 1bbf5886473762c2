// Op schemas: arity, attributes, allowed dtypes, how the runtime executes the
// op, and the function that infers output dtypes and shapes at build time.
#pragma once

#include <functional>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <string>
#include <vector>

#include "graph/attr.h"
#include "ops/runtime_op.h"
#include "weft/status.h"

namespace weft {

// A static shape: rank -1 when unknown, a dim -1 when unknown.
struct ShapeInfo {
  int32_t rank = -1;
  std::vector<int64_t> dims;

  static ShapeInfo Unknown() { return {}; }
  static ShapeInfo Of(std::vector<int64_t> d) {
    return {static_cast<int32_t>(d.size()), std::move(d)};
  }
  bool known_rank() const { return rank >= 0; }
  bool fully_known() const;
  std::string ToString() const;
};

// What a shape function sees and produces.
struct InferenceContext {
  const std::string& node_name;
  const std::string& op;
  std::vector<weft_dtype> input_dtypes;
  std::vector<ShapeInfo> input_shapes;
  // The op type of each input's producer (Assign checks it is a Variable).
  std::vector<std::string> input_ops;
  AttrMap* attrs;  // defaults already filled; may be extended (T, SrcT)
  std::vector<weft_dtype> output_dtypes;
  std::vector<ShapeInfo> output_shapes;
  // The attributes of each input's producer (a queue's dequeue reads the
  // component dtypes from the queue node).
  std::vector<const AttrMap*> input_attrs;

  // An INVALID_ARGUMENT naming the node and op.
  weft_status* Fail(const char* format, ...) const
      __attribute__((format(printf, 2, 3)));
  const AttrValue* attr(const char* name) const { return FindAttr(*attrs, name); }
};

// How the executor runs a node of this op.
enum class ExecKind {
  kKernel,       // a plugin kernel
  kConst,
  kPlaceholder,
  kVariable,
  kAssign,
  kAssignAdd,
  kNoOp,
  // A kernel whose first OpDef::num_refs inputs name Variables (by
  // reference, like Assign's input 0) and whose outputs are those
  // variables' new values, published when the kernel is done (optimizers).
  kUpdate,
  // Output 0 is input 0, unchanged, on its device (StopGradient): the
  // runtime runs it, no kernel needed.
  kForward,
  // Run by OpDef::runtime on the host thread, with per-run state and the
  // device's copy functions (runtime/ops/runtime_op.h): stacks, TensorArrays.
  kRuntime,
  // Control flow (runtime/ops/control_flow.cc): the executor moves values
  // between frames and iterations and tracks deadness; no kernels.
  kSwitch,
  kMerge,
  kEnter,
  kExit,
  kNextIteration,
  kLoopCond,
  // Plan-only kinds, made by partitioning; no op has them.
  kSend,  // hands a value to another device (narrowing it when lossy)
  kRecv,  // receives it there (widening it back when lossy)
};

struct AttrDef {
  std::string name;
  AttrType type;
  bool required = true;
  AttrValue default_value;
  // False for optional attributes whose absence means something of its own
  // (Sum's `axes`: absent reduces every axis, empty reduces none).
  bool has_default = true;
};

struct OpDef {
  std::string name;
  std::vector<std::string> input_names;  // documentation and arity
  bool variadic = false;                 // last input repeats (>= 1)
  int num_outputs = 1;
  std::vector<AttrDef> attrs;
  ExecKind exec = ExecKind::kKernel;
  bool stateful = false;  // never merged or folded; always run when needed
  // Leading inputs that name a Variable by reference (Assign, AssignAdd,
  // update ops): no data flows through them, and no gradient.
  int num_refs = 0;
  bool IsRefInput(size_t i) const { return i < static_cast<size_t>(num_refs); }
  // The attribute kernels dispatch on ("T"), empty when none.
  std::string type_attr;
  std::vector<weft_dtype> allowed_types;  // for type_attr; empty = any
  std::function<weft_status*(InferenceContext&)> infer;
  RuntimeOpFn runtime = nullptr;  // exec == kRuntime
  // A collective across the processes of an MPI job (ops/collective.cc):
  // plans list these nodes in creation order, the order every rank starts
  // them in.
  bool collective = false;
  // A runtime op the executor runs even when its inputs are dead (an
  // untaken branch), telling it so (RuntimeOpContext::inputs_dead): a
  // TaskSend forwards the deadness to the task that waits for the value.
  bool runs_dead = false;
  // A runtime op whose outputs are host memory wherever it is placed (an
  // iterator's elements): the planner gives them host slots, so consumers
  // on a device that cannot read host memory get them through a transfer.
  bool host_outputs = false;
  std::string summary;
  // How `weft ops` names the outputs when num_outputs does not tell
  // (an attribute decides how many, as for Split): "num_split outputs".
  std::string outputs_doc;
  // How `weft ops` lists the attributes when the schema's own text says it
  // better (a defined op's "T: {float32, float64}"); empty: from attrs.
  std::string attributes_doc;
  // Ops defined by a program or a plugin (weft_op_register, interface 1.4):
  // where they came from ("program", "plugin acme"), empty for the
  // runtime's own; and their schema and functions as text, which tells an
  // identical registration (accepted again) from a conflicting one.
  std::string origin;
  std::string identity;
};

// The op library.  The runtime's ops are added at start-up; ops defined by
// programs and plugins join later (AddDefined), so lookups lock.  Entries
// are never removed or changed: an OpDef* stays valid for the process.
class OpRegistry {
 public:
  static const OpRegistry& Global();
  static OpRegistry& GlobalMutable();
  const OpDef* Find(const std::string& name) const;
  // A snapshot, in registration order.
  std::vector<const OpDef*> All() const;
  size_t Count() const;
  // Op `index` in registration order, or null.
  const OpDef* At(size_t index) const;
  void Add(OpDef def);
  // Adds ops defined outside the runtime, all or none.  An op whose name is
  // taken is accepted (and left as it is) when its origin and identity are
  // the same, else refused naming both origins.  `added` (may be null)
  // says, per def, whether it is new.
  weft_status* AddDefined(std::vector<OpDef> defs,
                          std::vector<bool>* added = nullptr);

 private:
  mutable std::shared_mutex mu_;
  std::vector<std::unique_ptr<OpDef>> defs_;
  std::vector<const OpDef*> ordered_;
  std::unordered_map<std::string, const OpDef*> by_name_;
};

// Registration, one function per family (runtime/ops/<family>.cc).
void RegisterStateOps(OpRegistry* r);
void RegisterElementwiseOps(OpRegistry* r);
void RegisterArrayOps(OpRegistry* r);
void RegisterRandomOps(OpRegistry* r);
void RegisterReduceOps(OpRegistry* r);
void RegisterLinalgOps(OpRegistry* r);
void RegisterNnOps(OpRegistry* r);
void RegisterTrainOps(OpRegistry* r);  // optimizers (ApplyAdam, ...)
void RegisterControlFlowOps(OpRegistry* r);  // Switch, Merge, Enter, ...
void RegisterAccumulatorOps(OpRegistry* r);  // loop gradients' saved values
void RegisterForeignOps(OpRegistry* r);  // ForeignCall (libffi)
void RegisterTensorArrayOps(OpRegistry* r);  // TensorArray, ...Read, ...
void RegisterIoOps(OpRegistry* r);  // DecodeRaw, DecodePng, ParseExample...
void RegisterCollectiveOps(OpRegistry* r);  // AllReduce, Broadcast, ...
void RegisterQueueOps(OpRegistry* r);  // FIFOQueue, QueueEnqueue, ...
void RegisterCheckpointOps(OpRegistry* r);  // Save, RestoreTensor
void RegisterSummaryOps(OpRegistry* r);  // ScalarSummary ... MergeSummary
void RegisterMutexOps(OpRegistry* r);  // Mutex, MutexLock, ConsumeMutexLock
// Ops that gradients build (ReluGrad, Conv2DBackpropInput, ...).
void RegisterElementwiseArrayGradientOps(OpRegistry* r);
void RegisterReduceNnGradientOps(OpRegistry* r);

// Schemas shared by families: a unary op keeping shape and dtype, and a
// binary op with NumPy broadcasting over inputs of one dtype.
OpDef UnaryOp(const char* name, const std::vector<weft_dtype>& types,
              const char* summary);
OpDef BinaryOp(const char* name, const char* summary);
// A required attribute.
AttrDef Required(const char* name, AttrType type);
// An optional attribute of `type` with a default (`value`'s type is set).
AttrDef Optional(const char* name, AttrType type, AttrValue value);
// An int-valued AttrValue (int, bool or dtype once typed by Optional).
AttrValue IntValue(int64_t i);
// Lists of dtypes and shapes as integer-list attributes hold them (Weft's
// attributes have no list(dtype) or list(shape)): weft_dtype codes (1 to
// 1024 of them); per shape its rank (-1: unknown) then that many dims (-1:
// unknown).  The decoders return "" or what is wrong, for a message.
std::string DecodeDtypeList(const std::vector<int64_t>& codes,
                            std::vector<weft_dtype>* out);
std::string DecodeShapeList(const std::vector<int64_t>& encoded,
                            std::vector<ShapeInfo>* out);
std::vector<int64_t> EncodeShapeList(const std::vector<ShapeInfo>& shapes);
// A stateful runtime op (runtime_op.h) with its inputs and summary.
OpDef RuntimeOp(const char* name, std::vector<std::string> inputs,
                RuntimeOpFn fn, const char* summary);
// An op typed by attribute "T" over `types`, with its inputs, shape
// function and summary.
OpDef TypedOp(const char* name, std::vector<std::string> inputs,
              const std::vector<weft_dtype>& types,
              std::function<weft_status*(InferenceContext&)> infer,
              const char* summary);

// Is `exec` one of the control-flow kinds (Switch ... LoopCond)?
inline bool IsControlFlow(ExecKind exec) {
  return exec == ExecKind::kSwitch || exec == ExecKind::kMerge ||
         exec == ExecKind::kEnter || exec == ExecKind::kExit ||
         exec == ExecKind::kNextIteration || exec == ExecKind::kLoopCond;
}
// The common static shape of two: dims that differ become -1, a rank that
// differs becomes unknown.
ShapeInfo MostSpecificCommonShape(const ShapeInfo& a, const ShapeInfo& b);
// Can a value of shape `value` be held where `declared` is expected?
bool ShapeFits(const ShapeInfo& value, const ShapeInfo& declared);

// Shared helpers for shape functions.
weft_status* BroadcastShapes(const InferenceContext& c, const ShapeInfo& a,
                             const ShapeInfo& b, ShapeInfo* out);
// Checks every input has the same dtype and records it as attr `T`.
weft_status* UnifyInputTypes(InferenceContext& c);
extern const std::vector<weft_dtype> kNumericTypes;
extern const std::vector<weft_dtype> kFloatTypes;
extern const std::vector<weft_dtype> kAllTypes;

}  // namespace weft
