// Ops through which no gradient passes: state and constants, integer and
// boolean results (comparisons, logical ops, shapes, indices), random
// draws, and StopGradient, whose purpose this is.
#include "grad/registry.h"
#include "ops/registry.h"

namespace weft {

void RegisterStateGradients() {
  for (const char* op : {
           "Const", "Placeholder", "Variable", "Assign", "AssignAdd", "NoOp",
           "StopGradient",
           // Values that do not depend on x's value, only on its shape.
           "ZerosLike", "OnesLike", "Rank", "Shape", "Size",
           // Integer- or bool-valued: piecewise constant.
           "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual",
           "LogicalAnd", "LogicalOr", "LogicalNot", "FloorDiv", "FloorMod",
           "ArgMax", "ArgMin", "OneHot",
           // Random draws: RandomShuffle's permutation cannot be redrawn
           // for its gradient (each node counts its own runs).
           "RandomUniform", "RandomNormal", "TruncatedNormal",
           "RandomShuffle",
           // Decoders (ops/io_ops.cc): values made from bytes.
           "DecodeRaw", "DecodePng", "DecodeJpeg", "ParseExampleFeature",
           // Input pipelines: queues and iterators hand out data, whose
           // gradient no one can use (ops/queue.cc, data/dataset.cc).
           "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue",
           "QueueEnqueue", "QueueEnqueueMany", "QueueDequeue",
           "QueueDequeueMany", "QueueDequeueUpTo", "QueueClose", "QueueSize",
           "IteratorGetNext", "IteratorInit",
           // Checkpoints inside a graph (ops/checkpoint_ops.cc).
           "Save", "RestoreTensor",
           // TensorBoard summaries (ops/summary_ops.cc): bytes for a file.
           "ScalarSummary", "HistogramSummary", "ImageSummary",
           "TextSummary", "MergeSummary",
           // Critical sections (ops/mutex.cc).
           "Mutex", "MutexLock", "ConsumeMutexLock"})
    RegisterNotDifferentiable(op);
  // Update ops (optimizers) replace variables' values: state, like Assign.
  for (const OpDef* d : OpRegistry::Global().All())
    if (d->exec == ExecKind::kUpdate) RegisterNotDifferentiable(d->name);
}

}  // namespace weft
