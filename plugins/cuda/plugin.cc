// The plugin's entry point and table: devices, memory, copies, streams and
// events.  Kernels live in elementwise.cu, reduction.cu and matmul.cc.
#include <dlfcn.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#include "cuda_plugin.h"
#include "device_memory.h"
#include "error_slot.h"
#include "plugin_kit.h"

#ifndef WEFT_CUDA_PLUGIN_VERSION
#define WEFT_CUDA_PLUGIN_VERSION "unknown"
#endif
#ifndef WEFT_CUDA_HAVE_CUDNN
#define WEFT_CUDA_HAVE_CUDNN 0
#endif
#ifndef WEFT_CUDA_HAVE_NCCL
#define WEFT_CUDA_HAVE_NCCL 0
#endif

namespace weft_cuda {

const weft_host_api* g_host = nullptr;

weft_status* MakeStatus(int32_t code, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return g_host->status_create(code, message);
}

namespace {

int32_t CodeFor(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return WEFT_RESOURCE_EXHAUSTED;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
      return WEFT_UNAVAILABLE;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
      return WEFT_INVALID_ARGUMENT;
    default:
      return WEFT_INTERNAL;
  }
}

}  // namespace

weft_status* CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return nullptr;
  cudaGetLastError();
  return MakeStatus(CodeFor(error), "%s failed: %s (%s)", what,
                    cudaGetErrorString(error), cudaGetErrorName(error));
}

namespace {

// ---- Devices ----

// Property strings must outlive every device handle (the host may keep them
// until the plugin is unloaded), so they are interned for the process'
// lifetime.  The set is never destroyed: its strings may still be read by
// the host during exit.
const char* Intern(const std::string& text) {
  static std::mutex* mutex = new std::mutex;
  static std::set<std::string>* strings = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(*mutex);
  return strings->insert(text).first->c_str();
}

// FP32 lanes per SM, for the cost model's peak estimate: 64 on Turing and
// A100, 128 on GA10x, Ada, Hopper and Blackwell.  Architectures newer than
// these get the latest figure.
int Fp32LanesPerSm(int major, int minor) {
  return (major < 8 || (major == 8 && minor == 0)) ? 64 : 128;
}

// cudart reports a missing driver as cudaErrorInsufficientDriver, whose
// text ("driver version is insufficient") misleads when there is no driver
// at all.  cudart loads libcuda.so.1 itself; if it is not in the process
// after the failure, it could not be found.
bool DriverLibraryLoaded() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return false;
  dlclose(driver);  // NOLOAD still took a reference
  return true;
}

weft_status* DeviceCount(int32_t* out_count) {
  return Guarded([&]() -> weft_status* {
    *out_count = 0;
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      cudaGetLastError();
      if (error == cudaErrorInsufficientDriver && !DriverLibraryLoaded()) {
        return MakeStatus(
            WEFT_UNAVAILABLE,
            "no CUDA driver: libcuda.so.1 could not be loaded "
            "(cudaGetDeviceCount failed: %s)",
            cudaGetErrorName(error));
      }
      return MakeStatus(CodeFor(error),
                        "no CUDA device: cudaGetDeviceCount failed: %s (%s)",
                        cudaGetErrorString(error), cudaGetErrorName(error));
    }
    if (count == 0) {
      return MakeStatus(WEFT_UNAVAILABLE,
                        "no CUDA device: the driver reports none");
    }
    *out_count = count;
    return nullptr;
  });
}

weft_status* DeviceOpen(int32_t index, weft_plugin_device** out) {
  return Guarded([&]() -> weft_status* {
    *out = nullptr;
    int count = 0;
    weft_status* status =
        CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (status != nullptr) return status;
    if (index < 0 || index >= count) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "CUDA device %d does not exist (%d devices)",
                        static_cast<int>(index), count);
    }
    status = CudaStatus(cudaSetDevice(index), "cudaSetDevice");
    if (status != nullptr) return status;
    // Creates the device's context now, so that a device that cannot be
    // used (exclusive mode, out of memory) fails here and not in a kernel.
    status = CudaStatus(cudaFree(nullptr), "creating the CUDA context");
    if (status != nullptr) return status;

    cudaDeviceProp prop{};
    status = CudaStatus(cudaGetDeviceProperties(&prop, index),
                        "cudaGetDeviceProperties");
    if (status != nullptr) return status;
    // CUDA 13 dropped clockRate from cudaDeviceProp; the attribute remains.
    int clock_khz = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index) !=
        cudaSuccess) {
      cudaGetLastError();
      clock_khz = 0;  // the estimate becomes 0, "unknown"
    }

    DeviceMemory* memory = nullptr;
    status = DeviceMemory::ForDevice(index, &memory);
    if (status != nullptr) return status;

    std::unique_ptr<weft_plugin_device> device(new weft_plugin_device());
    device->ordinal = index;
    device->memory = memory;
    device->description = Intern(prop.name);
    // With WEFT_CUDA_MEMORY_LIMIT, the placer plans with the limit.
    device->memory_bytes =
        memory->limit() != 0 && memory->limit() < prop.totalGlobalMem
            ? memory->limit()
            : prop.totalGlobalMem;
    // One fused multiply-add, two flops, per lane per clock.
    device->compute_gflops = static_cast<double>(prop.multiProcessorCount) *
                             Fp32LanesPerSm(prop.major, prop.minor) * 2.0 *
                             (clock_khz / 1.0e6);
    *out = device.release();
    return nullptr;
  });
}

