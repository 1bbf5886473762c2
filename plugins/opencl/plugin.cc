// The plugin's entry point and table: devices, memory, copies, streams and
// events.  Kernels live in elementwise.cc, matmul.cc, reduction.cc and
// nn.cc; their OpenCL C in sources_*.cc.
//
// OpenCL is reached only through the ICD loader, opened at run time
// (cl_api.cc): the plugin always loads, and without a loader, a platform or
// a device it reports zero devices and says which was missing.
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "error_slot.h"
#include "opencl_plugin.h"
#include "plugin_kit.h"
#include "program.h"

#ifndef WEFT_OPENCL_PLUGIN_VERSION
#define WEFT_OPENCL_PLUGIN_VERSION "unknown"
#endif

namespace weft_opencl {

const weft_host_api* g_host = nullptr;
const ClApi* g_cl = nullptr;

weft_status* MakeStatus(int32_t code, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return g_host->status_create(code, message);
}

int32_t CodeFor(cl_int error) {
  switch (error) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
      return WEFT_RESOURCE_EXHAUSTED;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_COMPILER_NOT_AVAILABLE:
      return WEFT_UNAVAILABLE;
    case CL_INVALID_VALUE:
    case CL_INVALID_BUFFER_SIZE:
    case CL_INVALID_MEM_OBJECT:
      return WEFT_INVALID_ARGUMENT;
    default:
      return WEFT_INTERNAL;
  }
}

weft_status* ClStatus(cl_int error, const char* what) {
  if (error == CL_SUCCESS) return nullptr;
  return MakeStatus(CodeFor(error), "%s failed: %s", what,
                    ClErrorName(error));
}

