/* The template plugin's internals, shared by its files.
 *
 * The template is a device whose memory the host cannot read: allocations
 * are opaque handles, and every kernel and copy given a stream runs later,
 * on that stream's worker thread.  A host that works with it makes no
 * assumption a real accelerator would break.
 *
 * This header must be the first one every file includes: pthreads and
 * nanosleep are POSIX, which -std=c11 hides unless asked for.
 */
#ifndef WEFT_SDK_TEMPLATE_H_
#define WEFT_SDK_TEMPLATE_H_

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "weft/plugin.h"
#include "weft/tensor.h"

/* True when a struct whose sender set `struct_size` reaches `field`: the
 * versioning rule that lets either side be older than the other. */
#define TPL_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

#define TPL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

/* ---- Host services (plugin.c) ------------------------------------------ */

/* The host's table, set once by weft_plugin_entry before anything else can
 * run. */
extern const weft_host_api* tpl_host;

/* ---- Errors (status.c) ------------------------------------------------- */

/* An error kept inside the plugin.  Asynchronous work cannot hand a
 * weft_status* to anyone when it fails, and a status has one owner, while
 * one failure may have to be reported by several events; so work records
 * the code and text, and each report creates its own status. */
typedef struct tpl_error {
  int32_t code; /* WEFT_OK when there is no error */
  char message[448];
} tpl_error;

weft_status* tpl_status(int32_t code, const char* format, ...)
    TPL_PRINTF(2, 3);
/* A new status for `error`; NULL when it holds no error. */
weft_status* tpl_status_from_error(const tpl_error* error);
void tpl_error_set(tpl_error* error, int32_t code, const char* format, ...)
    TPL_PRINTF(3, 4);
void tpl_log(int32_t level, const char* format, ...) TPL_PRINTF(2, 3);
const char* tpl_dtype_name(int32_t dtype);

/* ---- Devices (device.c) ------------------------------------------------ */

/* Pretend capacity, so that RESOURCE_EXHAUSTED is a path the host sees. */
#define TPL_DEVICE_MEMORY_BYTES (UINT64_C(1) << 30)

struct weft_plugin_device {
  int32_t index;
  atomic_uint_fast64_t bytes_in_use;
  /* Microseconds every stream worker sleeps before each item
   * (WEFT_TEMPLATE_DELAY_US): a slow device makes a host's ordering bugs
   * show up every time instead of once in a while. */
  long delay_us;
};

weft_status* tpl_device_count(int32_t* out_count);
weft_status* tpl_device_open(int32_t index, weft_plugin_device** out);
void tpl_device_close(weft_plugin_device* device);
weft_status* tpl_device_properties(weft_plugin_device* device,
                                   weft_device_properties* out);

/* ---- Memory (memory.c) ------------------------------------------------- */

/* Two marks, so that a handle used after its free and a pointer that never
 * was a handle get different messages.  ASCII, to read in a debugger. */
#define TPL_BUFFER_MAGIC UINT64_C(0x54504c4255464d41) /* "TPLBUFMA" */
#define TPL_BUFFER_FREED UINT64_C(0x54504c4652454544) /* "TPLFREED" */

/* What a handle points to.  The host gets a pointer to this, never to the
 * bytes, so a host that treats a handle as data reads garbage, and the
 * plugin notices (wrong magic) when it hands that garbage back. */
typedef struct tpl_buffer {
  uint64_t magic;
  uint64_t size;
  unsigned char* bytes;
  weft_plugin_device* device;
  /* One for the host until memory_free, plus one per queued work item that
   * uses the buffer: the bytes outlive a free the host made too early. */
  atomic_int refs;
  /* Queued work items that write the buffer. */
  atomic_int queued_writes;
} tpl_buffer;

weft_status* tpl_memory_allocate(weft_plugin_device* device, uint64_t bytes,
                                 void** out_handle);
void tpl_memory_free(weft_plugin_device* device, void* handle);

/* The buffer behind `handle` when it is one of ours, still allocated, and
 * [offset, offset + bytes) lies inside it; otherwise NULL and *out_error
 * says why, naming `what` ("input 1 of node 'x'"). */
