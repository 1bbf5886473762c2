// What every kernel of the plugin does around its launch: find its device
// and stream, read inputs and attributes, allocate outputs, and turn
// failures into statuses that name the node.  Shared by the .cu files and
// matmul.cc, so it sticks to what nvcc's host pass and g++ both accept.
#ifndef WEFT_PLUGINS_CUDA_KERNEL_CALL_H_
#define WEFT_PLUGINS_CUDA_KERNEL_CALL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_plugin.h"
#include "plugin_kit.h"
#include "window_attrs.h"

namespace weft_cuda {

// Threads per block for the element-wise and reduction kernels: a multiple
// of the warp size that keeps enough blocks resident on every SM.
constexpr int kBlockThreads = 256;

// Blocks for a grid-stride loop over `count` items.  Capped because the
// loops stride anyway and a smaller grid launches faster.
inline unsigned int BlocksFor(int64_t count) {
  int64_t blocks = (count + kBlockThreads - 1) / kBlockThreads;
  if (blocks > 65535) blocks = 65535;
  return static_cast<unsigned int>(blocks < 1 ? 1 : blocks);
}

// A device pointer to the first element of a kernel tensor.
inline void* TensorData(const weft_kernel_tensor& tensor) {
  return static_cast<char*>(tensor.data) + tensor.offset;
}

// Dims that live on the stack for every realistic rank, and on the heap only
// beyond it: kernels run per node and should not allocate.
class DimBuffer {
 public:
  explicit DimBuffer(int32_t rank);
  ~DimBuffer();
  DimBuffer(const DimBuffer&) = delete;
  DimBuffer& operator=(const DimBuffer&) = delete;
  int64_t* data() { return data_; }
  int64_t& operator[](int32_t i) { return data_[i]; }

 private:
  static constexpr int32_t kInline = 16;
  int64_t inline_[kInline];
  int64_t* data_;
};

// The host's accessors for the call (kernel inputs, attributes, outputs,
// Error) come from the shared base; this class adds the device, the stream
// and CUDA's error checks.
class KernelCall : public weft_plugin_kit::KernelCallBase {
 public:
  explicit KernelCall(weft_kernel_context* ctx)
      : KernelCallBase(g_host, ctx, nullptr) {}

  // Makes the kernel's device current and finds its stream.  Call first.
  weft_status* Begin();

  cudaStream_t stream() const { return plugin_stream()->stream; }

  // Status of the launch just made: configuration errors show up here, and
  // asynchronous ones later at synchronization.
  weft_status* CheckLaunch(const char* what) const {
    return CheckCuda(cudaGetLastError(), what);
  }
  // NULL for cudaSuccess, else an error naming the node and `what`.
  weft_status* CheckCuda(cudaError_t error, const char* what) const;

  // "integer division by zero in node 'N' (Op)": the description an
  // ErrorSlot keeps for a launch that may fail.
  std::string DivisionByZeroDescription() const;
  // "node 'N' (Op on CUDA): <what>", for an ErrorSlot's description of
  // another failure that only the device finds.
  std::string NodeDescription(const char* what) const;

  // UNIMPLEMENTED: "no CUDA kernel for <dtype>".
  weft_status* UnsupportedDtype(int32_t dtype) const;
  // Enqueues zeros over `tensor` (0 bits are 0 in every dtype here).
  weft_status* Zeros(const weft_kernel_tensor& tensor) const;
};

// Whether two tensors have the same shape.
bool SameDims(const weft_kernel_tensor& a, const weft_kernel_tensor& b);

// ---- The window kernels' checks (conv.cu, pool.cu), with the OpenCL
// plugin's messages ----

inline bool IsFloat(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || dtype == WEFT_FLOAT64;
}
using weft_plugin_kit::CheckRank4;  // window_attrs.h
// Inputs 0 and 1, both rank-4 floats of one dtype.
weft_status* ReadRank4Pair(const KernelCall& call, const char* first,
                           const char* second, weft_kernel_tensor* a,
                           weft_kernel_tensor* b);

// Device memory a kernel needs while its work runs (transposed copies,
// cuDNN's workspace): from the device's cache (device_memory.h), so it
// counts against WEFT_CUDA_MEMORY_LIMIT, and back to it once the stream has
// passed the work the kernel queued (the destructor queues the release:
// destroy the Scratch only after the last launch that uses it).
class Scratch {
 public:
  explicit Scratch(const KernelCall& call) : call_(call) {}
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // `bytes` 0 gives NULL.  RESOURCE_EXHAUSTED naming the node when the
  // device cannot give it.
  weft_status* Get(uint64_t bytes, void** out);
  template <typename T>
  weft_status* Get(int64_t count, T** out) {
    void* block = nullptr;
    weft_status* status =
        Get(static_cast<uint64_t>(count) * sizeof(T), &block);
    *out = static_cast<T*>(block);
    return status;
  }

 private:
  const KernelCall& call_;
  std::vector<void*> blocks_;
};

// weft_plugin_kit::RegisterKernel with this plugin's host table: (registrar,
// op, dtype_attr, dtypes, num_dtypes, compute, kernel_arg).
template <typename... Args>
weft_status* RegisterKernel(weft_kernel_registrar* registrar, Args... args) {
  return weft_plugin_kit::RegisterKernel(g_host, registrar, args...);
}

using weft_plugin_kit::DtypeName;

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_KERNEL_CALL_H_