namespace {

// ---- Devices ----

// What the plugin learns of one device when it first looks.  Strings live
// for the process: the host may keep the property pointers until the
// plugin is unloaded, and may read them during exit.
struct DeviceRecord {
  cl_device_id id;
  std::string name, vendor;
  uint64_t memory_bytes = 0;
  double compute_gflops = 0;
  size_t max_work_group_size = 1;
  bool fp64 = false;
  bool correctly_rounded_sqrt = false;
  bool is_cpu = false;
};

struct Inventory {
  std::vector<DeviceRecord> devices;
  std::string why_none;  // when devices is empty
};

std::string DeviceString(cl_device_id id, cl_device_info what) {
  size_t size = 0;
  if (g_cl->GetDeviceInfo(id, what, 0, nullptr, &size) != CL_SUCCESS ||
      size == 0) {
    return std::string();
  }
  std::string text(size, '\0');
  if (g_cl->GetDeviceInfo(id, what, size, &text[0], nullptr) != CL_SUCCESS) {
    return std::string();
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

template <typename T>
T DeviceValue(cl_device_id id, cl_device_info what) {
  T value{};
  if (g_cl->GetDeviceInfo(id, what, sizeof(value), &value, nullptr) !=
      CL_SUCCESS) {
    return T{};
  }
  return value;
}

DeviceRecord Describe(cl_device_id id) {
  DeviceRecord record;
  record.id = id;
  record.name = DeviceString(id, CL_DEVICE_NAME);
  record.vendor = DeviceString(id, CL_DEVICE_VENDOR);
  record.memory_bytes = DeviceValue<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
  record.max_work_group_size =
      DeviceValue<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  if (record.max_work_group_size == 0) record.max_work_group_size = 1;
  // A rough peak for the cost model, not a measurement: every compute unit
  // retiring one fused multiply-add (2 flops) per lane of its preferred
  // float vector width per clock.  OpenCL says nothing of issue width or
  // FMA units, so this may be off by a small factor either way.
  const double units = DeviceValue<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
  const double mhz = DeviceValue<cl_uint>(id, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  double lanes =
      DeviceValue<cl_uint>(id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  if (lanes < 1) lanes = 1;
  record.compute_gflops = units * (mhz / 1000.0) * lanes * 2.0;
  record.fp64 = DeviceValue<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  record.correctly_rounded_sqrt =
      (DeviceValue<cl_device_fp_config>(id, CL_DEVICE_SINGLE_FP_CONFIG) &
       CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  record.is_cpu =
      (DeviceValue<cl_device_type>(id, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) != 0;
  // An OpenCL device that is the host's CPU (PoCL) shares its cores with the
  // CPU plugin: a peak estimate would count the same silicon twice and say
  // nothing of how well the OpenCL compiler uses it.  Report none, so the
  // runtime measures the device instead.
  if (record.is_cpu) record.compute_gflops = 0;
  return record;
}

Inventory* TakeInventory() {
  auto* inventory = new Inventory();  // never freed; see DeviceRecord
  const char* why = nullptr;
  if (LoadClApi(&why) == nullptr) {
    inventory->why_none = why;
    return inventory;
  }
  cl_uint platform_count = 0;
  cl_int error = g_cl->GetPlatformIDs(0, nullptr, &platform_count);
  // The loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no ICD is
  // installed.
  if (error != CL_SUCCESS || platform_count == 0) {
    inventory->why_none = std::string("no OpenCL platform: the ICD loader "
                                      "found none (clGetPlatformIDs: ") +
                          ClErrorName(error) + ")";
    return inventory;
  }
  std::vector<cl_platform_id> platforms(platform_count);
  error = g_cl->GetPlatformIDs(platform_count, platforms.data(), nullptr);
  if (error != CL_SUCCESS) {
    inventory->why_none = std::string("no OpenCL platform: clGetPlatformIDs "
                                      "failed: ") + ClErrorName(error);
    return inventory;
  }
  for (cl_platform_id platform : platforms) {
    cl_uint count = 0;
    if (g_cl->GetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr,
                           &count) != CL_SUCCESS || count == 0) {
      continue;
    }
    std::vector<cl_device_id> ids(count);
    if (g_cl->GetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(),
                           nullptr) != CL_SUCCESS) {
      continue;
    }
    for (cl_device_id id : ids) {
      if (DeviceValue<cl_bool>(id, CL_DEVICE_AVAILABLE)) {
        inventory->devices.push_back(Describe(id));
      }
    }
  }
  if (inventory->devices.empty()) {
    inventory->why_none = "no OpenCL device: " +
                          std::to_string(platform_count) +
                          " platform(s) report no available device";
  }
  return inventory;
}

const Inventory& GetInventory() {
  static Inventory* inventory = TakeInventory();
  return *inventory;
}

weft_status* DeviceCount(int32_t* out_count) {
  return Guarded([&]() -> weft_status* {
    *out_count = 0;
    const Inventory& inventory = GetInventory();
    if (inventory.devices.empty()) {
      return MakeStatus(WEFT_UNAVAILABLE, "%s", inventory.why_none.c_str());
    }
    *out_count = static_cast<int32_t>(inventory.devices.size());
    return nullptr;
  });
}

void DeviceClose(weft_plugin_device* device) {
  if (device == nullptr) return;
  device->programs.reset();
  if (device->queue != nullptr) g_cl->ReleaseCommandQueue(device->queue);
  if (device->context != nullptr) g_cl->ReleaseContext(device->context);
  delete device;
}

weft_status* DeviceOpen(int32_t index, weft_plugin_device** out) {
  return Guarded([&]() -> weft_status* {
    *out = nullptr;
    const Inventory& inventory = GetInventory();
    if (index < 0 || index >= static_cast<int32_t>(inventory.devices.size())) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "OpenCL device %d does not exist (%zu devices)",
                        static_cast<int>(index), inventory.devices.size());
    }
    const DeviceRecord& record = inventory.devices[index];
    std::unique_ptr<weft_plugin_device, void (*)(weft_plugin_device*)> device(
        new weft_plugin_device(), DeviceClose);
    device->index = index;
    device->id = record.id;
    device->max_work_group_size = record.max_work_group_size;
    device->fp64 = record.fp64;
    device->correctly_rounded_sqrt = record.correctly_rounded_sqrt;
    device->is_cpu = record.is_cpu;
    cl_int error = CL_SUCCESS;
    // A context per device: events and buffers never cross devices.
    device->context = g_cl->CreateContext(nullptr, 1, &record.id, nullptr,
                                          nullptr, &error);
    if (error != CL_SUCCESS) {
      device->context = nullptr;
      return ClStatus(error, "clCreateContext");
    }
    device->queue =
        g_cl->CreateCommandQueue(device->context, record.id, 0, &error);
    if (error != CL_SUCCESS) {
      device->queue = nullptr;
      return ClStatus(error, "clCreateCommandQueue");
    }
    device->programs.reset(new ProgramCache(device.get()));
    *out = device.release();
    return nullptr;
  });
}

// Whether the caller's struct, by its struct_size, has room for `field`.
#define WEFT_OPENCL_FITS(object, field)                        \
  (offsetof(std::remove_pointer_t<decltype(object)>, field) +  \
       sizeof((object)->field) <=                              \
   (object)->struct_size)

weft_status* DeviceProperties(weft_plugin_device* device,
                              weft_device_properties* out) {
  const DeviceRecord& record = GetInventory().devices[device->index];
  if (WEFT_OPENCL_FITS(out, description)) {
    out->description = record.name.c_str();
  }
  if (WEFT_OPENCL_FITS(out, vendor)) out->vendor = record.vendor.c_str();
  if (WEFT_OPENCL_FITS(out, memory_bytes)) {
    out->memory_bytes = record.memory_bytes;
  }
  if (WEFT_OPENCL_FITS(out, compute_gflops)) {
    out->compute_gflops = record.compute_gflops;
  }
  // Handles are cl_mem objects, even where the device is the host's CPU:
  // the host must copy.
  if (WEFT_OPENCL_FITS(out, flags)) out->flags = 0;
  // Host 1.6: float64 kernels are registered whatever the devices are; a
  // device without cl_khr_fp64 keeps float64 nodes off itself here.
  if (WEFT_OPENCL_FITS(out, unsupported_dtypes)) {
    out->unsupported_dtypes =
        record.fp64 ? 0 : uint64_t{1} << WEFT_FLOAT64;
  }
  return nullptr;
}

// ---- Memory ----

weft_status* MemoryAllocate(weft_plugin_device* device, uint64_t bytes,
                            void** out_handle) {
  *out_handle = nullptr;
  if (bytes == 0) {
    return MakeStatus(WEFT_INVALID_ARGUMENT,
                      "memory_allocate: 0 bytes requested on OpenCL device %d",
                      device->index);
  }
  // Buffers are aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least 128
  // bytes in OpenCL 1.2's full profile; tensors add byte offsets.
  cl_int error = CL_SUCCESS;
  cl_mem buffer = g_cl->CreateBuffer(device->context, CL_MEM_READ_WRITE,
                                     static_cast<size_t>(bytes), nullptr,
                                     &error);
  if (error != CL_SUCCESS) {
    // A size above CL_DEVICE_MAX_MEM_ALLOC_SIZE is memory the device cannot
    // give: RESOURCE_EXHAUSTED, as the plugin interface asks of every
    // allocation that does not fit (weft conformance checks it).
    const int32_t code = error == CL_INVALID_BUFFER_SIZE
                             ? WEFT_RESOURCE_EXHAUSTED
                             : CodeFor(error);
    return MakeStatus(code,
                      "clCreateBuffer of %llu bytes on OpenCL device %d "
                      "failed: %s",
                      static_cast<unsigned long long>(bytes), device->index,
                      ClErrorName(error));
  }
  *out_handle = buffer;
  return nullptr;
}

void MemoryFree(weft_plugin_device*, void* handle) {
  // OpenCL keeps the buffer alive until queued commands that use it finish.
  if (handle != nullptr) g_cl->ReleaseMemObject(static_cast<cl_mem>(handle));
}

// ---- Copies ----

// With a stream the copy is enqueued and returns; without one it runs on the
// device's own queue and is complete on return.
cl_command_queue QueueFor(weft_plugin_device* device,
                          weft_plugin_stream* stream) {
  return stream != nullptr ? stream->queue : device->queue;
}

// Waits for `event` (which it releases) when the copy had no stream.
weft_status* Complete(cl_event event, const char* what) {
  cl_int error = g_cl->WaitForEvents(1, &event);
  cl_int status = CL_COMPLETE;
  if (error == CL_SUCCESS) {
    error = g_cl->GetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS,
                               sizeof(status), &status, nullptr);
  }
  g_cl->ReleaseEvent(event);
  if (error == CL_SUCCESS && status < 0) error = status;
  return ClStatus(error, what);
}

weft_status* CopyHostToDevice(weft_plugin_device* device,
                              weft_plugin_stream* stream, const void* host_src,
                              void* dst, uint64_t dst_offset, uint64_t bytes) {
  if (bytes == 0) return nullptr;
  cl_int error = g_cl->EnqueueWriteBuffer(
      QueueFor(device, stream), static_cast<cl_mem>(dst),
      stream == nullptr ? CL_TRUE : CL_FALSE, dst_offset, bytes, host_src, 0,
      nullptr, nullptr);
  return ClStatus(error, "copy host to OpenCL device (clEnqueueWriteBuffer)");
}

weft_status* CopyDeviceToHost(weft_plugin_device* device,
                              weft_plugin_stream* stream, const void* src,
                              uint64_t src_offset, void* host_dst,
                              uint64_t bytes) {
  if (bytes == 0) return nullptr;
  cl_int error = g_cl->EnqueueReadBuffer(
      QueueFor(device, stream),
      static_cast<cl_mem>(const_cast<void*>(src)),
      stream == nullptr ? CL_TRUE : CL_FALSE, src_offset, bytes, host_dst, 0,
      nullptr, nullptr);
  return ClStatus(error, "copy OpenCL device to host (clEnqueueReadBuffer)");
}

weft_status* CopyDeviceToDevice(weft_plugin_device* device,
                                weft_plugin_stream* stream, const void* src,
                                uint64_t src_offset, void* dst,
                                uint64_t dst_offset, uint64_t bytes) {
  if (bytes == 0) return nullptr;
  const char* what = "copy within OpenCL device (clEnqueueCopyBuffer)";
  cl_event event = nullptr;
  cl_int error = g_cl->EnqueueCopyBuffer(
      QueueFor(device, stream), static_cast<cl_mem>(const_cast<void*>(src)),
      static_cast<cl_mem>(dst), src_offset, dst_offset, bytes, 0, nullptr,
      stream == nullptr ? &event : nullptr);
  if (error != CL_SUCCESS) return ClStatus(error, what);
  return stream == nullptr ? Complete(event, what) : nullptr;
}

// ---- Streams and events ----

weft_status* StreamCreate(weft_plugin_device* device,
                          weft_plugin_stream** out) {
  return Guarded([&]() -> weft_status* {
    *out = nullptr;
    cl_int error = CL_SUCCESS;
    cl_command_queue queue =
        g_cl->CreateCommandQueue(device->context, device->id, 0, &error);
    if (error != CL_SUCCESS) return ClStatus(error, "clCreateCommandQueue");
    std::unique_ptr<weft_plugin_stream> stream(new weft_plugin_stream());
    stream->device = device;
    stream->queue = queue;
    if (weft_status* status =
            ErrorSlot::Create(device, queue, &stream->errors)) {
      g_cl->ReleaseCommandQueue(queue);
      return status;
    }
    *out = stream.release();
    return nullptr;
  });
}

void StreamDestroy(weft_plugin_device*, weft_plugin_stream* stream) {
  if (stream == nullptr) return;
  // Queued reads write into the error slot, which goes with the stream.
  g_cl->Finish(stream->queue);
  stream->errors.reset();
  g_cl->ReleaseCommandQueue(stream->queue);
  delete stream;
}

// A marker after everything enqueued on the stream so far.
weft_status* EnqueueMarker(weft_plugin_device* device,
                           weft_plugin_stream* stream, cl_event* out) {
  cl_int error =
      g_cl->EnqueueMarkerWithWaitList(stream->queue, 0, nullptr, out);
  if (error == CL_SUCCESS) return nullptr;
  return MakeStatus(CodeFor(error),
                    "OpenCL device %d: clEnqueueMarkerWithWaitList failed: %s",
                    device->index, ClErrorName(error));
}

weft_status* StreamSynchronize(weft_plugin_device* device,
                               weft_plugin_stream* stream) {
  return Guarded([&]() -> weft_status* {
    cl_event marker = nullptr;
    if (weft_status* status = EnqueueMarker(device, stream, &marker)) {
      return status;
    }
    // The marker's status says whether the work before it failed; clFinish
    // alone would report only some implementations' failures.
    if (weft_status* status = Complete(marker, "OpenCL work on the stream")) {
      return status;
    }
    return stream->errors->TakeError(stream->errors->last_launch());
  });
}

weft_status* EventCreate(weft_plugin_device*, weft_plugin_event** out) {
  return Guarded([&]() -> weft_status* {
    *out = new weft_plugin_event();
    return nullptr;
  });
}

void EventDestroy(weft_plugin_device*, weft_plugin_event* event) {
  if (event == nullptr) return;
  // Releasing a marker does not cancel it; the queue keeps what it needs.
  if (event->event != nullptr) g_cl->ReleaseEvent(event->event);
  delete event;
}

weft_status* EventRecord(weft_plugin_device* device, weft_plugin_event* event,
                         weft_plugin_stream* stream) {
  return Guarded([&]() -> weft_status* {
    const uint32_t last_launch = stream->errors->last_launch();
    cl_event marker = nullptr;
    if (weft_status* status = EnqueueMarker(device, stream, &marker)) {
      return status;
    }
    // Another queue may wait for the marker: the work must be submitted.
    g_cl->Flush(stream->queue);
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->event != nullptr) g_cl->ReleaseEvent(event->event);
    event->event = marker;
    event->errors = stream->errors;
    event->last_launch = last_launch;
    return nullptr;
  });
}

weft_status* EventSynchronize(weft_plugin_device*, weft_plugin_event* event) {
  return Guarded([&]() -> weft_status* {
    cl_event marker = nullptr;
    std::shared_ptr<ErrorSlot> errors;
    uint32_t last_launch = 0;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      if (event->event == nullptr) return nullptr;  // never recorded
      marker = event->event;
      g_cl->RetainEvent(marker);
      errors = event->errors;
      last_launch = event->last_launch;
    }
    if (weft_status* status = Complete(marker, "OpenCL work before the event")) {
      return status;
    }
    return errors->TakeError(last_launch);
  });
}

