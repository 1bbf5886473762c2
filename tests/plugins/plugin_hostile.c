/* A plugin that misbehaves in the one way WEFT_TEST_HOSTILE names, so the
 * loader tests can show each misbehaviour becomes a refusal or an error
 * instead of a crash or a hang.  Otherwise it is a working synchronous
 * device of type HOSTILE over host memory, with one kernel (Relu).
 *
 *   cpu_impostor   declares device type CPU with a Relu kernel of very
 *                  high priority that writes 42 everywhere
 *   device_type    declares the device type in WEFT_TEST_HOSTILE_ARG
 *   null_alloc     memory_allocate succeeds without a handle
 *   huge_count     device_count reports INT32_MAX devices
 *   unterminated_name         the name has no NUL before unmapped memory
 *   unterminated_description  the same for the device's description
 *   unterminated_status       the same for the message of the status the
 *                             entry fails with
 *   late_register  Relu calls register_kernel through the registrar kept
 *                  from the entry call, and writes the status code it got
 *   block_entry    the entry writes a byte to the FIFO
 *                  WEFT_TEST_HOSTILE_ENTERED, then waits to read one from
 *                  the FIFO WEFT_TEST_HOSTILE_RELEASE
 *   some_collectives  chooses interface 1.7 and sets collective_unique_id
 *                  alone of the five collective slots (all or none)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "weft/device.h"
#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

static const weft_host_api* host;
static weft_kernel_registrar* kept_registrar;
static const char* mode = "";

static int is_mode(const char* m) { return strcmp(mode, m) == 0; }

/* `length` bytes of 'x' with no NUL, ending where unmapped memory begins:
 * whoever reads it with strlen faults. */
static const char* unterminated(size_t length) {
  long page = sysconf(_SC_PAGESIZE);
  size_t span = (length + (size_t)page - 1) / (size_t)page * (size_t)page;
  char* base = mmap(NULL, span + (size_t)page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) abort();
  mprotect(base + span, (size_t)page, PROT_NONE);
  char* s = base + span - length;
  memset(s, 'x', length);
  return s;
}

static weft_status* device_count(int32_t* out_count) {
  *out_count = is_mode("huge_count") ? INT32_MAX : 1;
  return NULL;
}

static int device_token;

static weft_status* device_open(int32_t index, weft_plugin_device** out) {
  if (index != 0) {
    *out = NULL;
    return host->status_create(WEFT_NOT_FOUND, "one HOSTILE device only");
  }
  *out = (weft_plugin_device*)&device_token;
  return NULL;
}

static void device_close(weft_plugin_device* device) { (void)device; }

static weft_status* device_properties(weft_plugin_device* device,
                                      weft_device_properties* out) {
  (void)device;
  out->description = is_mode("unterminated_description")
                         ? unterminated(WEFT_PLUGIN_MAX_STRING * 2)
                         : "hostile test device";
  out->vendor = "weft tests";
  out->flags = WEFT_DEVICE_HOST_MEMORY;
  return NULL;
}

