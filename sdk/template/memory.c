/* Device memory: opaque handles, and the three copies.
 *
 * A real plugin calls its driver's allocator here and hands out whatever
 * that returns (a CUdeviceptr, a cl_mem).  The template hands out pointers
 * to a tpl_buffer, never to the bytes, for the same effect: the host cannot
 * use a handle as data, and has to go through these copies.
 */
#include "template.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The plugin interface promises 64-byte alignment. */
#define TPL_ALIGNMENT 64

weft_status* tpl_memory_allocate(weft_plugin_device* device, uint64_t bytes,
                                 void** out_handle) {
  if (device == NULL || out_handle == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: memory_allocate: NULL argument");
  *out_handle = NULL;
  if (bytes == 0)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: memory_allocate of 0 bytes");
  if (bytes > TPL_DEVICE_MEMORY_BYTES)
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: %" PRIu64 " bytes is more than the "
                      "device's %" PRIu64, bytes, TPL_DEVICE_MEMORY_BYTES);
  uint64_t in_use = atomic_fetch_add(&device->bytes_in_use, bytes) + bytes;
  if (in_use > TPL_DEVICE_MEMORY_BYTES) {
    atomic_fetch_sub(&device->bytes_in_use, bytes);
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of device memory allocating %" PRIu64
                      " bytes (%" PRIu64 " of %" PRIu64 " in use)",
                      bytes, in_use - bytes, TPL_DEVICE_MEMORY_BYTES);
  }
  tpl_buffer* buffer = malloc(sizeof *buffer);
  size_t rounded = (size_t)((bytes + TPL_ALIGNMENT - 1) &
                            ~(uint64_t)(TPL_ALIGNMENT - 1));
  unsigned char* data = buffer ? aligned_alloc(TPL_ALIGNMENT, rounded) : NULL;
  if (data == NULL) {
    free(buffer);
    atomic_fetch_sub(&device->bytes_in_use, bytes);
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of host memory allocating %" PRIu64
                      " bytes", bytes);
  }
  /* Fresh memory reads as NaN (float) or -1 (integers): a host that uses
   * an output before the kernel wrote it gets an obviously wrong answer,
   * not plausible zeros. */
  memset(data, 0xff, rounded);
  buffer->magic = TPL_BUFFER_MAGIC;
  buffer->size = bytes;
  buffer->bytes = data;
  buffer->device = device;
  atomic_init(&buffer->refs, 1);
  atomic_init(&buffer->queued_writes, 0);
  *out_handle = buffer;
  return NULL;
}

void tpl_buffer_unref(tpl_buffer* buffer) {
  if (atomic_fetch_sub(&buffer->refs, 1) != 1) return;
  atomic_fetch_sub(&buffer->device->bytes_in_use, buffer->size);
  free(buffer->bytes);
  buffer->magic = 0;
  free(buffer);
}

void tpl_memory_free(weft_plugin_device* device, void* handle) {
  (void)device;
  if (handle == NULL) return;
  tpl_buffer* buffer = handle;
  if (buffer->magic != TPL_BUFFER_MAGIC) {
    /* No status to return: say it loudly, and leak rather than free
     * something that is not ours. */
    tpl_log(WEFT_LOG_ERROR,
            "weft-template: memory_free of %p, which is %s", handle,
            buffer->magic == TPL_BUFFER_FREED ? "already freed"
                                              : "not a handle of this device");
    return;
  }
  buffer->magic = TPL_BUFFER_FREED;
  if (atomic_load(&buffer->refs) > 1)
    tpl_log(WEFT_LOG_ERROR,
            "weft-template: host bug: memory_free of %p while queued work "
            "still uses it (free only after synchronizing); the bytes stay "
            "alive until that work is done", handle);
  tpl_buffer_unref(buffer);
}

tpl_buffer* tpl_buffer_resolve(const void* handle, uint64_t offset,
                               uint64_t bytes, const char* what,
                               weft_status** out_error) {
  *out_error = NULL;
  if (handle == NULL) {
    *out_error = tpl_status(WEFT_INVALID_ARGUMENT,
                            "weft-template: %s: NULL device handle", what);
    return NULL;
  }
  const tpl_buffer* buffer = handle;
  if (buffer->magic == TPL_BUFFER_FREED) {
    *out_error = tpl_status(WEFT_FAILED_PRECONDITION,
                            "weft-template: %s: handle %p was freed", what,
                            handle);
    return NULL;
  }
  if (buffer->magic != TPL_BUFFER_MAGIC) {
    *out_error = tpl_status(
        WEFT_INVALID_ARGUMENT,
        "weft-template: %s: %p is not an allocation of this device (host "
        "memory where a device handle belongs?)", what, handle);
    return NULL;
  }
  if (offset > buffer->size || bytes > buffer->size - offset) {
    *out_error = tpl_status(
        WEFT_OUT_OF_RANGE,
        "weft-template: %s: bytes [%" PRIu64 ", %" PRIu64 ") lie outside the "
        "%" PRIu64 "-byte allocation %p", what, offset, offset + bytes,
        buffer->size, handle);
    return NULL;
  }
  return (tpl_buffer*)buffer;
}