void DeviceClose(weft_plugin_device* device) { delete device; }

// Whether the caller's struct, by its struct_size, has room for `field`.
#define WEFT_CUDA_FITS(object, field)                          \
  (offsetof(std::remove_pointer_t<decltype(object)>, field) +  \
       sizeof((object)->field) <=                              \
   (object)->struct_size)

weft_status* DeviceProperties(weft_plugin_device* device,
                              weft_device_properties* out) {
  if (WEFT_CUDA_FITS(out, description)) out->description = device->description;
  if (WEFT_CUDA_FITS(out, vendor)) out->vendor = "NVIDIA";
  if (WEFT_CUDA_FITS(out, memory_bytes)) {
    out->memory_bytes = device->memory_bytes;
  }
  if (WEFT_CUDA_FITS(out, compute_gflops)) {
    out->compute_gflops = device->compute_gflops;
  }
  // Device memory is not host-addressable: the host must copy.
  if (WEFT_CUDA_FITS(out, flags)) out->flags = 0;
  return nullptr;
}

// ---- Memory ----

// Through the device's cache (device_memory.h): a freed block is kept and
// handed out again for a request of its size class, and
// WEFT_CUDA_MEMORY_LIMIT caps what the plugin holds.  The host frees only
// memory whose work is complete, so a block is reusable at once.
weft_status* MemoryAllocate(weft_plugin_device* device, uint64_t bytes,
                            void** out_handle) {
  return Guarded([&]() -> weft_status* {
    *out_handle = nullptr;
    if (bytes == 0) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "memory_allocate: 0 bytes requested on CUDA device %d",
                        device->ordinal);
    }
    // Blocks are multiples of 512 bytes from cudaMalloc, which aligns to at
    // least 256: more than the 64 promised.
    return device->memory->Allocate(bytes, out_handle);
  });
}

void MemoryFree(weft_plugin_device* device, void* handle) {
  if (handle == nullptr) return;
  if (!device->memory->Free(handle)) {
    g_host->log(WEFT_LOG_ERROR,
                "weft-cuda: memory_free of a handle the CUDA device did not "
                "allocate (or freed twice); ignored");
  }
}

// ---- Copies ----

// With no stream the copy must be complete on return.  Plain cudaMemcpy is
// not enough: from pageable memory it may return before the DMA lands.  The
// per-thread default stream keeps concurrent synchronous copies from
// different host threads from waiting on each other.
weft_status* Copy(weft_plugin_device* device, weft_plugin_stream* stream,
                  void* dst, const void* src, uint64_t bytes,
                  cudaMemcpyKind kind, const char* what) {
  if (bytes == 0) return nullptr;
  weft_status* status =
      CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
  if (status != nullptr) return status;
  cudaStream_t cuda_stream =
      stream != nullptr ? stream->stream : cudaStreamPerThread;
  status = CudaStatus(cudaMemcpyAsync(dst, src, bytes, kind, cuda_stream),
                      what);
  if (status != nullptr || stream != nullptr) return status;
  return CudaStatus(cudaStreamSynchronize(cuda_stream), what);
}

weft_status* CopyHostToDevice(weft_plugin_device* device,
                              weft_plugin_stream* stream, const void* host_src,
                              void* dst, uint64_t dst_offset, uint64_t bytes) {
  return Copy(device, stream, static_cast<char*>(dst) + dst_offset, host_src,
              bytes, cudaMemcpyHostToDevice, "copy host to CUDA device");
}

