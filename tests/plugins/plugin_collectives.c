/* A plugin whose host-memory devices run AllReduce and Broadcast
 * themselves (plugin interface 1.7), over something the ranks of an MPI job
 * on one machine share without MPI: the communicator's "unique id" names a
 * POSIX shared-memory segment, and a collective copies each rank's part
 * into it, waits at a barrier, and reads every rank's part back.  It lets
 * tests/mpi/device_collectives.c check the runtime's half of device
 * collectives (the bootstrap, the order, the fallbacks) where there is no
 * GPU.
 *
 * Device type COLLTEST, four devices, each behaving differently:
 *   0  everything works;
 *   1  asked only whether it can join (collective_unique_id with out NULL,
 *      what every rank but 0 is asked), it says no: rank 0 can, the others
 *      cannot, and the host must refuse rather than hang;
 *   2  it never can: every rank says no, and the host must use MPI;
 *   3  collective_comm_create fails on every rank but 0: the host must
 *      refuse, and rank 0 must get its communicator destroyed.
 * It counts each slot's calls per device and writes them, after each
 * call, to the file the environment variable WEFT_TEST_CALLS_<DEVICE TYPE>
 * names when the plugin loads, as "d0 id=I probe=P create=C reduce=R
 * bcast=B destroy=D alloc=A;d1 ..." (the plugin exports nothing but its
 * entry; alloc counts memory_allocate, for tests/test_buffer_cache.c).
 * Its one kernel, Neg, gives a graph values on the device for the
 * collectives to take.
 *
 * Built twice more (tests/plugins/meson.build): WEFT_TEST_COLLECTIVES_NONE,
 * device type COLLNONE, interface 1.7 with the collective slots NULL; and
 * WEFT_TEST_COLLECTIVES_OLD, device type COLLOLD, choosing interface 1.6
 * with the slots set in its table, which the host must not use.  Both must
 * go through MPI. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "weft/device.h"
#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

#if defined(WEFT_TEST_COLLECTIVES_NONE)
#define PLUGIN_NAME "weft-test-collectives-none"
#define DEVICE_TYPE "COLLNONE"
#define CHOSEN_MINOR 7
#define NUM_DEVICES 1
#elif defined(WEFT_TEST_COLLECTIVES_OLD)
#define PLUGIN_NAME "weft-test-collectives-old"
#define DEVICE_TYPE "COLLOLD"
#define CHOSEN_MINOR 6
#define NUM_DEVICES 1
#else
#define PLUGIN_NAME "weft-test-collectives"
#define DEVICE_TYPE "COLLTEST"
#define CHOSEN_MINOR 7
#define NUM_DEVICES 4
#endif

static const weft_host_api* host;

static weft_status* status(int32_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static weft_status* status(int32_t code, const char* fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  return host->status_create(code, message);
}

#if !defined(WEFT_TEST_COLLECTIVES_NONE)
/* ---- Call counts ---- */

enum { ID, PROBE, CREATE, REDUCE, BCAST, DESTROY, ALLOC, NUM_COUNTS };
static pthread_mutex_t counts_mu = PTHREAD_MUTEX_INITIALIZER;
static int counts[NUM_DEVICES][NUM_COUNTS];
static char counts_path[512];  /* from the environment, at load */

static void count(int device, int what) {
  pthread_mutex_lock(&counts_mu);
  ++counts[device][what];
  char text[128 * NUM_DEVICES];
  size_t used = 0;
  for (int d = 0; d < NUM_DEVICES; ++d) {
    int n = snprintf(text + used, sizeof text - used,
                     "%sd%d id=%d probe=%d create=%d reduce=%d bcast=%d "
                     "destroy=%d alloc=%d", d == 0 ? "" : ";", d,
                     counts[d][ID], counts[d][PROBE], counts[d][CREATE],
                     counts[d][REDUCE], counts[d][BCAST], counts[d][DESTROY],
                     counts[d][ALLOC]);
    if (n > 0) used += (size_t)n;
  }
  /* Replaced whole (written aside, renamed over), so a reader never sees
   * half a file. */
  if (counts_path[0] != '\0') {
    char aside[sizeof counts_path + 8];
    snprintf(aside, sizeof aside, "%s.new", counts_path);
    FILE* f = fopen(aside, "w");
    if (f != NULL) {
      fputs(text, f);
      if (fclose(f) == 0) rename(aside, counts_path);
    }
  }
  pthread_mutex_unlock(&counts_mu);
}

