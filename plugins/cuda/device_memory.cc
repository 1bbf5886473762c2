#include "device_memory.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

namespace weft_cuda {

bool CudaBackend::Allocate(uint64_t bytes, void** out, std::string* why) {
  // Allocation happens on the calling thread, whatever device it had
  // current; the caller's is restored so no kernel call is surprised.
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  cudaError_t error = cudaSetDevice(ordinal);
  if (error == cudaSuccess) error = cudaMalloc(out, bytes);
  if (previous >= 0 && previous != ordinal) cudaSetDevice(previous);
  if (error == cudaSuccess) return true;
  cudaGetLastError();
  *out = nullptr;
  *why = std::string("cudaMalloc failed: ") + cudaGetErrorString(error) +
         " (" + cudaGetErrorName(error) + ")";
  return false;
}

void CudaBackend::Free(void* block, uint64_t) {
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (cudaSetDevice(ordinal) != cudaSuccess || cudaFree(block) != cudaSuccess) {
    // A broken context: the next synchronization reports it.
    cudaGetLastError();
  }
  if (previous >= 0 && previous != ordinal) cudaSetDevice(previous);
}

weft_status* DeviceMemory::ForDevice(int ordinal, DeviceMemory** out) {
  *out = nullptr;
  if (ordinal < 0 || ordinal >= WEFT_PLUGIN_MAX_DEVICES) {
    return MakeStatus(WEFT_INVALID_ARGUMENT, "CUDA device %d out of range",
                      ordinal);
  }
  static std::mutex* mutex = new std::mutex;
  static DeviceMemory** devices = new DeviceMemory*[WEFT_PLUGIN_MAX_DEVICES]();
  std::lock_guard<std::mutex> lock(*mutex);
  if (devices[ordinal] == nullptr) {
    const char* text = std::getenv("WEFT_CUDA_MEMORY_LIMIT");
    uint64_t limit = 0;
    std::string why;
    if (!ParseMemoryLimit(text, &limit, &why)) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "WEFT_CUDA_MEMORY_LIMIT: %s; CUDA device %d cannot "
                        "be opened",
                        why.c_str(), ordinal);
    }
    devices[ordinal] = new DeviceMemory(ordinal, limit);
  }
  *out = devices[ordinal];
  return nullptr;
}

bool DeviceMemory::TryAllocate(uint64_t bytes, void** out,
                               std::string* message) {
  std::string why;
  char text[512];
  switch (allocator_.Allocate(bytes, out, &why)) {
    case AllocResult::kOk:
      return true;
    case AllocResult::kOverLimit:
      std::snprintf(text, sizeof text,
                    "CUDA device %d: allocating %llu bytes would pass the "
                    "limit of %llu bytes (WEFT_CUDA_MEMORY_LIMIT; %s)",
                    ordinal_, static_cast<unsigned long long>(bytes),
                    static_cast<unsigned long long>(allocator_.limit()),
                    why.c_str());
      break;
    case AllocResult::kBackendFailed:
    default:
      std::snprintf(text, sizeof text,
                    "CUDA device %d: allocating %llu bytes failed, also "
                    "after freeing the plugin's cache of unused blocks: %s",
                    ordinal_, static_cast<unsigned long long>(bytes),
                    why.c_str());
      break;
  }
  *message = text;
  return false;
}

weft_status* DeviceMemory::Allocate(uint64_t bytes, void** out) {
  std::string message;
  if (TryAllocate(bytes, out, &message)) return nullptr;
  return MakeStatus(WEFT_RESOURCE_EXHAUSTED, "%s", message.c_str());
}

bool DeviceMemory::Free(void* block) { return allocator_.Free(block); }

namespace {

struct PendingFree {
  DeviceMemory* memory;
  std::vector<void*> blocks;
};

// Runs on a CUDA thread once the stream gets here: no CUDA calls, and
// DeviceMemory::Free makes none.
void CUDART_CB FreeWhenReached(void* arg) {
  std::unique_ptr<PendingFree> pending(static_cast<PendingFree*>(arg));
  for (void* block : pending->blocks) pending->memory->Free(block);
}

}  // namespace

void DeviceMemory::FreeAfter(cudaStream_t stream, std::vector<void*> blocks) {
  if (blocks.empty()) return;
  std::unique_ptr<PendingFree> pending;
  try {
    pending.reset(new PendingFree{this, std::move(blocks)});
  } catch (...) {
    // No memory for the note: wait instead.
    cudaStreamSynchronize(stream);
    cudaGetLastError();
    for (void* block : blocks) Free(block);
    return;
  }
  if (cudaLaunchHostFunc(stream, FreeWhenReached, pending.get()) ==
      cudaSuccess) {
    pending.release();
    return;
  }
  cudaGetLastError();
  cudaStreamSynchronize(stream);
  cudaGetLastError();
  for (void* block : pending->blocks) Free(block);
}

}  // namespace weft_cuda
