// What every kernel of the plugin does around its launch: find its device
// and stream, read inputs and attributes, allocate outputs, set the
// arguments of an OpenCL kernel and enqueue it, and turn failures into
// statuses that name the node.  A compute call only enqueues: it never
// waits for the device.
#ifndef WEFT_PLUGINS_OPENCL_KERNEL_CALL_H_
#define WEFT_PLUGINS_OPENCL_KERNEL_CALL_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "error_slot.h"
#include "opencl_plugin.h"
#include "plugin_kit.h"
#include "program.h"
#include "weft/tensor.h"  // WEFT_MAX_RANK

namespace weft_opencl {

// A tensor as kernels take it: the buffer and the index of its first
// element (two kernel arguments, `__global T* p, long p_offset`).
struct BufferArg {
  cl_mem buffer;
  cl_long offset;
};
BufferArg Buffer(const weft_kernel_tensor& tensor);

// The stream's error buffer and the launch id kernels that may fail report
// under (two arguments, `__global int* err, int launch`); id 0 for a launch
// that cannot fail.
struct ErrorArg {
  cl_mem buffer;
  cl_int launch;
};

// The work of one launch: `global` items in groups of `local` (0 lets the
// implementation choose).
struct WorkSize {
  cl_uint dims = 1;
  size_t global[2] = {1, 1};
  size_t local[2] = {0, 0};
};

// `count` items, one dimension, in groups of `group`: the global size is
// rounded up to whole groups and kernels ignore the items past `count`.
// Naming the group size matters on CPU devices such as PoCL, which would
// otherwise split a prime count into groups of one.
WorkSize Linear(int64_t count, size_t group = 256);
// One group of `group` items per row, `rows` rows.
WorkSize GroupPerRow(int64_t rows, size_t group);

// The host's accessors for the call (kernel inputs, attributes, outputs,
// Error) come from the shared base; this class adds the stream, fills and
// launches.
class KernelCall : public weft_plugin_kit::KernelCallBase {
 public:
  explicit KernelCall(weft_kernel_context* ctx)
      : KernelCallBase(g_host, ctx, "OPENCL") {}

  // Finds the kernel's device and stream.  Call first.
  weft_status* Begin() { return FindDeviceAndStream("OpenCL"); }

  weft_status* UnsupportedDtype(int32_t dtype) const;

  // The error arguments of the next launch: Checked registers a launch that
  // may fail with `kind` (Launch then enqueues the read of its word).
  ErrorArg Unchecked() const;
  ErrorArg Checked(DeviceError kind, int32_t dtype, int64_t classes = 0);

  // Enqueues a fill of `tensor` with copies of the `size`-byte `pattern`.
  weft_status* Fill(const weft_kernel_tensor& tensor, const void* pattern,
                    size_t size) const;

  // Enqueues kernel `name` of `program` on the stream with `args` (POD
  // values, BufferArg, ErrorArg, in the kernel's parameter order).
  template <typename... Args>
  weft_status* Launch(Program program, const char* name, const WorkSize& work,
                      const Args&... args) {
    cl_kernel kernel = nullptr;
    if (weft_status* status = AcquireKernel(program, name, &kernel)) {
      return status;
    }
    cl_uint index = 0;
    cl_int error = CL_SUCCESS;
    (SetArg(kernel, &index, &error, args), ...);
    return Enqueue(program, name, kernel, work, error, index);
  }

 private:
  weft_status* AcquireKernel(Program program, const char* name,
                             cl_kernel* out) const;
  weft_status* Enqueue(Program program, const char* name, cl_kernel kernel,
                       const WorkSize& work, cl_int arg_error,
                       cl_uint failed_arg);

  static void SetArg(cl_kernel kernel, cl_uint* index, cl_int* error,
                     const BufferArg& arg) {
    SetArg(kernel, index, error, arg.buffer);
    SetArg(kernel, index, error, arg.offset);
  }
  static void SetArg(cl_kernel kernel, cl_uint* index, cl_int* error,
                     const ErrorArg& arg) {
    SetArg(kernel, index, error, arg.buffer);
    SetArg(kernel, index, error, arg.launch);
  }
  template <typename T>
  static void SetArg(cl_kernel kernel, cl_uint* index, cl_int* error,
                     const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are POD");
    if (*error != CL_SUCCESS) return;
    *error = g_cl->SetKernelArg(kernel, *index, sizeof(T), &value);
    if (*error == CL_SUCCESS) ++*index;
  }

  bool check_after_launch_ = false;
};

// weft_plugin_kit::RegisterKernel with this plugin's host table: (registrar,
// op, dtype_attr, dtypes, num_dtypes, compute, kernel_arg).
template <typename... Args>
weft_status* RegisterKernel(weft_kernel_registrar* registrar, Args... args) {
  return weft_plugin_kit::RegisterKernel(g_host, registrar, args...);
}

// Whether the two tensors have the same shape.
bool SameDims(const weft_kernel_tensor& a, const weft_kernel_tensor& b);

// Every dtype of 1, 2, 4 or 8 bytes: what kernels that move elements
// without arithmetic (fills, boxes) take.
extern const int32_t kFixedSizeTypes[];
extern const int32_t kFixedSizeTypeCount;

// "b1", "b2", "b4", "b8": the suffix of kernels that move elements of
// `size` bytes whatever their dtype (Fill, SliceGrad); NULL for others.
const char* SizeSuffix(size_t size);

// "f32", "i32"... as kernel names end, or NULL for a dtype with no kernels.
const char* KernelSuffix(int32_t dtype);

// "name_suffix" into `out`; returns out.
const char* KernelName(char* out, size_t size, const char* name,
                       int32_t dtype);

// The most dims a kernel walks (as long8 arguments), after the host merged
// the dims that run the same way in every operand.
constexpr int kMaxKernelRank = 8;

// The first kMaxKernelRank values as a long8 argument.
inline cl_long8 Long8(const cl_long* values) {
  cl_long8 out;
  std::memcpy(out.s, values, sizeof(out.s));
  return out;
}

// A walk over some of x's dims: merged dims and their strides in x,
// outermost first.
struct DimWalk {
  cl_int rank = 0;
  cl_long dims[kMaxKernelRank] = {};
  cl_long strides[kMaxKernelRank] = {};
};

// Splits x's dims into kept and reduced walks.  Size-1 dims are dropped;
// a dim directly inside another of the same class merges with it.
// Returns false when either walk needs more than kMaxKernelRank dims.
bool SplitDims(const weft_kernel_tensor& x, const bool* reduced,
               DimWalk* kept, DimWalk* red);

// A device buffer of `bytes` for one kernel call's own use (scratch): it
// is released when the TempBuffer goes, right after the launches that use
// it are enqueued (OpenCL keeps the memory until they finish).
class TempBuffer {
 public:
  TempBuffer() = default;
  ~TempBuffer();
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;

  // RESOURCE_EXHAUSTED (naming the node) when the device has no room.
  weft_status* Create(const KernelCall& call, size_t bytes);
  BufferArg arg() const { return BufferArg{buffer_, 0}; }

 private:
  cl_mem buffer_ = nullptr;
};

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_KERNEL_CALL_H_
