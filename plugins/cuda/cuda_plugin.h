// Internal declarations shared by the CUDA plugin's files.  Nothing here is
// seen by the host: it gets weft_plugin_entry and the tables, nothing else.
#ifndef WEFT_PLUGINS_CUDA_CUDA_PLUGIN_H_
#define WEFT_PLUGINS_CUDA_CUDA_PLUGIN_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

#include "weft/plugin.h"

struct cublasContext;
struct cudnnContext;

namespace weft_cuda {

// Set once by weft_plugin_entry, before any other slot can be called.
extern const weft_host_api* g_host;

// A status from the host; NULL for WEFT_OK.  Formats into a fixed buffer, so
// it cannot throw and works even when the heap is exhausted.
weft_status* MakeStatus(int32_t code, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// NULL when `error` is cudaSuccess; otherwise a status saying `what` failed
// and why.  Also clears the thread's last CUDA error, so that one failure is
// not reported again by the next, unrelated check.
weft_status* CudaStatus(cudaError_t error, const char* what);

// Runs `body` (returning weft_status*) so that no C++ exception crosses the
// ABI: each slot and kernel entry goes through here.
template <typename Body>
weft_status* Guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return MakeStatus(WEFT_RESOURCE_EXHAUSTED, "weft-cuda: out of host memory");
  } catch (...) {
    return MakeStatus(WEFT_INTERNAL, "weft-cuda: unexpected C++ exception");
  }
}

class ErrorSlot;
class DeviceMemory;

}  // namespace weft_cuda

// The ABI declares these opaque types in the global namespace.
struct weft_plugin_device {
  int ordinal;
  const char* description;  // interned: lives until the plugin is unloaded
  uint64_t memory_bytes;
  double compute_gflops;
  weft_cuda::DeviceMemory* memory;  // shared by every handle of the device
};

struct weft_plugin_stream {
  int ordinal;
  cudaStream_t stream;
  std::shared_ptr<weft_cuda::ErrorSlot> errors;
  // Created on the stream's first MatMul and bound to this stream for good,
  // so a handle (and its workspace) is never shared by two streams.
  std::mutex blas_mutex;
  cublasContext* blas = nullptr;
  // The same for cuDNN, on the stream's first convolution (conv.cu).
  std::mutex dnn_mutex;
  cudnnContext* dnn = nullptr;
};

struct weft_plugin_event {
  int ordinal;
  cudaEvent_t event;
  std::mutex mutex;
  // The slot of the stream the event was last recorded on; NULL before the
  // first record.
  std::shared_ptr<weft_cuda::ErrorSlot> errors;
};

namespace weft_cuda {

// Releases the stream's cuBLAS handle, if any (matmul.cc).
void DestroyBlasHandle(weft_plugin_stream* stream);
// Releases the stream's cuDNN handle, if any (conv.cu).
void DestroyDnnHandle(weft_plugin_stream* stream);

// The collective slots of plugin interface 1.7, over NCCL opened at run
// time (collectives.cu; built when nccl.h is present).
weft_status* CollectiveUniqueId(weft_plugin_device* device, void* out,
                                uint64_t capacity, uint64_t* out_size);
weft_status* CollectiveCommCreate(weft_plugin_device* device, int32_t rank,
                                  int32_t size, const void* id,
                                  uint64_t id_size, weft_plugin_comm** out);
weft_status* CollectiveAllReduce(weft_plugin_device* device,
                                 weft_plugin_comm* comm,
                                 weft_plugin_stream* stream, const void* src,
                                 uint64_t src_offset, void* dst,
                                 uint64_t dst_offset, uint64_t count,
                                 int32_t dtype, int32_t reduction);
weft_status* CollectiveBroadcast(weft_plugin_device* device,
                                 weft_plugin_comm* comm,
                                 weft_plugin_stream* stream, const void* src,
                                 uint64_t src_offset, void* dst,
                                 uint64_t dst_offset, uint64_t bytes,
                                 int32_t root);
void CollectiveCommDestroy(weft_plugin_device* device,
                           weft_plugin_comm* comm);

// Kernel registration, one function per source file.
weft_status* RegisterElementwiseKernels(weft_kernel_registrar* registrar);
weft_status* RegisterReductionKernels(weft_kernel_registrar* registrar);
weft_status* RegisterMatMulKernels(weft_kernel_registrar* registrar);
weft_status* RegisterConvKernels(weft_kernel_registrar* registrar);
weft_status* RegisterPoolKernels(weft_kernel_registrar* registrar);
weft_status* RegisterTrainingKernels(weft_kernel_registrar* registrar);
weft_status* RegisterLayoutKernels(weft_kernel_registrar* registrar);
weft_status* RegisterRandomKernels(weft_kernel_registrar* registrar);
weft_status* RegisterBatchMatMulKernels(weft_kernel_registrar* registrar);
weft_status* RegisterLinalgKernels(weft_kernel_registrar* registrar);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_CUDA_PLUGIN_H_
