#include "kernel_call.h"

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

}  // namespace weft_cuda