static weft_status* memory_allocate(weft_plugin_device* device, uint64_t bytes,
                                    void** out_handle) {
  (void)device;
  *out_handle = NULL;
  if (is_mode("null_alloc")) return NULL;
  if (posix_memalign(out_handle, 64, bytes) != 0)
    return host->status_create(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  return NULL;
}

static void memory_free(weft_plugin_device* device, void* handle) {
  (void)device;
  free(handle);
}

static weft_status* copy_host_to_device(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* host_src, void* dst,
                                        uint64_t dst_offset, uint64_t bytes) {
  (void)device, (void)stream;
  memcpy((char*)dst + dst_offset, host_src, bytes);
  return NULL;
}

static weft_status* copy_device_to_host(weft_plugin_device* device,
                                        weft_plugin_stream* stream,
                                        const void* src, uint64_t src_offset,
                                        void* host_dst, uint64_t bytes) {
  (void)device, (void)stream;
  memcpy(host_dst, (const char*)src + src_offset, bytes);
  return NULL;
}

static weft_status* copy_device_to_device(weft_plugin_device* device,
                                          weft_plugin_stream* stream,
                                          const void* src, uint64_t src_offset,
                                          void* dst, uint64_t dst_offset,
                                          uint64_t bytes) {
  (void)device, (void)stream;
  memcpy((char*)dst + dst_offset, (const char*)src + src_offset, bytes);
  return NULL;
}

static weft_status* relu(void* kernel_arg, weft_kernel_context* ctx);

static weft_kernel_def relu_def(void) {
  static const int32_t float32_only[] = {WEFT_FLOAT32};
  weft_kernel_def def = {
      .struct_size = sizeof(weft_kernel_def),
      .op = "Relu",
      .dtype_attr = "T",
      .dtypes = float32_only,
      .num_dtypes = 1,
      .priority = is_mode("cpu_impostor") ? 1000000 : 0,
      .compute = relu,
  };
  return def;
}

/* A correct Relu, except in the modes that exist to give a wrong one. */
static weft_status* relu(void* kernel_arg, weft_kernel_context* ctx) {
  (void)kernel_arg;
  weft_kernel_tensor in = {.struct_size = sizeof in};
  weft_status* st = host->kernel_input(ctx, 0, &in);
  if (st != NULL) return st;
  weft_kernel_tensor out = {.struct_size = sizeof out};
  /* Outputs that disagree with the graph: another dtype of the same size,
   * or one element more. */
  const int64_t longer[1] = {in.element_count + 1};
  if (is_mode("wrong_output_dtype"))
    st = host->kernel_allocate_output(ctx, 0, WEFT_INT32, in.dims, in.rank,
                                      &out);
  else if (is_mode("wrong_output_shape"))
    st = host->kernel_allocate_output(ctx, 0, WEFT_FLOAT32, longer, 1, &out);
  else
    st = host->kernel_allocate_output(ctx, 0, WEFT_FLOAT32, in.dims, in.rank,
                                      &out);
  if (st != NULL) return st;
  float late_code = 0;
  if (is_mode("late_register")) {
    weft_kernel_def def = relu_def();
    weft_status* late = host->register_kernel(kept_registrar, &def);
    late_code = (float)host->status_code(late);
    host->status_destroy(late);
  }
  const float* x = (const float*)((const char*)in.data + in.offset);
  float* y = (float*)((char*)out.data + out.offset);
  for (int64_t i = 0; i < in.element_count; ++i) {
    if (is_mode("cpu_impostor"))
      y[i] = 42;
    else if (is_mode("late_register"))
      y[i] = late_code;
    else
      y[i] = x[i] > 0 ? x[i] : 0;
  }
  return NULL;
}

static weft_plugin_api table = {
    .struct_size = sizeof(weft_plugin_api),
    .name = "weft-test-hostile",
    .version = "0.0.1",
    .device_type = "HOSTILE",
    .device_count = device_count,
    .device_open = device_open,
    .device_close = device_close,
    .device_properties = device_properties,
    .memory_allocate = memory_allocate,
    .memory_free = memory_free,
    .copy_host_to_device = copy_host_to_device,
    .copy_device_to_host = copy_device_to_host,
    .copy_device_to_device = copy_device_to_device,
};

static weft_status* lone_unique_id(weft_plugin_device* device, void* out,
                                   uint64_t capacity, uint64_t* out_size) {
  (void)device, (void)out, (void)capacity, (void)out_size;
  return host->status_create(WEFT_INTERNAL, "a refused plugin was called");
}

/* Writes a byte to one FIFO and waits for one from the other. */
static void rendezvous(void) {
  const char* entered = getenv("WEFT_TEST_HOSTILE_ENTERED");
  const char* release = getenv("WEFT_TEST_HOSTILE_RELEASE");
  if (entered == NULL || release == NULL) return;
  char byte = 1;
  int fd = open(entered, O_WRONLY);
  if (fd >= 0) {
    if (write(fd, &byte, 1) != 1) byte = 0;
    close(fd);
  }
  fd = open(release, O_RDONLY);
  if (fd >= 0) {
    if (read(fd, &byte, 1) != 1) byte = 0;
    close(fd);
  }
}

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  args->chosen_version = WEFT_VERSION_PACK(1, 0);
  host = args->host;
  kept_registrar = args->registrar;
  const char* env = getenv("WEFT_TEST_HOSTILE");
  mode = env ? env : "";
  if (is_mode("block_entry")) rendezvous();
  if (is_mode("cpu_impostor")) {
    table.name = "weft-test-impostor";
    table.device_type = "CPU";
  }
  if (is_mode("device_type")) table.device_type = getenv("WEFT_TEST_HOSTILE_ARG");
  if (is_mode("some_collectives")) {
    args->chosen_version = WEFT_VERSION_PACK(1, 7);
    table.collective_unique_id = lone_unique_id;
  }
  if (is_mode("unterminated_status"))
    return host->status_create(WEFT_UNAVAILABLE,
                               unterminated(WEFT_PLUGIN_MAX_STRING * 2));
  if (is_mode("unterminated_name"))
    table.name = unterminated(WEFT_PLUGIN_MAX_STRING * 2);
  weft_kernel_def def = relu_def();
  weft_status* st = host->register_kernel(args->registrar, &def);
  if (st != NULL) return st;
  args->plugin = &table;
  return NULL;
}
