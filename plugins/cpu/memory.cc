// Device memory is ordinary host memory (host_memory.h: large buffers on
// huge pages): handles are host pointers, copies are memcpy, and
// everything completes before returning (no streams).
#include <cstdlib>
#include <cstring>

#include "cpu_device.h"
#include "host_memory.h"
#include "kernel.h"

namespace weft_cpu {

weft_status* MemoryAllocate(weft_plugin_device* /*device*/, uint64_t bytes,
                            void** out_handle) {
  if (out_handle == nullptr) {
    return MakeStatus(WEFT_INVALID_ARGUMENT, "weft-cpu: out_handle is NULL");
  }
  *out_handle = nullptr;
  // The contract says bytes > 0; a zero request still gets a valid, unique
  // handle rather than an error.
  if (bytes == 0) bytes = 1;
  // 64-byte aligned: a cache line, and what AVX-512 loads want.
  void* p = bytes <= SIZE_MAX ? AllocateHost(static_cast<size_t>(bytes))
                              : nullptr;
  if (p == nullptr) {
    return MakeStatus(WEFT_RESOURCE_EXHAUSTED,
                      "weft-cpu: out of memory allocating %llu bytes",
                      static_cast<unsigned long long>(bytes));
  }
  *out_handle = p;
  return nullptr;
}

void MemoryFree(weft_plugin_device* /*device*/, void* handle) {
  FreeHost(handle);
}

namespace {

weft_status* CheckCopy(const void* src, const void* dst, uint64_t bytes) {
  if (bytes > 0 && (src == nullptr || dst == nullptr)) {
    return MakeStatus(WEFT_INVALID_ARGUMENT,
                      "weft-cpu: copy of %llu bytes with a NULL %s",
                      static_cast<unsigned long long>(bytes),
                      src == nullptr ? "source" : "destination");
  }
  return nullptr;
}

}  // namespace

weft_status* CopyHostToDevice(weft_plugin_device* /*device*/,
                              weft_plugin_stream* /*stream*/,
                              const void* host_src, void* dst,
                              uint64_t dst_offset, uint64_t bytes) {
  if (weft_status* s = CheckCopy(host_src, dst, bytes)) return s;
  if (bytes > 0) memcpy(static_cast<char*>(dst) + dst_offset, host_src, bytes);
  return nullptr;
}

weft_status* CopyDeviceToHost(weft_plugin_device* /*device*/,
                              weft_plugin_stream* /*stream*/, const void* src,
                              uint64_t src_offset, void* host_dst,
                              uint64_t bytes) {
  if (weft_status* s = CheckCopy(src, host_dst, bytes)) return s;
  if (bytes > 0) {
    memcpy(host_dst, static_cast<const char*>(src) + src_offset, bytes);
  }
  return nullptr;
}

weft_status* CopyDeviceToDevice(weft_plugin_device* /*device*/,
                                weft_plugin_stream* /*stream*/,
                                const void* src, uint64_t src_offset,
                                void* dst, uint64_t dst_offset,
                                uint64_t bytes) {
  if (weft_status* s = CheckCopy(src, dst, bytes)) return s;
  if (bytes > 0) {
    // memmove: the host may copy within one allocation.
    memmove(static_cast<char*>(dst) + dst_offset,
            static_cast<const char*>(src) + src_offset, bytes);
  }
  return nullptr;
}

}  // namespace weft_cpu