weft_status* CopyDeviceToHost(weft_plugin_device* device,
                              weft_plugin_stream* stream, const void* src,
                              uint64_t src_offset, void* host_dst,
                              uint64_t bytes) {
  return Copy(device, stream, host_dst,
              static_cast<const char*>(src) + src_offset, bytes,
              cudaMemcpyDeviceToHost, "copy CUDA device to host");
}

weft_status* CopyDeviceToDevice(weft_plugin_device* device,
                                weft_plugin_stream* stream, const void* src,
                                uint64_t src_offset, void* dst,
                                uint64_t dst_offset, uint64_t bytes) {
  return Copy(device, stream, static_cast<char*>(dst) + dst_offset,
              static_cast<const char*>(src) + src_offset, bytes,
              cudaMemcpyDeviceToDevice, "copy within CUDA device");
}

// ---- Streams and events ----

weft_status* StreamCreate(weft_plugin_device* device,
                          weft_plugin_stream** out) {
  return Guarded([&]() -> weft_status* {
    *out = nullptr;
    weft_status* status =
        CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
    if (status != nullptr) return status;
    std::unique_ptr<weft_plugin_stream> stream(new weft_plugin_stream());
    stream->ordinal = device->ordinal;
    status = ErrorSlot::Create(&stream->errors);
    if (status != nullptr) return status;
    // Non-blocking: the streams must not serialize with the legacy default
    // stream that other libraries in the process may use.
    status = CudaStatus(
        cudaStreamCreateWithFlags(&stream->stream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
    if (status != nullptr) return status;
    *out = stream.release();
    return nullptr;
  });
}

void StreamDestroy(weft_plugin_device* device, weft_plugin_stream* stream) {
  if (stream == nullptr) return;
  cudaSetDevice(device->ordinal);
  // Work still queued may write the stream's error word, which the slot
  // frees; the host destroys streams rarely, so waiting costs nothing.
  cudaStreamSynchronize(stream->stream);
  DestroyBlasHandle(stream);
#if WEFT_CUDA_HAVE_CUDNN
  DestroyDnnHandle(stream);
#endif
  cudaStreamDestroy(stream->stream);
  cudaGetLastError();
  delete stream;
}

weft_status* StreamSynchronize(weft_plugin_device* device,
                               weft_plugin_stream* stream) {
  return Guarded([&]() -> weft_status* {
    weft_status* status =
        CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
    if (status != nullptr) return status;
    status = CudaStatus(cudaStreamSynchronize(stream->stream),
                        "CUDA work on the stream");
    if (status != nullptr) return status;
    return stream->errors->TakeError();
  });
}

weft_status* EventCreate(weft_plugin_device* device, weft_plugin_event** out) {
  return Guarded([&]() -> weft_status* {
    *out = nullptr;
    weft_status* status =
        CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
    if (status != nullptr) return status;
    std::unique_ptr<weft_plugin_event> event(new weft_plugin_event());
    event->ordinal = device->ordinal;
    // Timing is never read; without it, record and wait are cheaper.
    status = CudaStatus(
        cudaEventCreateWithFlags(&event->event, cudaEventDisableTiming),
        "cudaEventCreateWithFlags");
    if (status != nullptr) return status;
    *out = event.release();
    return nullptr;
  });
}

void EventDestroy(weft_plugin_device* device, weft_plugin_event* event) {
  if (event == nullptr) return;
  cudaSetDevice(device->ordinal);
  cudaEventDestroy(event->event);
  cudaGetLastError();
  delete event;
}

weft_status* EventRecord(weft_plugin_device* device, weft_plugin_event* event,
                         weft_plugin_stream* stream) {
  return Guarded([&]() -> weft_status* {
    weft_status* status =
        CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
    if (status != nullptr) return status;
    status = CudaStatus(cudaEventRecord(event->event, stream->stream),
                        "cudaEventRecord");
    if (status != nullptr) return status;
    std::lock_guard<std::mutex> lock(event->mutex);
    event->errors = stream->errors;
    return nullptr;
  });
}

std::shared_ptr<ErrorSlot> EventSlot(weft_plugin_event* event) {
  std::lock_guard<std::mutex> lock(event->mutex);
  return event->errors;
}

weft_status* EventSynchronize(weft_plugin_device* device,
                              weft_plugin_event* event) {
  return Guarded([&]() -> weft_status* {
    weft_status* status =
        CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
    if (status != nullptr) return status;
    status = CudaStatus(cudaEventSynchronize(event->event),
                        "CUDA work before the event");
    if (status != nullptr) return status;
    std::shared_ptr<ErrorSlot> slot = EventSlot(event);
    return slot != nullptr ? slot->TakeError() : nullptr;
  });
}

weft_status* StreamWaitEvent(weft_plugin_device* device,
                             weft_plugin_stream* stream,
                             weft_plugin_event* event) {
  return Guarded([&]() -> weft_status* {
    weft_status* status =
        CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice");
    if (status != nullptr) return status;
    status = CudaStatus(cudaStreamWaitEvent(stream->stream, event->event, 0),
                        "cudaStreamWaitEvent");
    if (status != nullptr) return status;
    std::shared_ptr<ErrorSlot> slot = EventSlot(event);
    if (slot != nullptr) stream->errors->LinkUpstream(slot);
    return nullptr;
  });
}

const weft_plugin_api kPluginApi = {
    sizeof(weft_plugin_api),
    "weft-cuda",
    WEFT_CUDA_PLUGIN_VERSION,
    "CUDA",
    DeviceCount,
    DeviceOpen,
    DeviceClose,
    DeviceProperties,
    MemoryAllocate,
    MemoryFree,
    CopyHostToDevice,
    CopyDeviceToHost,
    CopyDeviceToDevice,
    StreamCreate,
    StreamDestroy,
    StreamSynchronize,
    EventCreate,
    EventDestroy,
    EventRecord,
    EventSynchronize,
    StreamWaitEvent,
    // Nothing to do before unloading: cudaDeviceReset would also tear down
    // contexts that other libraries in the process share.
    nullptr,
#if WEFT_CUDA_HAVE_NCCL
    // 1.7: AllReduce and Broadcast over NCCL (collectives.cu), read by a
    // host that negotiated 1.7 (ChosenVersion); they answer UNAVAILABLE
    // where NCCL does not load.
    CollectiveUniqueId,
    CollectiveCommCreate,
    CollectiveAllReduce,
    CollectiveBroadcast,
    CollectiveCommDestroy,
#else
    // Built without nccl.h: collectives go through the runtime's MPI path.
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
#endif
};

// 1.7 where the host speaks it (its collective slots), else 1.0, which is
// all the rest of the plugin needs: an older host reads no further than
// its own table, so the one table serves both.
uint32_t ChosenVersion(const weft_plugin_init_args* args) {
  const uint32_t with_collectives =
      WEFT_VERSION_PACK(WEFT_PLUGIN_INTERFACE_MAJOR, 7);
  const bool has_max =
      args->struct_size >= offsetof(weft_plugin_init_args, host_max_version) +
                               sizeof(args->host_max_version);
  if (WEFT_CUDA_HAVE_NCCL && has_max &&
      WEFT_VERSION_MAJOR_OF(args->host_max_version) ==
          WEFT_PLUGIN_INTERFACE_MAJOR &&
      args->host_max_version >= with_collectives) {
    return with_collectives;
  }
  return WEFT_VERSION_PACK(WEFT_PLUGIN_INTERFACE_MAJOR, 0);
}

weft_status* Entry(weft_plugin_init_args* args) {
  weft_status* status = RegisterElementwiseKernels(args->registrar);
  if (status == nullptr) status = RegisterReductionKernels(args->registrar);
  if (status == nullptr) status = RegisterMatMulKernels(args->registrar);
#if WEFT_CUDA_HAVE_CUDNN
  if (status == nullptr) status = RegisterConvKernels(args->registrar);
#endif
  if (status == nullptr) status = RegisterPoolKernels(args->registrar);
  if (status == nullptr) status = RegisterTrainingKernels(args->registrar);
  if (status == nullptr) status = RegisterLayoutKernels(args->registrar);
  if (status == nullptr) status = RegisterRandomKernels(args->registrar);
  if (status == nullptr) {
    status = RegisterBatchMatMulKernels(args->registrar);
  }
  if (status == nullptr) status = RegisterLinalgKernels(args->registrar);
  if (status != nullptr) return status;
  args->plugin = &kPluginApi;
  return nullptr;
}

}  // namespace
}  // namespace weft_cuda

extern "C" WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(
    weft_plugin_init_args* args) {
  if (args == nullptr) return nullptr;
  // Every 1.0 slot, status_code included, is used somewhere.
  const weft_plugin_kit::Admission admission = weft_plugin_kit::Admit(
      args, "weft-cuda", weft_cuda::ChosenVersion(args),
      WEFT_PLUGIN_KIT_END_OF(weft_host_api, status_code));
  if (admission.host == nullptr) return admission.refusal;
  weft_cuda::g_host = admission.host;
  return weft_cuda::Guarded([&] { return weft_cuda::Entry(args); });
}
