// Softmax and LogSoftmax over the last axis, and the softmax cross-entropy
// losses (dense and sparse labels): loss [B] and backprop [B, C].  One
// work-group per row (sources_nn.cc).
#include <cstdint>
#include <cstdio>

#include "kernel_call.h"

namespace weft_opencl {
namespace {

bool g_fp64 = false;

bool IsFloat(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || (g_fp64 && dtype == WEFT_FLOAT64);
}

// A group per row: as many items as the row has elements, up to 256.
WorkSize RowGroups(int64_t rows, int64_t width) {
  size_t group = 1;
  while (group < 256 && static_cast<int64_t>(group) < width) group *= 2;
  return GroupPerRow(rows, group);
}

weft_status* SoftmaxKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool log_softmax = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (!IsFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    if (x.rank < 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "logits must have rank >= 1, got a scalar");
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const int64_t width = x.dims[x.rank - 1];
    char name[32];
    return call.Launch(Program::kNn,
                       KernelName(name, sizeof name, "softmax", x.dtype),
                       RowGroups(y.element_count / width, width), Buffer(x),
                       Buffer(y), static_cast<cl_long>(width),
                       static_cast<cl_int>(log_softmax ? 1 : 0));
  });
}

// Reads features [B, C] and labels, checks them, allocates loss [B] and
// backprop [B, C].  Returns with *empty set when there is nothing to run.
weft_status* PrepareLoss(KernelCall& call, weft_kernel_tensor* features,
                         weft_kernel_tensor* labels, bool sparse,
                         weft_kernel_tensor* loss,
                         weft_kernel_tensor* backprop, bool* empty) {
  if (weft_status* s = call.Input(0, features)) return s;
  if (weft_status* s = call.Input(1, labels)) return s;
  if (!IsFloat(features->dtype)) {
    return call.UnsupportedDtype(features->dtype);
  }
  const bool labels_ok =
      sparse ? (labels->rank == 1 &&
                (labels->dtype == WEFT_INT32 || labels->dtype == WEFT_INT64))
             : (labels->rank == 2 && labels->dtype == features->dtype &&
                features->rank == 2 &&
                labels->dims[1] == features->dims[1]);
  if (features->rank != 2 || !labels_ok ||
      labels->dims[0] != features->dims[0]) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      sparse ? "features must be [batch, classes] and labels "
                               "[batch] of int32 or int64"
                             : "features and labels must both be [batch, "
                               "classes] of one dtype");
  }
  if (weft_status* s = call.AllocateOutput(0, features->dtype,
                                           features->dims, 1, loss)) {
    return s;
  }
  if (weft_status* s = call.AllocateOutput(1, features->dtype,
                                           features->dims, 2, backprop)) {
    return s;
  }
  *empty = loss->element_count == 0;
  return nullptr;
}

// Dense labels when `arg` is NULL, sparse otherwise.
weft_status* XentKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool sparse = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor features, labels, loss, backprop;
    bool empty = false;
    if (weft_status* s = PrepareLoss(call, &features, &labels, sparse, &loss,
                                     &backprop, &empty)) {
      return s;
    }
    if (empty) return nullptr;
    const int64_t width = features.dims[1];
    const WorkSize work = RowGroups(features.dims[0], width);
    char name[48];
    if (!sparse) {
      return call.Launch(Program::kNn,
                         KernelName(name, sizeof name, "xent", features.dtype),
                         work, Buffer(features), Buffer(labels), Buffer(loss),
                         Buffer(backprop), static_cast<cl_long>(width));
    }
    std::snprintf(name, sizeof name, "sparse_xent_%s_%s",
                  KernelSuffix(features.dtype), KernelSuffix(labels.dtype));
    const ErrorArg errors = call.Checked(DeviceError::kLabelOutOfRange,
                                         labels.dtype, width);
    return call.Launch(Program::kNn, name, work, Buffer(features),
                       Buffer(labels), Buffer(loss), Buffer(backprop),
                       static_cast<cl_long>(width), errors);
  });
}

// Tags telling a shared compute function which op it runs as.
int g_log_softmax_tag;
int g_sparse_tag;

}  // namespace

weft_status* RegisterNnKernels(weft_kernel_registrar* registrar, bool fp64) {
  g_fp64 = fp64;
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  const int32_t count = fp64 ? 2 : 1;
  weft_status* s = nullptr;
  if ((s = RegisterKernel(registrar, "Softmax", "T", floats, count,
                          SoftmaxKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "LogSoftmax", "T", floats, count,
                          SoftmaxKernel, &g_log_softmax_tag)) ||
      (s = RegisterKernel(registrar, "SoftmaxCrossEntropyWithLogits", "T",
                          floats, count, XentKernel, nullptr)) ||
      (s = RegisterKernel(registrar, "SparseSoftmaxCrossEntropyWithLogits",
                          "T", floats, count, XentKernel, &g_sparse_tag))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_opencl
