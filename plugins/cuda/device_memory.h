// Each device's memory: a CachingAllocator (caching_allocator.h) over
// cudaMalloc/cudaFree, shared by every handle of the device, with the limit
// of WEFT_CUDA_MEMORY_LIMIT.  memory_allocate and memory_free go through
// it, and so do the kernels' scratch buffers (Scratch in kernel_call.h),
// which return to the cache once their stream has passed the work that
// uses them.
#ifndef WEFT_PLUGINS_CUDA_DEVICE_MEMORY_H_
#define WEFT_PLUGINS_CUDA_DEVICE_MEMORY_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "caching_allocator.h"
#include "cuda_plugin.h"

namespace weft_cuda {

struct CudaBackend {
  int ordinal;
  bool Allocate(uint64_t bytes, void** out, std::string* why);
  void Free(void* block, uint64_t bytes);
};

class DeviceMemory {
 public:
  // The device's memory, made on the first call for `ordinal` (reading
  // WEFT_CUDA_MEMORY_LIMIT then); an INVALID_ARGUMENT status when the
  // variable does not parse.  Never destroyed: blocks may be freed while
  // the process exits.
  static weft_status* ForDevice(int ordinal, DeviceMemory** out);

  // RESOURCE_EXHAUSTED naming the device, the request and the limit (or
  // cudaMalloc's error) when it cannot.  The device need not be current.
  weft_status* Allocate(uint64_t bytes, void** out);
  // The same, with the message in *message instead of a status (for a
  // kernel, whose errors name its node).
  bool TryAllocate(uint64_t bytes, void** out, std::string* message);
  // False for a block this device did not hand out (or already took
  // back).  Never calls CUDA.
  bool Free(void* block);
  // Frees `blocks` to the cache once `stream` has passed the work queued on
  // it so far (a host function; if that cannot be queued, after waiting
  // for the stream).
  void FreeAfter(cudaStream_t stream, std::vector<void*> blocks);

  uint64_t limit() const { return allocator_.limit(); }
  AllocatorStats Stats() const { return allocator_.Stats(); }

 private:
  DeviceMemory(int ordinal, uint64_t limit)
      : ordinal_(ordinal), allocator_(CudaBackend{ordinal}, limit) {}

  const int ordinal_;
  CachingAllocator<CudaBackend> allocator_;
};

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_DEVICE_MEMORY_H_
