#include "kernel_call.h"

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

weft_status* KernelCall::UnsupportedDtype(int32_t dtype) const {
  const char* name = weft_dtype_name_of(dtype);
  return Error(WEFT_UNIMPLEMENTED, "no OpenCL kernel for dtype %s",
               name != nullptr ? name : "?");
}

ErrorArg KernelCall::Unchecked() const {
  return ErrorArg{plugin_stream()->errors->buffer(), 0};
}

ErrorArg KernelCall::Checked(DeviceError kind, int32_t dtype,
                             int64_t classes) {
  check_after_launch_ = true;
  ErrorSlot& errors = *plugin_stream()->errors;
  const uint32_t id = errors.RegisterLaunch(
      host()->kernel_node_name(context()), host()->kernel_op(context()), kind,
      weft_dtype_name_of(dtype), classes);
  return ErrorArg{errors.buffer(), static_cast<cl_int>(id)};
}

weft_status* KernelCall::Fill(const weft_kernel_tensor& tensor,
                              const void* pattern, size_t size) const {
  if (tensor.byte_size == 0) return nullptr;
  cl_int error = g_cl->EnqueueFillBuffer(
      plugin_stream()->queue, static_cast<cl_mem>(tensor.data), pattern, size,
      tensor.offset, tensor.byte_size, 0, nullptr, nullptr);
  if (error == CL_SUCCESS) return nullptr;
  return Error(CodeFor(error), "clEnqueueFillBuffer: %s", ClErrorName(error));
}

weft_status* KernelCall::AcquireKernel(Program program, const char* name,
                                       cl_kernel* out) const {
  // A build failure carries the whole build log, which outgrows Error()'s
  // buffer: it is returned as the cache made it.
  return device()->programs->Acquire(program, name, out);
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
        plugin_stream()->queue, kernel, work.dims, nullptr, work.global,
        work.local[0] != 0 ? work.local : nullptr, 0, nullptr, nullptr);
    if (error != CL_SUCCESS) {
      status = Error(CodeFor(error), "enqueueing kernel '%s': %s", name,
                     ClErrorName(error));
    }
  }
  // The kernel's arguments were captured at the enqueue: another launch may
  // reuse the object now.
  device()->programs->Release(program, name, kernel);
  if (status == nullptr && check_after_launch_) {
    status = plugin_stream()->errors->AfterLaunch();
  }
  check_after_launch_ = false;
  return status;
}

bool SameDims(const weft_kernel_tensor& a, const weft_kernel_tensor& b) {
  if (a.rank != b.rank) return false;
  for (int32_t i = 0; i < a.rank; ++i) {
    if (a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

const int32_t kFixedSizeTypes[] = {
    WEFT_FLOAT32, WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT32,  WEFT_INT64,
    WEFT_UINT8,   WEFT_BOOL,    WEFT_INT8,     WEFT_INT16,  WEFT_UINT16,
    WEFT_UINT32,  WEFT_UINT64,  WEFT_FLOAT64};
const int32_t kFixedSizeTypeCount =
    sizeof kFixedSizeTypes / sizeof *kFixedSizeTypes;

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
    case WEFT_UINT8: return "u8";
    case WEFT_BOOL: return "bool";
    case WEFT_INT8: return "i8";
    case WEFT_INT16: return "i16";
    case WEFT_UINT16: return "u16";
    case WEFT_UINT32: return "u32";
    case WEFT_UINT64: return "u64";
    default: return nullptr;
  }
}

const char* KernelName(char* out, size_t size, const char* name,
                       int32_t dtype) {
  const char* suffix = KernelSuffix(dtype);
  std::snprintf(out, size, "%s_%s", name, suffix != nullptr ? suffix : "none");
  return out;
}

bool SplitDims(const weft_kernel_tensor& x, const bool* reduced,
               DimWalk* kept, DimWalk* red) {
  cl_long strides[WEFT_MAX_RANK];
  cl_long stride = 1;
  for (int32_t i = x.rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= x.dims[i];
  }
  int previous = -1;  // class of the last dim kept in a walk: 0 kept, 1 red
  for (int32_t i = 0; i < x.rank; ++i) {
    if (x.dims[i] == 1) continue;
    const int cls = reduced[i] ? 1 : 0;
    DimWalk* walk = reduced[i] ? red : kept;
    if (previous == cls) {
      walk->dims[walk->rank - 1] *= x.dims[i];
      walk->strides[walk->rank - 1] = strides[i];
    } else {
      if (walk->rank == kMaxKernelRank) return false;
      walk->dims[walk->rank] = x.dims[i];
      walk->strides[walk->rank] = strides[i];
      ++walk->rank;
    }
    previous = cls;
  }
  return true;
}

TempBuffer::~TempBuffer() {
  if (buffer_ != nullptr) g_cl->ReleaseMemObject(buffer_);
}

weft_status* TempBuffer::Create(const KernelCall& call, size_t bytes) {
  cl_int error = CL_SUCCESS;
  buffer_ = g_cl->CreateBuffer(call.device()->context, CL_MEM_READ_WRITE,
                               bytes > 0 ? bytes : 1, nullptr, &error);
  if (error == CL_SUCCESS) return nullptr;
  buffer_ = nullptr;
  const int32_t code = CodeFor(error);
  return call.Error(code == WEFT_INTERNAL ? WEFT_RESOURCE_EXHAUSTED : code,
                    "clCreateBuffer of %zu bytes of scratch failed: %s",
                    bytes, ClErrorName(error));
}

}  // namespace weft_opencl
