#include "cl_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace weft_opencl {
namespace {

struct LoadResult {
  ClApi api;
  bool ok = false;
  std::string why;
};

LoadResult* Load() {
  // Never freed: slots may run while the process exits.
  auto* result = new LoadResult();
  // Only the loader: it dispatches to every installed ICD (PoCL, a GPU
  // vendor's driver), never one vendor library directly.
  void* library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    result->why = std::string("no OpenCL ICD loader: ") +
                  (error != nullptr ? error : "libOpenCL.so.1 not found");
    return result;
  }
#define WEFT_CL_RESOLVE(name)                                              \
  result->api.name = reinterpret_cast<decltype(result->api.name)>(         \
      dlsym(library, "cl" #name));                                         \
  if (result->api.name == nullptr) {                                       \
    result->why = "no OpenCL ICD loader: libOpenCL.so.1 lacks cl" #name    \
                  " (OpenCL 1.2 is needed)";                               \
    return result;                                                         \
  }
  WEFT_CL_FUNCTIONS(WEFT_CL_RESOLVE)
#undef WEFT_CL_RESOLVE
  result->ok = true;
  return result;
}

}  // namespace

const ClApi* LoadClApi(const char** why) {
  static LoadResult* result = Load();
  if (!result->ok) {
    if (why != nullptr) *why = result->why.c_str();
    return nullptr;
  }
  return &result->api;
}

const char* ClErrorName(cl_int error) {
  switch (error) {
#define WEFT_CL_ERROR(name) \
  case name:                \
    return #name;
    WEFT_CL_ERROR(CL_SUCCESS)
    WEFT_CL_ERROR(CL_DEVICE_NOT_FOUND)
    WEFT_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    WEFT_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    WEFT_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    WEFT_CL_ERROR(CL_OUT_OF_RESOURCES)
    WEFT_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    WEFT_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    WEFT_CL_ERROR(CL_MEM_COPY_OVERLAP)
    WEFT_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    WEFT_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    WEFT_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    WEFT_CL_ERROR(CL_MAP_FAILURE)
    WEFT_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    WEFT_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    WEFT_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    WEFT_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    WEFT_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    WEFT_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    WEFT_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    WEFT_CL_ERROR(CL_INVALID_VALUE)
    WEFT_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    WEFT_CL_ERROR(CL_INVALID_PLATFORM)
    WEFT_CL_ERROR(CL_INVALID_DEVICE)
    WEFT_CL_ERROR(CL_INVALID_CONTEXT)
    WEFT_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    WEFT_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    WEFT_CL_ERROR(CL_INVALID_HOST_PTR)
    WEFT_CL_ERROR(CL_INVALID_MEM_OBJECT)
    WEFT_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    WEFT_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    WEFT_CL_ERROR(CL_INVALID_SAMPLER)
    WEFT_CL_ERROR(CL_INVALID_BINARY)
    WEFT_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    WEFT_CL_ERROR(CL_INVALID_PROGRAM)
    WEFT_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    WEFT_CL_ERROR(CL_INVALID_KERNEL_NAME)
    WEFT_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    WEFT_CL_ERROR(CL_INVALID_KERNEL)
    WEFT_CL_ERROR(CL_INVALID_ARG_INDEX)
    WEFT_CL_ERROR(CL_INVALID_ARG_VALUE)
    WEFT_CL_ERROR(CL_INVALID_ARG_SIZE)
    WEFT_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    WEFT_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    WEFT_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    WEFT_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    WEFT_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    WEFT_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    WEFT_CL_ERROR(CL_INVALID_EVENT)
    WEFT_CL_ERROR(CL_INVALID_OPERATION)
    WEFT_CL_ERROR(CL_INVALID_GL_OBJECT)
    WEFT_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    WEFT_CL_ERROR(CL_INVALID_MIP_LEVEL)
    WEFT_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    WEFT_CL_ERROR(CL_INVALID_PROPERTY)
    WEFT_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    WEFT_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    WEFT_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    WEFT_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef WEFT_CL_ERROR
    default: {
      // Codes beyond 1.2 (or a vendor's) are rare: a small ring of buffers
      // keeps the returned text valid for the message being built.
      static thread_local char text[4][32];
      static thread_local int next = 0;
      char* buffer = text[next++ & 3];
      std::snprintf(buffer, sizeof text[0], "CL error %d",
                    static_cast<int>(error));
      return buffer;
    }
  }
}

}  // namespace weft_opencl