weft_status* StreamWaitEvent(weft_plugin_device* device,
                             weft_plugin_stream* stream,
                             weft_plugin_event* event) {
  return Guarded([&]() -> weft_status* {
    cl_event marker = nullptr;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      if (event->event == nullptr) return nullptr;  // never recorded
      marker = event->event;
      g_cl->RetainEvent(marker);
    }
    cl_int error =
        g_cl->EnqueueBarrierWithWaitList(stream->queue, 1, &marker, nullptr);
    g_cl->ReleaseEvent(marker);
    if (error != CL_SUCCESS) {
      return MakeStatus(CodeFor(error),
                        "OpenCL device %d: clEnqueueBarrierWithWaitList "
                        "failed: %s",
                        device->index, ClErrorName(error));
    }
    return nullptr;
  });
}

const weft_plugin_api kPluginApi = {
    sizeof(weft_plugin_api),
    "weft-opencl",
    WEFT_OPENCL_PLUGIN_VERSION,
    "OPENCL",
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
    // Nothing to release: the loader stays open for the process.
    nullptr,
    // 1.7's collectives: none (the plugin speaks 1.0), so AllReduce and
    // Broadcast on OpenCL devices go through MPI in host memory.
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

constexpr uint32_t kChosenVersion =
    WEFT_VERSION_PACK(WEFT_PLUGIN_INTERFACE_MAJOR, 0);

weft_status* Entry(weft_plugin_init_args* args) {
  g_cl = LoadClApi(nullptr);
  // A 1.6 host keeps float64 nodes off devices that say they cannot run
  // them (DeviceProperties): float64 kernels are registered without asking
  // the platform, which is then started only when a device is wanted —
  // PoCL's start costs ~60 MiB and tens of milliseconds in every process
  // that merely has this plugin on its path.  An older host places by
  // device type only, so there the kernels are registered where every
  // device runs them, which needs the inventory now.
  bool fp64 = true;
  if (WEFT_VERSION_MINOR_OF(args->host_max_version) < 6 ||
      WEFT_VERSION_MAJOR_OF(args->host_max_version) !=
          WEFT_PLUGIN_INTERFACE_MAJOR) {
    const Inventory& inventory = GetInventory();
    fp64 = !inventory.devices.empty();
    for (const DeviceRecord& record : inventory.devices) fp64 &= record.fp64;
  }
  weft_status* status = RegisterElementwiseKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterMatMulKernels(args->registrar, fp64);
  if (status == nullptr) {
    status = RegisterReductionKernels(args->registrar, fp64);
  }
  if (status == nullptr) status = RegisterNnKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterShapeKernels(args->registrar);
  if (status == nullptr) status = RegisterGradKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterTrainKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterArrayKernels(args->registrar);
  if (status == nullptr) status = RegisterConvKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterLayoutKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterRandomKernels(args->registrar, fp64);
  if (status == nullptr) status = RegisterLinalgKernels(args->registrar, fp64);
  if (status != nullptr) return status;
  args->plugin = &kPluginApi;
  return nullptr;
}

}  // namespace
}  // namespace weft_opencl

extern "C" WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(
    weft_plugin_init_args* args) {
  if (args == nullptr) return nullptr;
  // Every 1.0 slot, status_code included, is used somewhere.
  const weft_plugin_kit::Admission admission = weft_plugin_kit::Admit(
      args, "weft-opencl", weft_opencl::kChosenVersion,
      WEFT_PLUGIN_KIT_END_OF(weft_host_api, status_code));
  if (admission.host == nullptr) return admission.refusal;
  weft_opencl::g_host = admission.host;
  return weft_opencl::Guarded([&] { return weft_opencl::Entry(args); });
}
