// What every kernel of the plugin does around its launch: find its device
// and stream, read inputs and attributes, allocate outputs, and turn
// failures into statuses that name the node.  Shared by the .cu files and
// matmul.cc, so it sticks to what nvcc's host pass and g++ both accept.
#ifndef WEFT_PLUGINS_CUDA_KERNEL_CALL_H_
#define WEFT_PLUGINS_CUDA_KERNEL_CALL_H_

#include <cstdint>
#include <string>

#include "cuda_plugin.h"

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

class KernelCall {
 public:
  explicit KernelCall(weft_kernel_context* ctx) : ctx_(ctx) {}

  // Makes the kernel's device current and finds its stream.  Call first.
  weft_status* Begin();

  weft_plugin_device* device() const { return device_; }
  weft_plugin_stream* plugin_stream() const { return stream_; }
  cudaStream_t stream() const { return stream_->stream; }
  weft_kernel_context* context() const { return ctx_; }

  weft_status* Input(int32_t index, weft_kernel_tensor* out) const;
  weft_status* AllocateOutput(int32_t index, int32_t dtype,
                              const int64_t* dims, int32_t rank,
                              weft_kernel_tensor* out) const;
  weft_status* ForwardInput(int32_t input_index, int32_t output_index,
                            const int64_t* dims, int32_t rank) const;

  // Optional attributes: `fallback` when absent, an error when of another
  // type.
  weft_status* AttrBool(const char* name, bool fallback, bool* out) const;
  weft_status* AttrDtype(const char* name, int32_t* out) const;
  // `*present` says whether the attribute exists; `*values` is borrowed for
  // the call.
  weft_status* AttrIntList(const char* name, bool* present,
                           const int64_t** values, int32_t* count) const;

  // An error status whose message starts with "node 'N' (Op): ".
  weft_status* Error(int32_t code, const char* format, ...) const
      __attribute__((format(printf, 3, 4)));

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

 private:
  weft_kernel_context* ctx_;
  weft_plugin_device* device_ = nullptr;
  weft_plugin_stream* stream_ = nullptr;
};

// Registers `compute` for `op` with the dtype constraint given.
weft_status* RegisterKernel(weft_kernel_registrar* registrar, const char* op,
                            const char* dtype_attr, const int32_t* dtypes,
                            int32_t num_dtypes, weft_kernel_compute_fn compute,
                            void* kernel_arg);

// "float32" and so on, for messages.
const char* DtypeName(int32_t dtype);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_KERNEL_CALL_H_