/* One copy; either side is a buffer or host memory. */
typedef struct copy_work {
  tpl_work base;
  tpl_buffer* src;               /* NULL: host_src */
  const unsigned char* host_src;
  uint64_t src_offset;
  tpl_buffer* dst;               /* NULL: host_dst */
  unsigned char* host_dst;
  uint64_t dst_offset;
  uint64_t bytes;
} copy_work;

static void run_copy(tpl_work* self, tpl_error* error) {
  (void)error;
  copy_work* work = (copy_work*)self;
  const unsigned char* from =
      work->src ? work->src->bytes + work->src_offset : work->host_src;
  unsigned char* to =
      work->dst ? work->dst->bytes + work->dst_offset : work->host_dst;
  /* A device-to-device copy may stay inside one allocation and overlap. */
  memmove(to, from, (size_t)work->bytes);
}

static weft_status* submit_copy(weft_plugin_stream* stream, copy_work* work) {
  if (stream == NULL) {
    /* Nothing orders a copy outside every stream with queued work: if they
     * share memory the result depends on timing.  Refuse instead, so the
     * host's bug shows up here and not as wrong numbers later. */
    int src_busy = work->src && tpl_buffer_busy(work->src, 0);
    int dst_busy = work->dst && tpl_buffer_busy(work->dst, 1);
    if (src_busy || dst_busy) {
      free(work);
      return tpl_status(
          WEFT_FAILED_PRECONDITION,
          "weft-template: host bug: a copy without a stream %s memory that "
          "queued work still %s; synchronize that work first",
          dst_busy ? "writes" : "reads", dst_busy ? "uses" : "writes");
    }
  }
  work->base.kind = TPL_WORK_TASK;
  work->base.run = run_copy;
  if (work->src) tpl_work_use(&work->base, work->src, 0);
  if (work->dst) tpl_work_use(&work->base, work->dst, 1);
  return tpl_submit(stream, &work->base);
}

static copy_work* new_copy_work(void) {
  return calloc(1, sizeof(copy_work));
}

#define TPL_OUT_OF_MEMORY(what) \
  tpl_status(WEFT_RESOURCE_EXHAUSTED, "weft-template: out of memory queuing " what)

weft_status* tpl_copy_host_to_device(weft_plugin_device* device,
                                     weft_plugin_stream* stream,
                                     const void* host_src, void* dst,
                                     uint64_t dst_offset, uint64_t bytes) {
  (void)device;
  if (bytes == 0) return NULL;
  if (host_src == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: copy_host_to_device from NULL");
  weft_status* status = NULL;
  tpl_buffer* to = tpl_buffer_resolve(dst, dst_offset, bytes,
                                      "copy_host_to_device destination",
                                      &status);
  if (to == NULL) return status;
  copy_work* work = new_copy_work();
  if (work == NULL) return TPL_OUT_OF_MEMORY("a copy");
  /* With a stream, host_src is read when the copy runs: the interface
   * makes the host keep it alive until an event after the copy. */
  work->host_src = host_src;
  work->dst = to;
  work->dst_offset = dst_offset;
  work->bytes = bytes;
  return submit_copy(stream, work);
}

weft_status* tpl_copy_device_to_host(weft_plugin_device* device,
                                     weft_plugin_stream* stream,
                                     const void* src, uint64_t src_offset,
                                     void* host_dst, uint64_t bytes) {
  (void)device;
  if (bytes == 0) return NULL;
  if (host_dst == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: copy_device_to_host into NULL");
  weft_status* status = NULL;
  tpl_buffer* from = tpl_buffer_resolve(src, src_offset, bytes,
                                        "copy_device_to_host source", &status);
  if (from == NULL) return status;
  copy_work* work = new_copy_work();
  if (work == NULL) return TPL_OUT_OF_MEMORY("a copy");
  work->src = from;
  work->src_offset = src_offset;
  work->host_dst = host_dst;
  work->bytes = bytes;
  return submit_copy(stream, work);
}

weft_status* tpl_copy_device_to_device(weft_plugin_device* device,
                                       weft_plugin_stream* stream,
                                       const void* src, uint64_t src_offset,
                                       void* dst, uint64_t dst_offset,
                                       uint64_t bytes) {
  (void)device;
  if (bytes == 0) return NULL;
  weft_status* status = NULL;
  tpl_buffer* from = tpl_buffer_resolve(
      src, src_offset, bytes, "copy_device_to_device source", &status);
  if (from == NULL) return status;
  tpl_buffer* to = tpl_buffer_resolve(
      dst, dst_offset, bytes, "copy_device_to_device destination", &status);
  if (to == NULL) return status;
  copy_work* work = new_copy_work();
  if (work == NULL) return TPL_OUT_OF_MEMORY("a copy");
  work->src = from;
  work->src_offset = src_offset;
  work->dst = to;
  work->dst_offset = dst_offset;
  work->bytes = bytes;
  return submit_copy(stream, work);
}
