#include "kernel_call.h"

#include <cstdarg>
#include <cstdio>

namespace weft_cuda {

DimBuffer::DimBuffer(int32_t rank)
    : data_(rank <= kInline ? inline_ : new int64_t[rank]) {}

DimBuffer::~DimBuffer() {
  if (data_ != inline_) delete[] data_;
}

weft_status* KernelCall::Begin() {
  device_ = g_host->kernel_device(ctx_);
  stream_ = g_host->kernel_stream(ctx_);
  if (device_ == nullptr) {
    return Error(WEFT_INTERNAL, "the host gave the kernel no device");
  }
  // The table has streams, so the host must hand every kernel one; a NULL
  // stream would mean work the host believes complete on return.
  if (stream_ == nullptr) {
    return Error(WEFT_INTERNAL,
                 "the host gave the CUDA kernel no stream to enqueue on");
  }
  weft_status* status = CudaStatus(cudaSetDevice(device_->ordinal),
                                   "cudaSetDevice");
  if (status != nullptr) {
    g_host->status_destroy(status);
    return Error(WEFT_INTERNAL, "cannot make CUDA device %d current",
                 device_->ordinal);
  }
  return nullptr;
}

weft_status* KernelCall::Input(int32_t index, weft_kernel_tensor* out) const {
  *out = weft_kernel_tensor{};
  out->struct_size = sizeof(*out);
  return g_host->kernel_input(ctx_, index, out);
}

weft_status* KernelCall::AllocateOutput(int32_t index, int32_t dtype,
                                        const int64_t* dims, int32_t rank,
                                        weft_kernel_tensor* out) const {
  *out = weft_kernel_tensor{};
  out->struct_size = sizeof(*out);
  return g_host->kernel_allocate_output(ctx_, index, dtype, dims, rank, out);
}

weft_status* KernelCall::ForwardInput(int32_t input_index,
                                      int32_t output_index,
                                      const int64_t* dims,
                                      int32_t rank) const {
  return g_host->kernel_forward_input(ctx_, input_index, output_index, dims,
                                      rank);
}

weft_status* KernelCall::AttrBool(const char* name, bool fallback,
                                  bool* out) const {
  int32_t value = 0;
  weft_status* status = g_host->kernel_attr_bool(ctx_, name, &value);
  if (status != nullptr) {
    if (g_host->status_code(status) != WEFT_NOT_FOUND) return status;
    g_host->status_destroy(status);
    *out = fallback;
    return nullptr;
  }
  *out = value != 0;
  return nullptr;
}

weft_status* KernelCall::AttrDtype(const char* name, int32_t* out) const {
  return g_host->kernel_attr_dtype(ctx_, name, out);
}

weft_status* KernelCall::AttrIntList(const char* name, bool* present,
                                     const int64_t** values,
                                     int32_t* count) const {
  *values = nullptr;
  *count = 0;
  weft_status* status =
      g_host->kernel_attr_int_list(ctx_, name, values, count);
  if (status != nullptr) {
    if (g_host->status_code(status) != WEFT_NOT_FOUND) return status;
    g_host->status_destroy(status);
    *present = false;
    return nullptr;
  }
  *present = true;
  return nullptr;
}

weft_status* KernelCall::Error(int32_t code, const char* format, ...) const {
  char message[768];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  const char* node = g_host->kernel_node_name(ctx_);
  const char* op = g_host->kernel_op(ctx_);
  return MakeStatus(code, "node '%s' (%s): %s", node ? node : "?",
                    op ? op : "?", message);
}

weft_status* KernelCall::CheckCuda(cudaError_t error, const char* what) const {
  if (error == cudaSuccess) return nullptr;
  cudaGetLastError();
  return Error(error == cudaErrorMemoryAllocation ? WEFT_RESOURCE_EXHAUSTED
                                                  : WEFT_INTERNAL,
               "%s on CUDA device %d failed: %s: %s", what,
               device_->ordinal, cudaGetErrorName(error),
               cudaGetErrorString(error));
}

std::string KernelCall::DivisionByZeroDescription() const {
  const char* node = g_host->kernel_node_name(ctx_);
  const char* op = g_host->kernel_op(ctx_);
  std::string description = "integer division by zero in node '";
  description += node ? node : "?";
  description += "' (";
  description += op ? op : "?";
  description += ")";
  return description;
}

weft_status* RegisterKernel(weft_kernel_registrar* registrar, const char* op,
                            const char* dtype_attr, const int32_t* dtypes,
                            int32_t num_dtypes, weft_kernel_compute_fn compute,
                            void* kernel_arg) {
  weft_kernel_def def{};
  def.struct_size = sizeof(def);
  def.op = op;
  def.dtype_attr = dtype_attr;
  def.dtypes = dtypes;
  def.num_dtypes = num_dtypes;
  // The baseline: a vendor plugin that wants to replace one of these
  // kernels on "CUDA" devices registers it with a higher priority.
  def.priority = 0;
  def.compute = compute;
  def.kernel_arg = kernel_arg;
  return g_host->register_kernel(registrar, &def);
}

const char* DtypeName(int32_t dtype) { return weft_dtype_name_of(dtype); }

}  // namespace weft_cuda
