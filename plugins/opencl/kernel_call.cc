#include "kernel_call.h"

#include <cstdarg>
#include <cstdio>

namespace weft_opencl {

BufferArg Buffer(const weft_kernel_tensor& tensor) {
  const size_t element = weft_dtype_size_of(tensor.dtype);
  return BufferArg{static_cast<cl_mem>(tensor.data),
                   static_cast<cl_long>(element != 0 ? tensor.offset / element
                                                     : 0)};
}

WorkSize Linear(int64_t count, size_t group) {
  WorkSize work;
  const size_t n = count > 0 ? static_cast<size_t>(count) : 1;
  if (n < group) group = n;
  work.global[0] = (n + group - 1) / group * group;
  work.local[0] = group;
  return work;
}

WorkSize GroupPerRow(int64_t rows, size_t group) {
  WorkSize work;
  work.global[0] = static_cast<size_t>(rows > 0 ? rows : 1) * group;
  work.local[0] = group;
  return work;
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
                 "the host gave the OpenCL kernel no stream to enqueue on");
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

weft_status* KernelCall::AttrInt(const char* name, int64_t fallback,
                                 int64_t* out) const {
  weft_status* status = g_host->kernel_attr_int(ctx_, name, out);
  if (status != nullptr && g_host->status_code(status) == WEFT_NOT_FOUND) {
    g_host->status_destroy(status);
    *out = fallback;
    return nullptr;
  }
  return status;
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

weft_status* KernelCall::AttrString(const char* name,
                                    const char** out) const {
  *out = nullptr;
  weft_status* status = g_host->kernel_attr_string(ctx_, name, out);
  if (status != nullptr && g_host->status_code(status) == WEFT_NOT_FOUND) {
    g_host->status_destroy(status);
    return nullptr;
  }
  return status;
}

weft_status* KernelCall::Error(int32_t code, const char* format, ...) const {
  char message[768];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  const char* node = g_host->kernel_node_name(ctx_);
  const char* op = g_host->kernel_op(ctx_);
  return MakeStatus(code, "node '%s' (%s on OPENCL): %s", node ? node : "?",
                    op ? op : "?", message);
}

weft_status* KernelCall::UnsupportedDtype(int32_t dtype) const {
  const char* name = weft_dtype_name_of(dtype);
  return Error(WEFT_UNIMPLEMENTED, "no OpenCL kernel for dtype %s",
               name != nullptr ? name : "?");
}

ErrorArg KernelCall::Unchecked() const {
  return ErrorArg{stream_->errors->buffer(), 0};
}

ErrorArg KernelCall::Checked(DeviceError kind, int32_t dtype,
                             int64_t classes) {
  check_after_launch_ = true;
  const uint32_t id = stream_->errors->RegisterLaunch(
      g_host->kernel_node_name(ctx_), g_host->kernel_op(ctx_), kind,
      weft_dtype_name_of(dtype), classes);
  return ErrorArg{stream_->errors->buffer(), static_cast<cl_int>(id)};
}

weft_status* KernelCall::Fill(const weft_kernel_tensor& tensor,
                              const void* pattern, size_t size) const {
  if (tensor.byte_size == 0) return nullptr;
  cl_int error = g_cl->EnqueueFillBuffer(
      stream_->queue, static_cast<cl_mem>(tensor.data), pattern, size,
      tensor.offset, tensor.byte_size, 0, nullptr, nullptr);
  if (error == CL_SUCCESS) return nullptr;
  return Error(CodeFor(error), "clEnqueueFillBuffer: %s", ClErrorName(error));
}

weft_status* KernelCall::AcquireKernel(Program program, const char* name,
                                       cl_kernel* out) const {
  // A build failure carries the whole build log, which outgrows Error()'s
  // buffer: it is returned as the cache made it.
  return device_->programs->Acquire(program, name, out);
}

weft_status* KernelCall::Enqueue(Program program, const char* name,
                                 cl_kernel kernel, const WorkSize& work,
                                 cl_int arg_error, cl_uint failed_arg) {
  weft_status* status = nullptr;
  if (arg_error != CL_SUCCESS) {
    status = Error(WEFT_INTERNAL, "setting argument %u of kernel '%s': %s",
                   failed_arg, name, ClErrorName(arg_error));
  } else {
    cl_int error = g_cl->EnqueueNDRangeKernel(
        stream_->queue, kernel, work.dims, nullptr, work.global,
        work.local[0] != 0 ? work.local : nullptr, 0, nullptr, nullptr);
    if (error != CL_SUCCESS) {
      status = Error(CodeFor(error), "enqueueing kernel '%s': %s", name,
                     ClErrorName(error));
    }
  }
  // The kernel's arguments were captured at the enqueue: another launch may
  // reuse the object now.
  device_->programs->Release(program, name, kernel);
  if (status == nullptr && check_after_launch_) {
    status = stream_->errors->AfterLaunch();
  }
  check_after_launch_ = false;
  return status;
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
  // kernels on "OPENCL" devices registers it with a higher priority.
  def.priority = 0;
  def.compute = compute;
  def.kernel_arg = kernel_arg;
  return g_host->register_kernel(registrar, &def);
}

bool SameDims(const weft_kernel_tensor& a, const weft_kernel_tensor& b) {
  if (a.rank != b.rank) return false;
  for (int32_t i = 0; i < a.rank; ++i) {
    if (a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

const char* SizeSuffix(size_t size) {
  switch (size) {
    case 1: return "b1";
    case 2: return "b2";
    case 4: return "b4";
    case 8: return "b8";
    default: return nullptr;
  }
}

const char* KernelSuffix(int32_t dtype) {
  switch (dtype) {
    case WEFT_FLOAT32: return "f32";
    case WEFT_FLOAT64: return "f64";
    case WEFT_INT32: return "i32";
    case WEFT_INT64: return "i64";
    case WEFT_FLOAT16: return "f16";
    case WEFT_BFLOAT16: return "bf16";
    default: return nullptr;
  }
}

const char* KernelName(char* out, size_t size, const char* name,
                       int32_t dtype) {
  const char* suffix = KernelSuffix(dtype);
  std::snprintf(out, size, "%s_%s", name, suffix != nullptr ? suffix : "none");
  return out;
}

}  // namespace weft_opencl