#endif

/* ---- Devices, memory, copies: host memory ---- */

struct weft_plugin_device {
  int index;
};
static struct weft_plugin_device devices[NUM_DEVICES];

static weft_status* device_count(int32_t* out) {
  *out = NUM_DEVICES;
  return NULL;
}

static weft_status* device_open(int32_t index, weft_plugin_device** out) {
  if (index < 0 || index >= NUM_DEVICES)
    return status(WEFT_INVALID_ARGUMENT, "no device %d", (int)index);
  devices[index].index = index;
  *out = &devices[index];
  return NULL;
}

static void device_close(weft_plugin_device* device) { (void)device; }

static weft_status* device_properties(weft_plugin_device* device,
                                      weft_device_properties* out) {
  (void)device;
  if (out->struct_size >= offsetof(weft_device_properties, flags) +
                             sizeof out->flags) {
    out->description = "host memory shared by the ranks for collectives";
    out->vendor = "weft tests";
    out->memory_bytes = 0;
    out->compute_gflops = 1;
    out->flags = WEFT_DEVICE_HOST_MEMORY;
  }
  return NULL;
}

static weft_status* memory_allocate(weft_plugin_device* device,
                                    uint64_t bytes, void** out) {
  size_t rounded = (size_t)((bytes + 63) / 64 * 64);
  *out = aligned_alloc(64, rounded);
  if (*out == NULL)
    return status(WEFT_RESOURCE_EXHAUSTED, "out of memory (%llu bytes)",
                  (unsigned long long)bytes);
#if !defined(WEFT_TEST_COLLECTIVES_NONE)
  count(device->index, ALLOC);
#else
  (void)device;
#endif
  return NULL;
}

static void memory_free(weft_plugin_device* device, void* handle) {
  (void)device;
  free(handle);
}

static weft_status* copy_host_to_device(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* src, void* dst,
                                        uint64_t dst_offset, uint64_t bytes) {
  (void)device, (void)stream;
  memcpy((char*)dst + dst_offset, src, (size_t)bytes);
  return NULL;
}

static weft_status* copy_device_to_host(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* src, uint64_t src_offset,
                                        void* dst, uint64_t bytes) {
  (void)device, (void)stream;
  memcpy(dst, (const char*)src + src_offset, (size_t)bytes);
  return NULL;
}

static weft_status* copy_device_to_device(weft_plugin_device* device,
                                          weft_plugin_stream* stream,
                                          const void* src, uint64_t src_offset,
                                          void* dst, uint64_t dst_offset,
                                          uint64_t bytes) {
  (void)device, (void)stream;
  memmove((char*)dst + dst_offset, (const char*)src + src_offset,
          (size_t)bytes);
  return NULL;
}

#if !defined(WEFT_TEST_COLLECTIVES_NONE)
/* ---- Collectives over a shared-memory segment ---- */

/* Each rank's part of one step of a collective: larger tensors go through
 * in chunks of this many bytes. */
#define CHUNK ((size_t)64 << 10)
#define MAX_RANKS 16
#define HEADER ((size_t)4096)
#define SEGMENT (HEADER + (size_t)MAX_RANKS * CHUNK)
/* A peer that has not come after this long has died or hung. */
#define BARRIER_TIMEOUT_S 60

struct segment {
  _Atomic uint32_t attached;  /* ranks that have mapped it */
  _Atomic uint32_t arrived;   /* at the current barrier */
  _Atomic uint32_t generation;
};

