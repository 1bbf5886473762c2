// Internal declarations shared by the OpenCL plugin's files.  Nothing here
// is seen by the host: it gets weft_plugin_entry and the tables, nothing
// else.
#ifndef WEFT_PLUGINS_OPENCL_OPENCL_PLUGIN_H_
#define WEFT_PLUGINS_OPENCL_OPENCL_PLUGIN_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

#include "cl_api.h"
#include "weft/plugin.h"

namespace weft_opencl {

// Set once by weft_plugin_entry, before any other slot can be called.
extern const weft_host_api* g_host;
// The OpenCL entry points; set by weft_plugin_entry when the ICD loader was
// found, and then never NULL where a device exists.
extern const ClApi* g_cl;

// A status from the host; NULL for WEFT_OK.  Formats into a fixed buffer.
weft_status* MakeStatus(int32_t code, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// NULL when `error` is CL_SUCCESS; otherwise a status saying `what` failed,
// with the error's name (CL_OUT_OF_RESOURCES...).
weft_status* ClStatus(cl_int error, const char* what);

// The weft code an OpenCL error maps to.
int32_t CodeFor(cl_int error);

// Runs `body` (returning weft_status*) so that no C++ exception crosses the
// ABI: each slot and kernel entry goes through here.
template <typename Body>
weft_status* Guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return MakeStatus(WEFT_RESOURCE_EXHAUSTED,
                      "weft-opencl: out of host memory");
  } catch (...) {
    return MakeStatus(WEFT_INTERNAL, "weft-opencl: unexpected C++ exception");
  }
}

class ProgramCache;
class ErrorSlot;

}  // namespace weft_opencl

// The ABI declares these opaque types in the global namespace.
struct weft_plugin_device {
  int index;                  // the plugin's device index
  cl_device_id id;
  cl_context context;
  // In-order queue for work without a stream: synchronous copies and the
  // reads of device-found errors.
  cl_command_queue queue;
  size_t max_work_group_size;
  bool fp64;
  bool correctly_rounded_sqrt;  // -cl-fp32-correctly-rounded-divide-sqrt
  bool is_cpu;  // CL_DEVICE_TYPE_CPU: kernels that suit SIMD loops
  std::unique_ptr<weft_opencl::ProgramCache> programs;
};

struct weft_plugin_stream {
  weft_plugin_device* device;
  cl_command_queue queue;  // in order: work runs as enqueued
  std::shared_ptr<weft_opencl::ErrorSlot> errors;
};

struct weft_plugin_event {
  std::mutex mutex;
  cl_event event = nullptr;  // the marker; NULL before the first record
  // The recording stream's errors, and its last checked launch at the
  // record: synchronizing reports failures up to that launch only.
  std::shared_ptr<weft_opencl::ErrorSlot> errors;
  uint32_t last_launch = 0;
};

namespace weft_opencl {

// Kernel registration, one function per source file.  `fp64` says whether
// every OpenCL device present runs double precision.
weft_status* RegisterElementwiseKernels(weft_kernel_registrar* registrar,
                                        bool fp64);
weft_status* RegisterMatMulKernels(weft_kernel_registrar* registrar,
                                   bool fp64);
weft_status* RegisterReductionKernels(weft_kernel_registrar* registrar,
                                      bool fp64);
weft_status* RegisterNnKernels(weft_kernel_registrar* registrar, bool fp64);
// Views that move no bytes: Reshape, ExpandDims, Squeeze, ReshapeLike.
weft_status* RegisterShapeKernels(weft_kernel_registrar* registrar);
weft_status* RegisterGradKernels(weft_kernel_registrar* registrar, bool fp64);
weft_status* RegisterArrayKernels(weft_kernel_registrar* registrar);
weft_status* RegisterConvKernels(weft_kernel_registrar* registrar, bool fp64);
weft_status* RegisterLayoutKernels(weft_kernel_registrar* registrar,
                                   bool fp64);
weft_status* RegisterRandomKernels(weft_kernel_registrar* registrar,
                                   bool fp64);
weft_status* RegisterLinalgKernels(weft_kernel_registrar* registrar,
                                   bool fp64);
weft_status* RegisterTrainKernels(weft_kernel_registrar* registrar,
                                  bool fp64);

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_OPENCL_PLUGIN_H_
