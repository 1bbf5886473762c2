// The grid-stride loop every kernel of the plugin runs: where a thread
// starts and how far it steps.  Device code: included by .cu files only.
#ifndef WEFT_PLUGINS_CUDA_GRID_LOOP_H_
#define WEFT_PLUGINS_CUDA_GRID_LOOP_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace weft_cuda {

__device__ __forceinline__ int64_t GridStart() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_GRID_LOOP_H_