struct weft_plugin_comm {
  int device;
  int rank;
  int size;
  struct segment* seg;
  char name[64];
};

static char* slot(struct weft_plugin_comm* c, int rank) {
  return (char*)c->seg + HEADER + (size_t)rank * CHUNK;
}

static weft_status* barrier(struct weft_plugin_comm* c) {
  struct segment* s = c->seg;
  uint32_t generation = atomic_load(&s->generation);
  if (atomic_fetch_add(&s->arrived, 1) + 1 == (uint32_t)c->size) {
    atomic_store(&s->arrived, 0);
    atomic_fetch_add(&s->generation, 1);
    return NULL;
  }
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const struct timespec pause = {0, 20000};
  for (unsigned spins = 0; atomic_load(&s->generation) == generation;
       ++spins) {
    if (spins < 1000) {
      sched_yield();
      continue;
    }
    nanosleep(&pause, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > BARRIER_TIMEOUT_S)
      return status(WEFT_DEADLINE_EXCEEDED,
                    "rank %d waited %d s at a barrier of %s", c->rank,
                    BARRIER_TIMEOUT_S, c->name);
  }
  return NULL;
}

/* With out NULL: whether the device can join.  Otherwise a fresh name for a
 * segment, which collective_comm_create makes (so an id whose bootstrap
 * does not go ahead leaves nothing behind). */
static weft_status* unique_id(weft_plugin_device* device, void* out,
                              uint64_t capacity, uint64_t* out_size) {
  const int d = device->index;
  count(d, out == NULL ? PROBE : ID);
  if (d == 2 || (d == 1 && out == NULL))
    return status(WEFT_UNAVAILABLE,
                  "test device %d cannot run collectives%s", d,
                  d == 1 ? " when only asked whether it can" : "");
  if (out == NULL) return NULL;
  static _Atomic unsigned serial;
  char name[64];
  int n = snprintf(name, sizeof name, "/weft-test-coll-%ld-%u-%d",
                   (long)getpid(), atomic_fetch_add(&serial, 1), d);
  if (n < 0 || (uint64_t)n + 1 > capacity)
    return status(WEFT_INTERNAL, "no room for the id");
  memcpy(out, name, (size_t)n + 1);
  *out_size = (uint64_t)n + 1;
  return NULL;
}

static weft_status* comm_create(weft_plugin_device* device, int32_t rank,
                                int32_t size, const void* id,
                                uint64_t id_size, weft_plugin_comm** out) {
  const int d = device->index;
  count(d, CREATE);
  *out = NULL;
  if (d == 3 && rank != 0)
    return status(WEFT_UNAVAILABLE, "test device 3 refuses rank %d",
                  (int)rank);
  if (size < 1 || size > MAX_RANKS || rank < 0 || rank >= size)
    return status(WEFT_INVALID_ARGUMENT, "rank %d of %d (at most %d ranks)",
                  (int)rank, (int)size, MAX_RANKS);
  if (id_size == 0 || id_size > 64 || ((const char*)id)[id_size - 1] != '\0')
    return status(WEFT_INVALID_ARGUMENT, "not an id of this plugin");
  struct weft_plugin_comm* c = calloc(1, sizeof *c);
  if (c == NULL) return status(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  c->device = d;
  c->rank = rank;
  c->size = size;
  memcpy(c->name, id, (size_t)id_size);
  int fd = shm_open(c->name, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)SEGMENT) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    free(c);
    return status(WEFT_UNAVAILABLE, "shared memory %s: %s", (const char*)id,
                  strerror(e));
  }
  c->seg = mmap(NULL, SEGMENT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (c->seg == MAP_FAILED) {
    int e = errno;
    free(c);
    return status(WEFT_UNAVAILABLE, "mmap: %s", strerror(e));
  }
  /* The last rank to map it takes the name away: nothing stays in
   * /dev/shm, however the processes end. */
  if (atomic_fetch_add(&c->seg->attached, 1) + 1 == (uint32_t)size)
    shm_unlink(c->name);
  *out = c;
  return NULL;
}

