#include "kernel_call.h"

#include <cstring>
#include <utility>

#include "device_memory.h"

namespace weft_cuda {

DimBuffer::DimBuffer(int32_t rank)
    : data_(rank <= kInline ? inline_ : new int64_t[rank]) {}

DimBuffer::~DimBuffer() {
  if (data_ != inline_) delete[] data_;
}

weft_status* KernelCall::Begin() {
  if (weft_status* status = FindDeviceAndStream("CUDA")) return status;
  weft_status* failed = CudaStatus(cudaSetDevice(device()->ordinal),
                                   "cudaSetDevice");
  if (failed != nullptr) {
    g_host->status_destroy(failed);
    return Error(WEFT_INTERNAL, "cannot make CUDA device %d current",
                 device()->ordinal);
  }
  return nullptr;
}

weft_status* KernelCall::CheckCuda(cudaError_t error, const char* what) const {
  if (error == cudaSuccess) return nullptr;
  cudaGetLastError();
  return Error(error == cudaErrorMemoryAllocation ? WEFT_RESOURCE_EXHAUSTED
                                                  : WEFT_INTERNAL,
               "%s on CUDA device %d failed: %s: %s", what,
               device()->ordinal, cudaGetErrorName(error),
               cudaGetErrorString(error));
}

Scratch::~Scratch() {
  if (!blocks_.empty()) {
    call_.device()->memory->FreeAfter(call_.stream(), std::move(blocks_));
  }
}

weft_status* Scratch::Get(uint64_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return nullptr;
  blocks_.reserve(blocks_.size() + 1);  // so push_back cannot throw below
  std::string message;
  if (!call_.device()->memory->TryAllocate(bytes, out, &message)) {
    return call_.Error(WEFT_RESOURCE_EXHAUSTED, "scratch memory: %s",
                       message.c_str());
  }
  blocks_.push_back(*out);
  return nullptr;
}

std::string KernelCall::DivisionByZeroDescription() const {
  const char* node = g_host->kernel_node_name(context());
  const char* op = g_host->kernel_op(context());
  std::string description = "integer division by zero in node '";
  description += node ? node : "?";
  description += "' (";
  description += op ? op : "?";
  description += ")";
  return description;
}

std::string KernelCall::NodeDescription(const char* what) const {
  const char* node = g_host->kernel_node_name(context());
  const char* op = g_host->kernel_op(context());
  std::string description = "node '";
  description += node ? node : "?";
  description += "' (";
  description += op ? op : "?";
  description += " on CUDA): ";
  description += what;
  return description;
}

weft_status* KernelCall::UnsupportedDtype(int32_t dtype) const {
  return Error(WEFT_UNIMPLEMENTED, "no CUDA kernel for %s", DtypeName(dtype));
}

weft_status* KernelCall::Zeros(const weft_kernel_tensor& tensor) const {
  if (tensor.byte_size == 0) return nullptr;
  return CheckCuda(
      cudaMemsetAsync(TensorData(tensor), 0, tensor.byte_size, stream()),
      "cudaMemsetAsync");
}

bool SameDims(const weft_kernel_tensor& a, const weft_kernel_tensor& b) {
  return a.rank == b.rank &&
         (a.rank == 0 ||
          std::memcmp(a.dims, b.dims, sizeof(int64_t) * a.rank) == 0);
}

weft_status* ReadRank4Pair(const KernelCall& call, const char* first,
                           const char* second, weft_kernel_tensor* a,
                           weft_kernel_tensor* b) {
  if (weft_status* s = call.Input(0, a)) return s;
  if (weft_status* s = call.Input(1, b)) return s;
  if (!IsFloat(a->dtype)) return call.UnsupportedDtype(a->dtype);
  if (a->dtype != b->dtype) {
    return call.Error(WEFT_INVALID_ARGUMENT, "%s is %s but %s is %s", first,
                      DtypeName(a->dtype), second, DtypeName(b->dtype));
  }
  if (weft_status* s = CheckRank4(call, first, *a)) return s;
  return CheckRank4(call, second, *b);
}

}  // namespace weft_cuda
