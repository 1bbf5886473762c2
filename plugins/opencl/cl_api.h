// The OpenCL entry points the plugin uses, found at run time in the ICD
// loader (libOpenCL.so.1).  The plugin links nothing of OpenCL, so it loads
// on a machine without it and reports zero devices with the reason instead
// of failing to load.
#ifndef WEFT_PLUGINS_OPENCL_CL_API_H_
#define WEFT_PLUGINS_OPENCL_CL_API_H_

#define CL_TARGET_OPENCL_VERSION 120
// clCreateCommandQueue is the 1.2 spelling; 2.0 deprecated it for
// clCreateCommandQueueWithProperties, which 1.2 platforms lack.
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

namespace weft_opencl {

// One member per function, named as in cl.h without the "cl" prefix.
struct ClApi {
#define WEFT_CL_FUNCTIONS(X)        \
  X(GetPlatformIDs)                 \
  X(GetPlatformInfo)                \
  X(GetDeviceIDs)                   \
  X(GetDeviceInfo)                  \
  X(CreateContext)                  \
  X(ReleaseContext)                 \
  X(CreateCommandQueue)             \
  X(ReleaseCommandQueue)            \
  X(CreateBuffer)                   \
  X(ReleaseMemObject)               \
  X(EnqueueReadBuffer)              \
  X(EnqueueWriteBuffer)             \
  X(EnqueueCopyBuffer)              \
  X(EnqueueFillBuffer)              \
  X(EnqueueMarkerWithWaitList)      \
  X(EnqueueBarrierWithWaitList)     \
  X(Flush)                          \
  X(Finish)                         \
  X(WaitForEvents)                  \
  X(GetEventInfo)                   \
  X(RetainEvent)                    \
  X(ReleaseEvent)                   \
  X(CreateProgramWithSource)        \
  X(CreateProgramWithBinary)        \
  X(GetProgramInfo)                 \
  X(BuildProgram)                   \
  X(GetProgramBuildInfo)            \
  X(ReleaseProgram)                 \
  X(CreateKernel)                   \
  X(ReleaseKernel)                  \
  X(SetKernelArg)                   \
  X(EnqueueNDRangeKernel)
#define WEFT_CL_MEMBER(name) decltype(&::cl##name) name = nullptr;
  WEFT_CL_FUNCTIONS(WEFT_CL_MEMBER)
#undef WEFT_CL_MEMBER
};

// The loaded API, or NULL when the ICD loader is missing or lacks an entry
// point; then *why (if given) says which.  Loaded once per process; the
// library is never closed, since the host may call slots during exit.
const ClApi* LoadClApi(const char** why);

// "CL_OUT_OF_RESOURCES" and so on; "CL error N" for codes it does not know.
const char* ClErrorName(cl_int error);

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_CL_API_H_