static void comm_destroy(weft_plugin_device* device, weft_plugin_comm* c) {
  count(device->index, DESTROY);
  if (c == NULL) return;
  /* Gone already unless some rank never joined (a failed bootstrap). */
  shm_unlink(c->name);
  if (c->seg != NULL) munmap(c->seg, SEGMENT);
  free(c);
}

static size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case WEFT_FLOAT32:
    case WEFT_INT32:
      return 4;
    case WEFT_FLOAT64:
    case WEFT_INT64:
      return 8;
    default:
      return 0;
  }
}

/* dst[i] = the sum over ranks, in rank order, of the slots' element i; a
 * mean as the interface defines it: (T)((double)sum * (1.0 / size)). */
static void reduce_chunk(struct weft_plugin_comm* c, char* dst,
                         size_t elements, int32_t dtype, int32_t reduction) {
  const double scale = 1.0 / c->size;
  for (size_t i = 0; i < elements; ++i) {
    switch (dtype) {
      case WEFT_FLOAT32: {
        float sum = 0;
        for (int r = 0; r < c->size; ++r) sum += ((float*)slot(c, r))[i];
        if (reduction == WEFT_COLLECTIVE_MEAN)
          sum = (float)((double)sum * scale);
        ((float*)dst)[i] = sum;
        break;
      }
      case WEFT_FLOAT64: {
        double sum = 0;
        for (int r = 0; r < c->size; ++r) sum += ((double*)slot(c, r))[i];
        if (reduction == WEFT_COLLECTIVE_MEAN) sum = sum * scale;
        ((double*)dst)[i] = sum;
        break;
      }
      case WEFT_INT32: {
        uint32_t sum = 0; /* wraps as two's complement, as MPI's does */
        for (int r = 0; r < c->size; ++r)
          sum += (uint32_t)((int32_t*)slot(c, r))[i];
        ((int32_t*)dst)[i] = (int32_t)sum;
        break;
      }
      default: {
        uint64_t sum = 0;
        for (int r = 0; r < c->size; ++r)
          sum += (uint64_t)((int64_t*)slot(c, r))[i];
        ((int64_t*)dst)[i] = (int64_t)sum;
        break;
      }
    }
  }
}

static weft_status* all_reduce(weft_plugin_device* device,
                               weft_plugin_comm* c, weft_plugin_stream* stream,
                               const void* src, uint64_t src_offset,
                               void* dst, uint64_t dst_offset, uint64_t count_,
                               int32_t dtype, int32_t reduction) {
  count(device->index, REDUCE);
  if (stream != NULL)
    return status(WEFT_INTERNAL, "a stream on a device without streams");
  const size_t width = dtype_size(dtype);
  if (width == 0 || (reduction != WEFT_COLLECTIVE_SUM &&
                     reduction != WEFT_COLLECTIVE_MEAN) ||
      (reduction == WEFT_COLLECTIVE_MEAN && dtype != WEFT_FLOAT32 &&
       dtype != WEFT_FLOAT64))
    return status(WEFT_INVALID_ARGUMENT, "reduction %d of dtype %d",
                  (int)reduction, (int)dtype);
  const char* in = (const char*)src + src_offset;
  char* out = (char*)dst + dst_offset;
  const size_t per_chunk = CHUNK / width;
  for (size_t done = 0; done < count_; done += per_chunk) {
    size_t n = count_ - done < per_chunk ? (size_t)(count_ - done) : per_chunk;
    memcpy(slot(c, c->rank), in + done * width, n * width);
    weft_status* st = barrier(c);
    if (st == NULL) reduce_chunk(c, out + done * width, n, dtype, reduction);
    if (st == NULL) st = barrier(c); /* no one writes a slot still read */
    if (st != NULL) return st;
  }
  return NULL;
}