tpl_buffer* tpl_buffer_resolve(const void* handle, uint64_t offset,
                               uint64_t bytes, const char* what,
                               weft_status** out_error);
void tpl_buffer_unref(tpl_buffer* buffer);

weft_status* tpl_copy_host_to_device(weft_plugin_device* device,
                                     weft_plugin_stream* stream,
                                     const void* host_src, void* dst,
                                     uint64_t dst_offset, uint64_t bytes);
weft_status* tpl_copy_device_to_host(weft_plugin_device* device,
                                     weft_plugin_stream* stream,
                                     const void* src, uint64_t src_offset,
                                     void* host_dst, uint64_t bytes);
weft_status* tpl_copy_device_to_device(weft_plugin_device* device,
                                       weft_plugin_stream* stream,
                                       const void* src, uint64_t src_offset,
                                       void* dst, uint64_t dst_offset,
                                       uint64_t bytes);

/* ---- Streams and events (stream.c) ------------------------------------- */

typedef enum tpl_work_kind {
  TPL_WORK_TASK,   /* a copy or a kernel: `run` */
  TPL_WORK_RECORD, /* event_record's marker */
  TPL_WORK_WAIT    /* stream_wait_event's barrier */
} tpl_work_kind;

#define TPL_WORK_MAX_BUFFERS 3

/* One item of a stream's FIFO.  Tasks embed it as their first member and
 * are allocated in one block, so the worker releases any item with free().
 * Everything a task needs is copied into it when it is queued: the kernel
 * context, the dims and the host's strings are gone by the time it runs. */
typedef struct tpl_work tpl_work;
struct tpl_work {
  tpl_work* next;
  tpl_work_kind kind;
  /* Does the work; on failure fills `error` and returns.  Not called once
   * the stream holds an error: later work would read what failed work
   * never wrote. */
  void (*run)(tpl_work* self, tpl_error* error);
  tpl_buffer* buffers[TPL_WORK_MAX_BUFFERS];
  uint8_t writes[TPL_WORK_MAX_BUFFERS];
  int32_t num_buffers;
  weft_plugin_event* event; /* RECORD and WAIT */
  uint64_t sequence;        /* which record of `event` */
};

/* Notes that `work` uses `buffer` (and whether it writes it).  Once the
 * work is queued, the buffer stays alive until the work is done. */
void tpl_work_use(tpl_work* work, tpl_buffer* buffer, int writes);

/* Runs `work` on `stream`, taking ownership of it: queued when `stream` is
 * set (the call returns at once), run right here when it is NULL (the
 * call returns the work's error). */
weft_status* tpl_submit(weft_plugin_stream* stream, tpl_work* work);

/* Whether queued work still uses `buffer`: writes it, or (when
 * `any_use` is set) reads or writes it.  Work outside every stream (a
 * NULL-stream copy) must not overlap such work; nothing orders the two. */
int tpl_buffer_busy(const tpl_buffer* buffer, int any_use);

weft_status* tpl_stream_create(weft_plugin_device* device,
                               weft_plugin_stream** out);
void tpl_stream_destroy(weft_plugin_device* device,
                        weft_plugin_stream* stream);
weft_status* tpl_stream_synchronize(weft_plugin_device* device,
                                    weft_plugin_stream* stream);
weft_status* tpl_event_create(weft_plugin_device* device,
                              weft_plugin_event** out);
void tpl_event_destroy(weft_plugin_device* device, weft_plugin_event* event);
weft_status* tpl_event_record(weft_plugin_device* device,
                              weft_plugin_event* event,
                              weft_plugin_stream* stream);
weft_status* tpl_event_synchronize(weft_plugin_device* device,
                                   weft_plugin_event* event);
weft_status* tpl_stream_wait_event(weft_plugin_device* device,
                                   weft_plugin_stream* stream,
                                   weft_plugin_event* event);

/* ---- Kernels (kernels.c) ----------------------------------------------- */

weft_status* tpl_register_kernels(weft_kernel_registrar* registrar);

#endif /* WEFT_SDK_TEMPLATE_H_ */