static weft_status* broadcast(weft_plugin_device* device, weft_plugin_comm* c,
                              weft_plugin_stream* stream, const void* src,
                              uint64_t src_offset, void* dst,
                              uint64_t dst_offset, uint64_t bytes,
                              int32_t root) {
  count(device->index, BCAST);
  if (stream != NULL)
    return status(WEFT_INTERNAL, "a stream on a device without streams");
  if (root < 0 || root >= c->size)
    return status(WEFT_INVALID_ARGUMENT, "root %d", (int)root);
  const char* in = (const char*)src + src_offset;
  char* out = (char*)dst + dst_offset;
  for (uint64_t done = 0; done < bytes; done += CHUNK) {
    size_t n = bytes - done < CHUNK ? (size_t)(bytes - done) : CHUNK;
    if (c->rank == root) memcpy(slot(c, 0), in + done, n);
    weft_status* st = barrier(c);
    if (st == NULL) memcpy(out + done, slot(c, 0), n);
    if (st == NULL) st = barrier(c);
    if (st != NULL) return st;
  }
  return NULL;
}

#endif

/* ---- Neg, so that values live on the device ---- */

static weft_status* neg(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  weft_kernel_tensor x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
  weft_status* st = host->kernel_input(ctx, 0, &x);
  if (st == NULL)
    st = host->kernel_allocate_output(ctx, 0, x.dtype, x.dims, x.rank, &y);
  if (st != NULL) return st;
  const char* in = (const char*)x.data + x.offset;
  char* out = (char*)y.data + y.offset;
  for (int64_t i = 0; i < x.element_count; ++i) {
    switch (x.dtype) {
      case WEFT_FLOAT32:
        ((float*)out)[i] = -((const float*)in)[i];
        break;
      case WEFT_FLOAT64:
        ((double*)out)[i] = -((const double*)in)[i];
        break;
      case WEFT_INT32:
        ((int32_t*)out)[i] = (int32_t)(0u - (uint32_t)((const int32_t*)in)[i]);
        break;
      default:
        ((int64_t*)out)[i] = (int64_t)(0u - (uint64_t)((const int64_t*)in)[i]);
        break;
    }
  }
  return NULL;
}

#if defined(WEFT_TEST_COLLECTIVES_NONE)
#define COLLECTIVE_SLOTS NULL, NULL, NULL, NULL, NULL
#else
#define COLLECTIVE_SLOTS \
  unique_id, comm_create, all_reduce, broadcast, comm_destroy
#endif

static const weft_plugin_api table = {
    sizeof(weft_plugin_api),
    PLUGIN_NAME,
    "0.0.1",
    DEVICE_TYPE,
    device_count,
    device_open,
    device_close,
    device_properties,
    memory_allocate,
    memory_free,
    copy_host_to_device,
    copy_device_to_host,
    copy_device_to_device,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, /* no streams */
    NULL,                                           /* shutdown */
    COLLECTIVE_SLOTS,
};

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  const uint32_t chosen = WEFT_VERSION_PACK(1, CHOSEN_MINOR);
  args->chosen_version = chosen;
  host = args->host;
  if (WEFT_VERSION_MAJOR_OF(args->host_max_version) != 1 ||
      args->host_max_version < chosen)
    return host->status_create(WEFT_FAILED_PRECONDITION,
                               PLUGIN_NAME " needs a host speaking its "
                               "interface version");
  static const int32_t numeric[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,
                                    WEFT_INT64};
  weft_kernel_def def = {
      .struct_size = sizeof def,
      .op = "Neg",
      .dtype_attr = "T",
      .dtypes = numeric,
      .num_dtypes = 4,
      .compute = neg,
  };
  weft_status* st = host->register_kernel(args->registrar, &def);
  if (st != NULL) return st;
#if !defined(WEFT_TEST_COLLECTIVES_NONE)
  const char* path = getenv("WEFT_TEST_CALLS_" DEVICE_TYPE);
  if (path != NULL) snprintf(counts_path, sizeof counts_path, "%s", path);
#endif
  args->plugin = &table;
  return NULL;
}
