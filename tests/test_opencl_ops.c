/* The OpenCL plugin's kernels against the CPU plugin's: every graph runs in
 * a session restricted to /device:OPENCL:0 with strict placement (so every
 * node must have an OpenCL kernel) and in a session on the CPU, and the
 * results must agree: within float tolerance for arithmetic, bit for bit
 * for Cast and for integers.  Where no OpenCL device exists (no ICD loader,
 * no platform), every case reports itself skipped with the plugin's reason.
 * On this project's machines the device is PoCL's CPU device. */
#define _POSIX_C_SOURCE 200809L /* popen */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define OCL "/device:OPENCL:0"

static void discover(void) { WT_OK(weft_plugins_discover()); }

TestSuite(opencl, .init = discover, .timeout = 240);

/* NULL when /device:OPENCL:0 exists; else why not, for the skip line. */
static const char* opencl_missing(void) {
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (d.name != NULL && strcmp(d.name, OCL) == 0) return NULL;
  }
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    weft_plugin_description p = {.struct_size = sizeof p};
    WT_OK(weft_plugin_describe(i, &p));
    if (p.device_type != NULL && strcmp(p.device_type, "OPENCL") == 0) {
      static char why[512];
      snprintf(why, sizeof why, "no OpenCL device (%s)",
               p.no_device_reason != NULL && p.no_device_reason[0] != '\0'
                   ? p.no_device_reason
                   : "the plugin reports none");
      return why;
    }
  }
  return "no OpenCL device: the weft-opencl plugin is not on the search "
         "path (not built here?)";
}

#define REQUIRE_OPENCL()                        \
  do {                                          \
    const char* why_ = opencl_missing();        \
    if (why_ != NULL) WT_SKIP(why_);            \
  } while (0)

/* ---- Loading without starting the platform ------------------------------ */

/* Whether a shared object whose path contains `name` is mapped into this
 * process. */
static int mapped(const char* name) {
  FILE* maps = fopen("/proc/self/maps", "r");
  cr_assert_not_null(maps, "cannot read /proc/self/maps");
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, maps) != NULL)
    found = strstr(line, name) != NULL;
  fclose(maps);
  return found;
}

/* The plugin on the search path registers its kernels without starting an
 * OpenCL platform (plugin interface 1.6: a device says which dtypes it
 * lacks instead), so a process that runs on the CPU never loads the ICD's
 * implementation (PoCL: ~60 MiB).  The platform starts when an OpenCL
 * device is wanted — here, when the devices are listed. */
Test(opencl, a_cpu_session_does_not_start_the_platform) {
  cr_assert(!mapped("libpocl"), "libpocl mapped by plugin discovery alone");
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_DIMS(3), 1);
  weft_output y = wt_apply1(g, "Neg", "y", x);
  weft_session* s = wt_session_new(g, "CPU");
  const float in[3] = {1, 2, 3};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_DIMS(3), 1, in);
  weft_tensor* out = wt_run1(s, &x, &t, 1, y);
  cr_expect_float_eq(((const float*)weft_tensor_data(out))[2], -3.0f, 0);
  cr_expect(!mapped("libpocl"), "libpocl mapped by a CPU session");
  weft_tensor_destroy(out);
  weft_tensor_destroy(t);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  /* Listing the devices starts it; on PoCL that maps libpocl, which shows
   * the probe above can see it. */
  REQUIRE_OPENCL();
  int pocl = 0;
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, OCL) == 0) pocl = strstr(d.description, "pthread") != NULL ||
                                         strstr(d.vendor, "pocl") != NULL ||
                                         strstr(d.vendor, "Portable") != NULL;
  }
  if (pocl) cr_expect(mapped("libpocl"), "PoCL's device listed, libpocl not mapped?");
}

/* ---- Running a graph on both devices ----------------------------------- */

#define MAX_FETCHES 4

typedef struct run_set {
  weft_output feeds[4];
  weft_tensor* values[4];
  int32_t num_feeds;
  weft_output fetches[MAX_FETCHES];
  int32_t num_fetches;
} run_set;

static weft_session* session_on(weft_graph* graph, const char* devices) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = devices;
  options.placement = WEFT_PLACEMENT_STRICT;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  return session;
}

/* Runs `set` on `devices`; returns the run's status, outputs into outs. */
static weft_status* run_on(weft_graph* graph, const char* devices,
                           const run_set* set, weft_tensor** outs) {
  weft_session* session = session_on(graph, devices);
  weft_status* status = weft_session_run(
      session, set->feeds, set->values, set->num_feeds, set->fetches,
      set->num_fetches, NULL, 0, outs);
  weft_session_destroy(session);
  return status;
}

static double element(const weft_tensor* t, int64_t k) {
  const void* p = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT32: return ((const float*)p)[k];
    case WEFT_FLOAT64: return ((const double*)p)[k];
    case WEFT_INT32: return ((const int32_t*)p)[k];
    case WEFT_INT64: return (double)((const int64_t*)p)[k];
    default: return NAN;
  }
}

/* Same dtype and shape, then elements within abs_tol + rel_tol * |cpu|
 * (NaN only against NaN); tolerances 0 compare the bytes. */
static void expect_match(const weft_tensor* ocl, const weft_tensor* cpu,
                         double abs_tol, double rel_tol, const char* what) {
  cr_assert_eq(weft_tensor_dtype(ocl), weft_tensor_dtype(cpu),
               "%s: dtype %s on OpenCL, %s on CPU", what,
               weft_dtype_name(weft_tensor_dtype(ocl)),
               weft_dtype_name(weft_tensor_dtype(cpu)));
  cr_assert_eq(weft_tensor_rank(ocl), weft_tensor_rank(cpu), "%s: rank",
               what);
  for (int32_t i = 0; i < weft_tensor_rank(cpu); ++i) {
    cr_assert_eq(weft_tensor_dim(ocl, i), weft_tensor_dim(cpu, i),
                 "%s: dim %d", what, i);
  }
  const int64_t n = weft_tensor_element_count(cpu);
  const weft_dtype dtype = weft_tensor_dtype(cpu);
  if ((abs_tol == 0 && rel_tol == 0) ||
      !(dtype == WEFT_FLOAT32 || dtype == WEFT_FLOAT64)) {
    const size_t bytes = weft_tensor_byte_size(cpu);
    const unsigned char* a = weft_tensor_data(ocl);
    const unsigned char* b = weft_tensor_data(cpu);
    for (size_t k = 0; k < bytes; ++k) {
      if (a[k] != b[k]) {
        const size_t size = wt_dtype_bytes(dtype);
        cr_assert_fail("%s: element %zu differs (OpenCL %g, CPU %g; byte %zu "
                       "of %s: %02x vs %02x)",
                       what, k / size, element(ocl, (int64_t)(k / size)),
                       element(cpu, (int64_t)(k / size)), k % size,
                       weft_dtype_name(dtype), a[k], b[k]);
      }
    }
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    const double a = element(ocl, k), b = element(cpu, k);
    if (isnan(b)) {
      cr_assert(isnan(a), "%s: element %lld is %g on OpenCL, NaN on CPU",
                what, (long long)k, a);
      continue;
    }
    if (isinf(b)) {
      cr_assert_eq(a, b, "%s: element %lld is %g on OpenCL, %g on CPU", what,
                   (long long)k, a, b);
      continue;
    }
    cr_assert(fabs(a - b) <= abs_tol + rel_tol * fabs(b),
              "%s: element %lld is %.9g on OpenCL, %.9g on CPU", what,
              (long long)k, a, b);
  }
}

/* Runs `set` on both devices and compares every fetch. */
static void compare(weft_graph* graph, run_set* set, double abs_tol,
                    double rel_tol, const char* what) {
  weft_tensor* ocl[MAX_FETCHES] = {0};
  weft_tensor* cpu[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, set, ocl));
  WT_OK(run_on(graph, "CPU", set, cpu));
  for (int32_t i = 0; i < set->num_fetches; ++i) {
    char label[160];
    snprintf(label, sizeof label, "%s (output %d)", what, i);
    expect_match(ocl[i], cpu[i], abs_tol, rel_tol, label);
    weft_tensor_destroy(ocl[i]);
    weft_tensor_destroy(cpu[i]);
  }
}

static void release(run_set* set) {
  for (int32_t i = 0; i < set->num_feeds; ++i) {
    weft_tensor_destroy(set->values[i]);
  }
}

/* A placeholder fed with `value` (the set takes the tensor). */
static weft_output feed(weft_graph* graph, run_set* set, const char* name,
                        weft_tensor* value) {
  const int32_t rank = weft_tensor_rank(value);
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) dims[i] = weft_tensor_dim(value, i);
  weft_output out =
      wt_placeholder(graph, name, weft_tensor_dtype(value), dims, rank);
  set->feeds[set->num_feeds] = out;
  set->values[set->num_feeds++] = value;
  return out;
}

static int64_t count_of(const int64_t* dims, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

/* float32 values uniform in [lo, hi). */
static weft_tensor* random_f32(wt_rng* rng, const int64_t* dims,
                               int32_t rank, float lo, float hi) {
  const int64_t n = count_of(dims, rank);
  float* data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  wt_rng_fill(rng, data, n, lo, hi);
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, dims, rank, data);
  free(data);
  return t;
}

/* int32 values in [lo, hi]. */
static weft_tensor* random_i32(wt_rng* rng, const int64_t* dims,
                               int32_t rank, int32_t lo, int32_t hi) {
  const int64_t n = count_of(dims, rank);
  int32_t* data = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
  for (int64_t k = 0; k < n; ++k) {
    data[k] = lo + (int32_t)(wt_rng_next(rng) % (uint64_t)(hi - lo + 1));
  }
  weft_tensor* t = wt_tensor(WEFT_INT32, dims, rank, data);
  free(data);
  return t;
}

/* A tensor of `dtype` whose every byte is drawn from `alphabet` (any byte
 * when it is NULL): inputs for kernels that compare or move bytes. */
static weft_tensor* random_bytes(wt_rng* rng, weft_dtype dtype,
                                 const int64_t* dims, int32_t rank,
                                 const uint8_t* alphabet, int alphabet_size) {
  const size_t bytes = (size_t)count_of(dims, rank) * wt_dtype_bytes(dtype);
  uint8_t* data = malloc(bytes > 0 ? bytes : 1);
  for (size_t k = 0; k < bytes; ++k) {
    const uint64_t r = wt_rng_next(rng);
    data[k] = alphabet != NULL ? alphabet[r % (uint64_t)alphabet_size]
                               : (uint8_t)r;
  }
  weft_tensor* t = wt_tensor(dtype, dims, rank, data);
  free(data);
  return t;
}

/* ---- Devices ------------------------------------------------------------ */

Test(opencl, device_properties) {
  REQUIRE_OPENCL();
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    weft_device_description d = {.struct_size = sizeof d};
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, OCL) != 0) continue;
    cr_expect_str_eq(d.type, "OPENCL");
    cr_expect_eq(d.index, 0);
    cr_assert_not_null(d.description);
    cr_expect_gt(strlen(d.description), 0);
    cr_assert_not_null(d.vendor);
    cr_expect_gt(d.memory_bytes, 0);
    /* A CPU-type OpenCL device (PoCL) reports no estimate, so the runtime
     * measures it; a GPU reports a positive peak. */
    if (strstr(d.description, "pthread") || strstr(d.description, "cpu"))
      cr_expect_eq(d.compute_gflops, 0.0, "%s", d.description);
    else
      cr_expect_geq(d.compute_gflops, 0.0);
    cr_expect(!(d.flags & WEFT_DEVICE_HOST_MEMORY),
              "OpenCL handles are cl_mem objects, not host memory");
    return;
  }
  cr_assert_fail("no %s after all", OCL);
}

/* `weft devices`, the tool users run, lists the device and its hardware. */
Test(opencl, weft_devices_lists_the_device) {
  REQUIRE_OPENCL();
  weft_device_description d = {.struct_size = sizeof d};
  for (int32_t i = 0; i < weft_device_count(); ++i) {
    WT_OK(weft_device_describe(i, &d));
    if (strcmp(d.name, OCL) == 0) break;
  }
  FILE* tool = popen(WEFT_TEST_WEFT_TOOL " devices 2>&1", "r");
  cr_assert_not_null(tool, "cannot run %s", WEFT_TEST_WEFT_TOOL);
  static char output[65536];
  size_t used = fread(output, 1, sizeof output - 1, tool);
  output[used] = '\0';
  const int rc = pclose(tool);
  cr_expect_eq(rc, 0, "weft devices failed:\n%s", output);
  cr_expect_not_null(strstr(output, OCL), "no %s in:\n%s", OCL, output);
  cr_expect_not_null(strstr(output, d.description),
                     "hardware '%s' not shown in:\n%s", d.description,
                     output);
  cr_expect_not_null(strstr(output, "weft-opencl"),
                     "the plugin is not listed in:\n%s", output);
}

/* ---- Element-wise binary ops ------------------------------------------- */

static const char* const kBinaryOps[] = {"Add", "Sub", "Mul", "Div",
                                         "Maximum", "Minimum", "Pow"};

typedef struct shape_pair {
  int64_t x[4];
  int32_t x_rank;
  int64_t y[4];
  int32_t y_rank;
} shape_pair;

static const shape_pair kBroadcastShapes[] = {
    {{2, 3}, 2, {2, 3}, 2},          /* same shape */
    {{3, 1, 5}, 3, {4, 1}, 2},       /* both broadcast */
    {{0}, 0, {7}, 1},                /* scalar x */
    {{6, 5}, 2, {0}, 0},             /* scalar y */
    {{2, 3, 4, 5}, 4, {3, 1, 5}, 3}, /* a middle dim */
    {{37, 53}, 2, {53}, 1},          /* a row */
    {{0, 3}, 2, {3}, 1},             /* empty */
};

static void binary_case(const char* op, weft_dtype dtype,
                        const shape_pair* shapes, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int pow_op = strcmp(op, "Pow") == 0;
  const int div_op = strcmp(op, "Div") == 0;
  weft_tensor *xv, *yv;
  if (dtype == WEFT_FLOAT32) {
    /* Pow of a negative base is NaN on both; keep the bases positive so
     * the values say something. */
    xv = random_f32(rng, shapes->x, shapes->x_rank, pow_op ? 0.25f : -3.0f,
                    3.0f);
    yv = random_f32(rng, shapes->y, shapes->y_rank, pow_op ? -2.0f : 0.5f,
                    3.0f);
  } else {
    xv = random_i32(rng, shapes->x, shapes->x_rank, pow_op ? -3 : -1000,
                    pow_op ? 3 : 1000);
    /* Divisors and exponents without the values these ops refuse. */
    yv = random_i32(rng, shapes->y, shapes->y_rank, div_op ? 1 : pow_op ? 0 : -1000,
                    pow_op ? 9 : 1000);
  }
  weft_output x = feed(graph, &set, "x", xv);
  weft_output y = feed(graph, &set, "y", yv);
  set.fetches[0] = wt_apply2(graph, op, "z", x, y);
  set.num_fetches = 1;
  char what[128];
  snprintf(what, sizeof what, "%s %s x rank %d y rank %d", op,
           weft_dtype_name(dtype), shapes->x_rank, shapes->y_rank);
  /* Pow goes through exp and log on either side: a few ulp. */
  compare(graph, &set, 1e-6, pow_op ? 1e-5 : 1e-6, what);
  release(&set);
  weft_graph_destroy(graph);
}

/* Every binary op over every pair of shapes. */
static void binary_cases(weft_dtype dtype, uint64_t seed) {
  wt_rng rng = {seed};
  for (size_t o = 0; o < sizeof kBinaryOps / sizeof *kBinaryOps; ++o) {
    for (size_t s = 0; s < sizeof kBroadcastShapes / sizeof *kBroadcastShapes;
         ++s) {
      binary_case(kBinaryOps[o], dtype, &kBroadcastShapes[s], &rng);
    }
  }
}

Test(opencl, binary_float32_broadcasting) {
  REQUIRE_OPENCL();
  binary_cases(WEFT_FLOAT32, 1);
}

Test(opencl, binary_int32_broadcasting) {
  REQUIRE_OPENCL();
  binary_cases(WEFT_INT32, 2);
}

/* Errors found on the device come back from run() naming the node, as
 * the CPU's do. */
Test(opencl, integer_division_by_zero_is_an_error) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t xs[4] = {7, -8, 9, 10}, ys[4] = {1, 2, 0, 5};
  weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_INT32, WT_SHAPE(4), xs));
  weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_INT32, WT_SHAPE(4), ys));
  set.fetches[0] = wt_apply2(graph, "Div", "ratio", x, y);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "ratio", "integer division by zero");
  /* The stream is clean again: the next run of good values succeeds. */
  const int32_t good[4] = {1, 2, 3, 4};
  weft_tensor_destroy(set.values[1]);
  set.values[1] = wt_tensor(WEFT_INT32, WT_SHAPE(4), good);
  compare(graph, &set, 0, 0, "Div after an error");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, integer_pow_with_negative_exponent_is_an_error) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t xs[3] = {2, 3, 4}, ys[3] = {1, -2, 0};
  weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_INT32, WT_SHAPE(3), xs));
  weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_INT32, WT_SHAPE(3), ys));
  set.fetches[0] = wt_apply2(graph, "Pow", "power", x, y);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "power", "negative exponent (-2");
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- Unary ops ---------------------------------------------------------- */

Test(opencl, unary_float32) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Neg",  "Abs",     "Square", "Sign",
                                     "Relu", "Exp",     "Tanh",   "Sigmoid",
                                     "Log",  "Sqrt",    "Rsqrt"};
  wt_rng rng = {3};
  for (size_t o = 0; o < sizeof kOps / sizeof *kOps; ++o) {
    const int positive = o >= 8; /* Log, Sqrt, Rsqrt */
    for (int empty = 0; empty < 2; ++empty) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      const int64_t dims[2] = {empty ? 0 : 33, 17};
      weft_output x = feed(graph, &set, "x",
                           random_f32(&rng, dims, 2, positive ? 0.01f : -20.0f,
                                      20.0f));
      set.fetches[0] = wt_apply1(graph, kOps[o], "y", x);
      set.num_fetches = 1;
      compare(graph, &set, 1e-6, 2e-6, kOps[o]);
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

Test(opencl, unary_float32_special_values) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Neg", "Abs", "Sign", "Relu", "Exp",
                                     "Sigmoid", "Tanh", "Sqrt", "Log"};
  const float values[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -100.0f,
                          100.0f, 1e-40f, -1e-40f, 88.7f, -104.0f};
  /* Log of the subnormals included: both devices must give log(1e-40) =
   * -92.1, not log of the smallest normal. */
  for (size_t o = 0; o < sizeof kOps / sizeof *kOps; ++o) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x",
                         wt_tensor(WEFT_FLOAT32, WT_SHAPE(11), values));
    set.fetches[0] = wt_apply1(graph, kOps[o], "y", x);
    set.num_fetches = 1;
    compare(graph, &set, 1e-30, 2e-6, kOps[o]);
    release(&set);
    weft_graph_destroy(graph);
  }
}

Test(opencl, unary_int32) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Neg", "Abs", "Square", "Sign", "Relu"};
  const int32_t values[] = {0, 1, -1, 7, -7, 46341, INT32_MAX, INT32_MIN};
  for (size_t o = 0; o < sizeof kOps / sizeof *kOps; ++o) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x =
        feed(graph, &set, "x", wt_tensor(WEFT_INT32, WT_SHAPE(8), values));
    set.fetches[0] = wt_apply1(graph, kOps[o], "y", x);
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, kOps[o]);
    release(&set);
    weft_graph_destroy(graph);
  }
}

Test(opencl, identity_and_fills) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Identity", "ZerosLike", "OnesLike"};
  wt_rng rng = {4};
  for (size_t o = 0; o < 3; ++o) {
    for (int int_type = 0; int_type < 2; ++int_type) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(
          graph, &set, "x",
          int_type ? random_i32(&rng, WT_SHAPE(5, 9), -50, 50)
                   : random_f32(&rng, WT_SHAPE(5, 9), -1.0f, 1.0f));
      /* A kernel between feed and fetch, so the op runs on a device value. */
      weft_output negated = wt_apply1(graph, "Neg", "neg", x);
      set.fetches[0] = wt_apply1(graph, kOps[o], "y", negated);
      set.num_fetches = 1;
      compare(graph, &set, 0, 0, kOps[o]);
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

/* ---- Cast ---------------------------------------------------------------- */

static weft_output cast(weft_graph* graph, const char* name, weft_output x,
                        weft_dtype to) {
  weft_op_builder* b = weft_op_begin(graph, "Cast", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", to);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* float32 values that exercise rounding to 16 bits: ties to even either
 * way, carries into the exponent, subnormals of both formats, overflow,
 * infinities, NaN of both signs, and a random spread. */
static weft_tensor* tricky_f32(wt_rng* rng, int64_t n) {
  float* v = malloc((size_t)n * sizeof(float));
  const uint32_t bits[] = {
      0x3f808000u, /* 1 + 2^-8: a bfloat16 tie, rounds down to even */
      0x3f818000u, /* a tie that rounds up to even */
      0x3f80c000u, 0x3f807fffu, 0x3f808001u, 0x7f7fffffu, /* FLT_MAX */
      0x7f7f8000u, /* rounds to infinity in bfloat16 */
      0x00000001u, 0x80000001u, 0x00400000u, 0x00018000u, /* subnormals */
      0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
      0x00000000u, 0x80000000u, 0x477fe000u, /* 65504: float16's max */
      0x477ff000u, /* a float16 tie at the top: rounds to infinity */
      0x387fc000u, /* a float16 subnormal */
      0x33800000u, /* 2^-24: the smallest float16 subnormal */
      0x33000000u, /* 2^-25: a tie to 0 */
  };
  const int64_t fixed = (int64_t)(sizeof bits / sizeof *bits);
  for (int64_t k = 0; k < n; ++k) {
    if (k < fixed) {
      memcpy(&v[k], &bits[k], sizeof(float));
    } else {
      /* Random bit patterns of every exponent, and ordinary values. */
      const uint32_t r = (uint32_t)wt_rng_next(rng);
      float f;
      memcpy(&f, &r, sizeof f);
      v[k] = (k & 1) ? f : wt_rng_uniform(rng, -1000.0f, 1000.0f);
    }
  }
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, &n, 1, v);
  free(v);
  return t;
}

static void cast_case(weft_dtype from, weft_dtype to, weft_tensor* f32_source) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", f32_source);
  /* Inputs of other dtypes are cast from the float32 source by the device
   * under test: a wrong first Cast fails the comparison as well. */
  weft_output source = from == WEFT_FLOAT32 ? x : cast(graph, "src", x, from);
  set.fetches[0] = cast(graph, "y", source, to);
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "Cast %s to %s", weft_dtype_name(from),
           weft_dtype_name(to));
  compare(graph, &set, 0, 0, what); /* bit for bit */
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, cast_between_float_formats_bit_exact) {
  REQUIRE_OPENCL();
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_FLOAT16, WEFT_BFLOAT16};
  wt_rng rng = {5};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (i == j) continue;
      cast_case(types[i], types[j], tricky_f32(&rng, 4099));
    }
  }
}

/* The OpenCL plugin converts to none of uint8, bool and int8: a Cast to
 * them constrained to the OpenCL device moves to the CPU under soft
 * placement, and strict placement refuses it by name when planning. */
Test(opencl, cast_without_an_opencl_kernel_is_placed_elsewhere) {
  REQUIRE_OPENCL();
  const weft_dtype targets[] = {WEFT_UINT8, WEFT_BOOL, WEFT_INT8};
  const int32_t policies[] = {WEFT_PLACEMENT_SOFT, WEFT_PLACEMENT_STRICT};
  const float x[4] = {0, 1, 2.5f, 255};
  /* Computed by hand: truncation for the integers (255 is out of int8's
   * range, which makes 0), x != 0 for bool. */
  const uint8_t want[4] = {0, 1, 2, 255}, want_bool[4] = {0, 1, 1, 1};
  const int8_t want_int8[4] = {0, 1, 2, 0};
  for (size_t t = 0; t < sizeof targets / sizeof *targets; ++t) {
    for (int p = 0; p < 2; ++p) {
      weft_graph* graph = wt_graph_new();
      weft_output in =
          wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(4));
      weft_op_builder* b = weft_op_begin(graph, "Cast", "to_small");
      weft_op_add_input(b, in);
      weft_op_set_attr_dtype(b, "DstT", targets[t]);
      weft_op_set_device(b, OCL);
      weft_node* node = NULL;
      WT_OK(weft_op_finish(b, &node));
      weft_session_options options;
      weft_session_options_init(&options);
      options.devices = OCL ",/device:CPU:0";
      options.placement = policies[p];
      weft_session* session = NULL;
      WT_OK(weft_session_create(graph, &options, &session));
      weft_tensor* value = wt_tensor(WEFT_FLOAT32, WT_SHAPE(4), x);
      weft_output fetch = {node, 0};
      weft_tensor* out = NULL;
      weft_status* status =
          weft_session_run(session, &in, &value, 1, &fetch, 1, NULL, 0, &out);
      char dst[32];
      snprintf(dst, sizeof dst, "DstT=%s", weft_dtype_name(targets[t]));
      if (policies[p] == WEFT_PLACEMENT_STRICT) {
        WT_EXPECT_ERROR(status, WEFT_INVALID_ARGUMENT, "'to_small'", "Cast",
                        "SrcT=float32", dst, OCL, "strict");
      } else {
        WT_OK(status);
        wt_expect_shape(out, targets[t], WT_SHAPE(4));
        const void* ref = targets[t] == WEFT_BOOL   ? (const void*)want_bool
                          : targets[t] == WEFT_INT8 ? (const void*)want_int8
                                                    : (const void*)want;
        cr_expect(memcmp(weft_tensor_data(out), ref, 4) == 0,
                  "Cast to %s under soft placement",
                  weft_dtype_name(targets[t]));
        weft_tensor_destroy(out);
      }
      weft_tensor_destroy(value);
      weft_session_destroy(session);
      weft_graph_destroy(graph);
    }
  }
}

Test(opencl, cast_between_ints_and_floats) {
  REQUIRE_OPENCL();
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                              WEFT_FLOAT16, WEFT_BFLOAT16};
  wt_rng rng = {6};
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) {
      if (i == j) continue;
      cast_case(types[i], types[j], tricky_f32(&rng, 1001));
    }
  }
}

Test(opencl, cast_empty) {
  REQUIRE_OPENCL();
  wt_rng rng = {7};
  cast_case(WEFT_FLOAT32, WEFT_BFLOAT16,
            random_f32(&rng, WT_SHAPE(0, 4), 0.0f, 1.0f));
}

/* ---- MatMul ------------------------------------------------------------- */

static void matmul_case(int64_t m, int64_t k, int64_t n, int ta, int tb,
                        wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t a_dims[2] = {ta ? k : m, ta ? m : k};
  const int64_t b_dims[2] = {tb ? n : k, tb ? k : n};
  weft_output a = feed(graph, &set, "a", random_f32(rng, a_dims, 2, -1, 1));
  weft_output b = feed(graph, &set, "b", random_f32(rng, b_dims, 2, -1, 1));
  weft_op_builder* op = weft_op_begin(graph, "MatMul", "c");
  weft_op_add_input(op, a);
  weft_op_add_input(op, b);
  weft_op_set_attr_bool(op, "transpose_a", ta);
  weft_op_set_attr_bool(op, "transpose_b", tb);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(op, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "MatMul %lldx%lld @ %lldx%lld ta=%d tb=%d",
           (long long)m, (long long)k, (long long)k, (long long)n, ta, tb);
  /* Sums of k products of values in [-1, 1], in different orders. */
  compare(graph, &set, 1e-5 * (double)(k > 0 ? k : 1), 1e-5, what);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, matmul_transposes_and_odd_sizes) {
  REQUIRE_OPENCL();
  wt_rng rng = {8};
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      matmul_case(37, 53, 29, ta, tb, &rng);
      matmul_case(1, 1, 1, ta, tb, &rng);
      matmul_case(130, 17, 65, ta, tb, &rng);
    }
  }
}

Test(opencl, matmul_empty) {
  REQUIRE_OPENCL();
  wt_rng rng = {9};
  matmul_case(0, 5, 3, 0, 0, &rng);
  matmul_case(4, 0, 3, 0, 0, &rng); /* k = 0: zeros */
  matmul_case(4, 5, 0, 0, 1, &rng);
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 512^3 on both devices: correct, and the rate printed (a report, not a
 * pass condition: the machines differ). */
Test(opencl, matmul_512_rate) {
  REQUIRE_OPENCL();
  wt_rng rng = {10};
  const int64_t n = 512;
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output a = feed(graph, &set, "a", random_f32(&rng, WT_SHAPE(512, 512), -1, 1));
  weft_output b = feed(graph, &set, "b", random_f32(&rng, WT_SHAPE(512, 512), -1, 1));
  set.fetches[0] = wt_apply2(graph, "MatMul", "c", a, b);
  set.num_fetches = 1;
  compare(graph, &set, 1e-3, 1e-4, "MatMul 512^3");
  const char* devices[2] = {OCL, "CPU"};
  double rate[2];
  for (int d = 0; d < 2; ++d) {
    weft_session* session = session_on(graph, devices[d]);
    weft_tensor* out = NULL;
    WT_OK(weft_session_run(session, set.feeds, set.values, 2, set.fetches, 1,
                           NULL, 0, &out)); /* warm: plans, builds */
    weft_tensor_destroy(out);
    const int reps = 10;
    const double start = seconds_now();
    for (int r = 0; r < reps; ++r) {
      WT_OK(weft_session_run(session, set.feeds, set.values, 2, set.fetches,
                             1, NULL, 0, &out));
      weft_tensor_destroy(out);
    }
    const double elapsed = (seconds_now() - start) / reps;
    rate[d] = 2.0 * (double)(n * n * n) / elapsed / 1e9;
    weft_session_destroy(session);
  }
  fprintf(stderr,
          "MatMul 512^3 float32 (whole run(), feeds and fetch included): "
          "OpenCL %.1f GFLOP/s, CPU %.1f GFLOP/s\n",
          rate[0], rate[1]);
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- Reductions --------------------------------------------------------- */

static void reduce_case(const char* op, weft_tensor* value,
                        const int64_t* axes, int32_t num_axes, int has_axes,
                        int keep_dims, double rel_tol) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", value);
  weft_op_builder* b = weft_op_begin(graph, op, "y");
  weft_op_add_input(b, x);
  if (has_axes) weft_op_set_attr_int_list(b, "axes", axes, num_axes);
  weft_op_set_attr_bool(b, "keep_dims", keep_dims);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.num_fetches = 1;
  char what[128];
  snprintf(what, sizeof what, "%s over %d axes%s (keep_dims %d)", op,
           has_axes ? num_axes : -1, has_axes ? "" : " (all)", keep_dims);
  compare(graph, &set, 1e-5, rel_tol, what);
  release(&set);
  weft_graph_destroy(graph);
}

typedef struct axes_case {
  int64_t axes[3];
  int32_t count;
  int has_axes;
} axes_case;

static const axes_case kAxes[] = {
    {{0}, 0, 0},     /* absent: every axis */
    {{0}, 0, 1},     /* empty: none */
    {{0}, 1, 1},     {{1}, 1, 1}, {{-1}, 1, 1},
    {{0, 2}, 2, 1},  {{1, 2}, 2, 1}, {{0, 1}, 2, 1},
};

Test(opencl, reductions_float32) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Sum", "Mean", "Max", "Min", "Prod"};
  wt_rng rng = {11};
  for (size_t o = 0; o < 5; ++o) {
    const int prod = strcmp(kOps[o], "Prod") == 0;
    for (size_t a = 0; a < sizeof kAxes / sizeof *kAxes; ++a) {
      for (int keep = 0; keep < 2; ++keep) {
        /* Products of many values stay finite near 1. */
        weft_tensor* x = random_f32(&rng, WT_SHAPE(5, 300, 7),
                                    prod ? 0.99f : -1.0f, prod ? 1.01f : 1.0f);
        reduce_case(kOps[o], x, kAxes[a].axes, kAxes[a].count,
                    kAxes[a].has_axes, keep, 1e-4);
      }
    }
  }
}

Test(opencl, reductions_int32) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Sum", "Mean", "Max", "Min", "Prod"};
  wt_rng rng = {12};
  for (size_t o = 0; o < 5; ++o) {
    for (size_t a = 0; a < sizeof kAxes / sizeof *kAxes; ++a) {
      /* Sums and products wrap the same way on both. */
      weft_tensor* x = random_i32(&rng, WT_SHAPE(4, 70, 3), -100000, 100000);
      reduce_case(kOps[o], x, kAxes[a].axes, kAxes[a].count,
                  kAxes[a].has_axes, 0, 0);
    }
  }
}

Test(opencl, reductions_large) {
  REQUIRE_OPENCL();
  wt_rng rng = {13};
  /* One output from many: a single work-group's local reduction. */
  reduce_case("Sum", random_f32(&rng, WT_SHAPE(1000003), 0, 1), NULL, 0, 0, 0,
              1e-4);
  reduce_case("Max", random_f32(&rng, WT_SHAPE(1000003), -5, 5), NULL, 0, 0,
              0, 0);
  const int64_t rows[] = {1};
  const int64_t cols[] = {0};
  reduce_case("Mean", random_f32(&rng, WT_SHAPE(300, 5000), -1, 1), rows, 1,
              1, 0, 1e-4);
  reduce_case("Sum", random_f32(&rng, WT_SHAPE(5000, 300), -1, 1), cols, 1, 1,
              1, 1e-4);
  reduce_case("Min", random_f32(&rng, WT_SHAPE(100000, 3), -1, 1), rows, 1, 1,
              0, 0);
}

/* The NaN contract (runtime/ops/CONVENTIONS.md), checked on the OpenCL
 * device against values worked here rather than against the CPU: NaN
 * propagates through Maximum, Minimum, Max and Min, in either operand and
 * at any position of a row, short or long enough for work-group trees. */
Test(opencl, nan_propagates_through_maxima_and_minima) {
  REQUIRE_OPENCL();
  const float a[4] = {NAN, 1, NAN, -2}, b[4] = {1, NAN, NAN, 3};
  static const char* const kPairOps[] = {"Maximum", "Minimum"};
  for (int o = 0; o < 2; ++o) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_FLOAT32,
                                                     WT_SHAPE(4), a));
    weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_FLOAT32,
                                                     WT_SHAPE(4), b));
    set.fetches[0] = wt_apply2(graph, kPairOps[o], "m", x, y);
    set.num_fetches = 1;
    weft_tensor* out[MAX_FETCHES] = {0};
    WT_OK(run_on(graph, OCL, &set, out));
    const float* v = weft_tensor_data(out[0]);
    for (int k = 0; k < 3; ++k)
      cr_expect(isnan(v[k]), "%s element %d is %g", kPairOps[o], k, v[k]);
    cr_expect_eq(v[3], o == 0 ? 3.0f : -2.0f, "%s element 3", kPairOps[o]);
    weft_tensor_destroy(out[0]);
    release(&set);
    weft_graph_destroy(graph);
  }
  static const char* const kReductions[] = {"Max", "Min"};
  const int64_t lengths[] = {7, 4099};
  for (int o = 0; o < 2; ++o)
    for (int l = 0; l < 2; ++l) {
      const int64_t n = lengths[l];
      float* v = malloc(sizeof(float) * 3 * (size_t)n);
      for (int64_t k = 0; k < 3 * n; ++k) v[k] = (float)(k % 13) - 6;
      v[0] = NAN;              /* row 0: first */
      v[n + n / 2] = NAN;      /* row 1: middle */
      v[n - 1] = NAN;          /* row 0: last as well */
      float extreme = v[2 * n]; /* row 2 has none */
      for (int64_t k = 2 * n; k < 3 * n; ++k)
        extreme = o == 0 ? fmaxf(extreme, v[k]) : fminf(extreme, v[k]);
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, n), v));
      weft_op_builder* b_ = weft_op_begin(graph, kReductions[o], "r");
      weft_op_add_input(b_, x);
      weft_op_set_attr_int_list(b_, "axes", (const int64_t[]){1}, 1);
      weft_node* node = NULL;
      WT_OK(weft_op_finish(b_, &node));
      set.fetches[0] = (weft_output){node, 0};
      set.num_fetches = 1;
      weft_tensor* out[MAX_FETCHES] = {0};
      WT_OK(run_on(graph, OCL, &set, out));
      const float* r = weft_tensor_data(out[0]);
      cr_expect(isnan(r[0]) && isnan(r[1]), "%s of rows with NaN: %g, %g",
                kReductions[o], r[0], r[1]);
      cr_expect_eq(r[2], extreme, "%s of a row without NaN: %g, not %g",
                   kReductions[o], r[2], extreme);
      weft_tensor_destroy(out[0]);
      release(&set);
      weft_graph_destroy(graph);
      free(v);
    }
}

Test(opencl, reductions_empty) {
  REQUIRE_OPENCL();
  wt_rng rng = {14};
  const int64_t axis0[] = {0};
  reduce_case("Sum", random_f32(&rng, WT_SHAPE(0, 3), 0, 1), axis0, 1, 1, 0, 0);
  reduce_case("Prod", random_f32(&rng, WT_SHAPE(0, 3), 0, 1), axis0, 1, 1, 0,
              0);
  reduce_case("Mean", random_f32(&rng, WT_SHAPE(0, 3), 0, 1), axis0, 1, 1, 1,
              0);
  const int64_t axis1[] = {1};
  reduce_case("Max", random_f32(&rng, WT_SHAPE(0, 3), 0, 1), axis1, 1, 1, 0, 0);
  reduce_case("Sum", random_f32(&rng, WT_SHAPE(0, 3), 0, 1), NULL, 0, 0, 0, 0);
}

/* ---- Softmax, BiasAdd, losses ------------------------------------------- */

Test(opencl, softmax_and_log_softmax) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"Softmax", "LogSoftmax"};
  const int64_t shapes[][3] = {{4, 1000, 0}, {3, 7, 0}, {2, 3, 5}, {0, 5, 0},
                               {1, 1, 0}};
  const int32_t ranks[] = {2, 2, 3, 2, 2};
  wt_rng rng = {15};
  for (int o = 0; o < 2; ++o) {
    for (int s = 0; s < 5; ++s) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           random_f32(&rng, shapes[s], ranks[s], -30, 30));
      set.fetches[0] = wt_apply1(graph, kOps[o], "y", x);
      set.num_fetches = 1;
      compare(graph, &set, 1e-6, 1e-5, kOps[o]);
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

Test(opencl, bias_add) {
  REQUIRE_OPENCL();
  wt_rng rng = {16};
  for (int int_type = 0; int_type < 2; ++int_type) {
    for (int empty = 0; empty < 2; ++empty) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      const int64_t dims[3] = {empty ? 0 : 4, 5, 6};
      weft_output x = feed(graph, &set, "x",
                           int_type ? random_i32(&rng, dims, 3, -9, 9)
                                    : random_f32(&rng, dims, 3, -1, 1));
      weft_output b = feed(graph, &set, "b",
                           int_type ? random_i32(&rng, WT_SHAPE(6), -9, 9)
                                    : random_f32(&rng, WT_SHAPE(6), -1, 1));
      set.fetches[0] = wt_apply2(graph, "BiasAdd", "y", x, b);
      set.num_fetches = 1;
      compare(graph, &set, 1e-6, 1e-6, "BiasAdd");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

static void xent_case(int64_t batch, int64_t classes, int sparse,
                      weft_dtype label_type, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t dims[2] = {batch, classes};
  weft_output features =
      feed(graph, &set, "features", random_f32(rng, dims, 2, -10, 10));
  weft_tensor* labels_value = NULL;
  if (sparse) {
    const int64_t n = batch > 0 ? batch : 1;
    int64_t* l64 = malloc((size_t)n * sizeof(int64_t));
    int32_t* l32 = malloc((size_t)n * sizeof(int32_t));
    for (int64_t b = 0; b < batch; ++b) {
      l64[b] = (int64_t)(wt_rng_next(rng) % (uint64_t)classes);
      l32[b] = (int32_t)l64[b];
    }
    labels_value = wt_tensor(label_type, dims, 1,
                             label_type == WEFT_INT64 ? (void*)l64 : (void*)l32);
    free(l64);
    free(l32);
  } else {
    /* Rows of a distribution: non-negative, summing to 1. */
    labels_value = random_f32(rng, dims, 2, 0, 1);
    float* l = weft_tensor_data(labels_value);
    for (int64_t b = 0; b < batch; ++b) {
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += l[b * classes + c];
      for (int64_t c = 0; c < classes; ++c) l[b * classes + c] /= (float)sum;
    }
  }
  weft_output labels = feed(graph, &set, "labels", labels_value);
  weft_op_builder* op = weft_op_begin(
      graph,
      sparse ? "SparseSoftmaxCrossEntropyWithLogits"
             : "SoftmaxCrossEntropyWithLogits",
      "xent");
  weft_op_add_input(op, features);
  weft_op_add_input(op, labels);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(op, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.fetches[1] = (weft_output){node, 1};
  set.num_fetches = 2;
  char what[96];
  snprintf(what, sizeof what, "%s xent [%lld, %lld]",
           sparse ? "sparse" : "dense", (long long)batch, (long long)classes);
  compare(graph, &set, 1e-5, 1e-5, what);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, softmax_cross_entropy) {
  REQUIRE_OPENCL();
  wt_rng rng = {17};
  xent_case(8, 10, 0, WEFT_FLOAT32, &rng);
  xent_case(3, 1000, 0, WEFT_FLOAT32, &rng);
  xent_case(0, 10, 0, WEFT_FLOAT32, &rng);
  xent_case(8, 10, 1, WEFT_INT32, &rng);
  xent_case(3, 1000, 1, WEFT_INT64, &rng);
  xent_case(5, 1, 1, WEFT_INT32, &rng);
  xent_case(0, 10, 1, WEFT_INT64, &rng);
}

Test(opencl, sparse_label_out_of_range_is_an_error) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  wt_rng rng = {18};
  weft_output features = feed(graph, &set, "features",
                              random_f32(&rng, WT_SHAPE(3, 4), -1, 1));
  const int32_t bad[3] = {0, 4, 1};
  weft_output labels =
      feed(graph, &set, "labels", wt_tensor(WEFT_INT32, WT_SHAPE(3), bad));
  set.fetches[0] =
      wt_apply2(graph, "SparseSoftmaxCrossEntropyWithLogits", "loss",
                features, labels);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "loss", "label 4 in batch row 1", "[0, 4)");
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- A small network, every op on the device ---------------------------- */

Test(opencl, chained_graph_with_lossy_cast_round_trip) {
  REQUIRE_OPENCL();
  wt_rng rng = {19};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(16, 32), -1, 1));
  weft_output w = feed(graph, &set, "w", random_f32(&rng, WT_SHAPE(32, 10), -1, 1));
  weft_output bias = feed(graph, &set, "b", random_f32(&rng, WT_SHAPE(10), -1, 1));
  weft_output h = wt_apply2(graph, "MatMul", "h", x, w);
  weft_output hb = wt_apply2(graph, "BiasAdd", "hb", h, bias);
  weft_output r = wt_apply1(graph, "Relu", "r", hb);
  weft_output narrow = cast(graph, "narrow", r, WEFT_BFLOAT16);
  weft_output wide = cast(graph, "wide", narrow, WEFT_FLOAT32);
  weft_output p = wt_apply1(graph, "Softmax", "p", wide);
  const int64_t all_axes[] = {0, 1};
  weft_op_builder* b = weft_op_begin(graph, "Mean", "m");
  weft_op_add_input(b, p);
  weft_op_set_attr_int_list(b, "axes", all_axes, 2);
  weft_node* mean = NULL;
  WT_OK(weft_op_finish(b, &mean));
  set.fetches[0] = p;
  set.fetches[1] = (weft_output){mean, 0};
  set.fetches[2] = narrow;
  set.num_fetches = 3;
  /* The bfloat16 values agree bit for bit only when their float32 inputs
   * did; MatMul's order of sums may differ, so compare narrowly. */
  weft_tensor* ocl[3] = {0};
  weft_tensor* cpu[3] = {0};
  WT_OK(run_on(graph, OCL, &set, ocl));
  WT_OK(run_on(graph, "CPU", &set, cpu));
  expect_match(ocl[0], cpu[0], 1e-2, 1e-2, "softmax after bfloat16");
  expect_match(ocl[1], cpu[1], 1e-6, 1e-5, "mean");
  for (int i = 0; i < 3; ++i) {
    weft_tensor_destroy(ocl[i]);
    weft_tensor_destroy(cpu[i]);
  }
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- Random ops and linear algebra -------------------------------------- */

static const weft_dtype kRandomTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64,
                                          WEFT_FLOAT16, WEFT_BFLOAT16};

/* A RandomUniform, RandomNormal or TruncatedNormal node of `dtype` and
 * shape [count], seeded; the normal ones with mean 1.5 and stddev 2. */
static weft_output generator(weft_graph* graph, const char* op,
                             const char* name, weft_dtype dtype,
                             int64_t count, int64_t seed, int64_t seed2) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_set_attr_int_list(b, "shape", &count, 1);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  weft_op_set_attr_int(b, "seed", seed);
  weft_op_set_attr_int(b, "seed2", seed2);
  if (strcmp(op, "RandomUniform") != 0) {
    weft_op_set_attr_float(b, "mean", 1.5);
    weft_op_set_attr_float(b, "stddev", 2.0);
  }
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* The generators' values on OpenCL against the CPU's for the same seeds:
 * uniforms bit for bit (only exact operations make them), normals within a
 * few ulps (the devices' log, sin and cos may round differently), every
 * dtype, with a count that leaves a partial last group of lanes.  The
 * 16-bit types are compared through an exact Cast to float32. */
Test(opencl, random_generators_match_the_cpu) {
  REQUIRE_OPENCL();
  const char* const ops[] = {"RandomUniform", "RandomNormal",
                             "TruncatedNormal"};
  for (int o = 0; o < 3; ++o) {
    for (int t = 0; t < 4; ++t) {
      const weft_dtype dtype = kRandomTypes[t];
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output y = generator(graph, ops[o], "y", dtype, 1027, 17, 5);
      const int narrow = dtype == WEFT_FLOAT16 || dtype == WEFT_BFLOAT16;
      set.fetches[0] = narrow ? cast(graph, "wide", y, WEFT_FLOAT32) : y;
      set.num_fetches = 1;
      char what[96];
      snprintf(what, sizeof what, "%s %s", ops[o], weft_dtype_name(dtype));
      if (o == 0) {
        compare(graph, &set, 0, 0, what);
      } else {
        /* One ulp of the 16-bit types where float32 values near a
         * rounding boundary differ in their last bits. */
        const double rel = dtype == WEFT_FLOAT64   ? 1e-13
                           : dtype == WEFT_FLOAT32 ? 1e-6
                           : dtype == WEFT_FLOAT16 ? 1e-3
                                                   : 8e-3;
        compare(graph, &set, rel, rel, what);
      }
      weft_graph_destroy(graph);
    }
  }
}

/* Statistics of the OpenCL draws themselves: uniforms in [0, 1) with mean
 * 1/2, normals with the asked mean and stddev, truncated ones within two
 * standard deviations. */
Test(opencl, random_generators_have_their_distributions) {
  REQUIRE_OPENCL();
  const int64_t n = 100000;
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  set.fetches[0] = generator(graph, "RandomUniform", "u", WEFT_FLOAT32, n, 3, 0);
  set.fetches[1] = generator(graph, "RandomNormal", "z", WEFT_FLOAT32, n, 3, 0);
  set.fetches[2] =
      generator(graph, "TruncatedNormal", "t", WEFT_FLOAT32, n, 3, 0);
  set.num_fetches = 3;
  weft_tensor* out[3] = {0};
  WT_OK(run_on(graph, OCL, &set, out));
  for (int f = 0; f < 3; ++f) {
    const float* v = weft_tensor_data(out[f]);
    double sum = 0, squares = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t k = 0; k < n; ++k) {
      sum += v[k];
      squares += (double)v[k] * v[k];
      lo = fmin(lo, v[k]);
      hi = fmax(hi, v[k]);
    }
    const double mean = sum / (double)n;
    const double sd = sqrt(squares / (double)n - mean * mean);
    if (f == 0) {
      cr_expect(lo >= 0 && hi < 1, "uniform outside [0, 1): %g .. %g", lo, hi);
      cr_expect(fabs(mean - 0.5) < 0.01, "uniform mean %g", mean);
    } else {
      cr_expect(fabs(mean - 1.5) < 0.03, "normal mean %g", mean);
      /* A normal truncated at 2 sd has sd 0.880 of the full one's. */
      const double want = f == 1 ? 2.0 : 2.0 * 0.8796;
      cr_expect(fabs(sd - want) < 0.03, "stddev %g, want %g", sd, want);
      if (f == 2) {
        cr_expect(lo >= 1.5 - 4.0 && hi <= 1.5 + 4.0,
                  "truncated normal outside mean +- 2 sd: %g .. %g", lo, hi);
      }
    }
    weft_tensor_destroy(out[f]);
  }
  weft_graph_destroy(graph);
}

/* Each run of a node draws afresh (the run counter is part of the
 * counter), the same way on both devices: run r on OpenCL equals run r on
 * the CPU, and runs differ from each other; other seeds give other
 * values. */
Test(opencl, random_values_change_with_runs_and_seeds_as_on_the_cpu) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  weft_output a = generator(graph, "RandomUniform", "a", WEFT_FLOAT32, 64, 9, 1);
  weft_output b = generator(graph, "RandomUniform", "b", WEFT_FLOAT32, 64, 9, 2);
  weft_output c = generator(graph, "RandomUniform", "c", WEFT_FLOAT32, 64, 10, 1);
  weft_session* ocl = session_on(graph, OCL);
  weft_session* cpu = session_on(graph, "CPU");
  const weft_output fetches[3] = {a, b, c};
  weft_tensor* first[3] = {0};
  for (int run = 0; run < 3; ++run) {
    weft_tensor* o[3] = {0};
    weft_tensor* r[3] = {0};
    WT_OK(weft_session_run(ocl, NULL, NULL, 0, fetches, 3, NULL, 0, o));
    WT_OK(weft_session_run(cpu, NULL, NULL, 0, fetches, 3, NULL, 0, r));
    for (int i = 0; i < 3; ++i) {
      char what[64];
      snprintf(what, sizeof what, "run %d, node %d", run, i);
      expect_match(o[i], r[i], 0, 0, what);
      weft_tensor_destroy(r[i]);
    }
    cr_expect(memcmp(weft_tensor_data(o[0]), weft_tensor_data(o[1]),
                     64 * sizeof(float)) != 0, "seed2 changes nothing");
    cr_expect(memcmp(weft_tensor_data(o[0]), weft_tensor_data(o[2]),
                     64 * sizeof(float)) != 0, "seed changes nothing");
    if (run == 0) {
      for (int i = 0; i < 3; ++i) first[i] = o[i];
    } else {
      cr_expect(memcmp(weft_tensor_data(o[0]), weft_tensor_data(first[0]),
                       64 * sizeof(float)) != 0,
                "run %d repeats run 0", run);
      for (int i = 0; i < 3; ++i) weft_tensor_destroy(o[i]);
    }
  }
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(first[i]);
  weft_session_destroy(ocl);
  weft_session_destroy(cpu);
  weft_graph_destroy(graph);
}

/* A Dropout of `x` at `rate`, seeded. */
static weft_output dropout(weft_graph* graph, weft_output x, double rate,
                           int64_t seed) {
  weft_op_builder* b = weft_op_begin(graph, "Dropout", "drop");
  weft_op_add_input(b, x);
  weft_op_set_attr_float(b, "rate", rate);
  weft_op_set_attr_int(b, "seed", seed);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* Dropout keeps the same elements as on the CPU, scales them by
 * 1 / (1 - rate) and zeroes the rest (bit for bit, every dtype); about
 * 1 - rate of them survive; rate 0 is the identity. */
Test(opencl, dropout_mask_matches_the_cpu) {
  REQUIRE_OPENCL();
  wt_rng rng = {41};
  const int64_t n = 4099;
  for (int t = 0; t < 4; ++t) {
    const weft_dtype dtype = kRandomTypes[t];
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x32 =
        feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(n), 0.5f, 2.0f));
    weft_output x = dtype == WEFT_FLOAT32 ? x32 : cast(graph, "x_t", x32, dtype);
    set.fetches[0] = dropout(graph, x, 0.3, 12);
    set.num_fetches = 1;
    char what[64];
    snprintf(what, sizeof what, "Dropout %s", weft_dtype_name(dtype));
    compare(graph, &set, 0, 0, what);
    if (dtype == WEFT_FLOAT32) {
      weft_tensor* out = NULL;
      WT_OK(run_on(graph, OCL, &set, &out));
      const float* xs = weft_tensor_data(set.values[0]);
      const float* ys = weft_tensor_data(out);
      int64_t kept = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (ys[k] == 0.0f) {
          cr_assert(!signbit(ys[k]), "element %lld dropped to -0", (long long)k);
          continue;
        }
        ++kept;
        cr_assert_float_eq(ys[k], xs[k] * (float)(1.0 / 0.7), 0,
                           "element %lld kept but not scaled by 1/0.7",
                           (long long)k);
      }
      const double share = (double)kept / (double)n;
      cr_expect(fabs(share - 0.7) < 0.03, "kept %.3f of the elements", share);
      weft_tensor_destroy(out);
    }
    release(&set);
    weft_graph_destroy(graph);
  }
  /* rate 0: the input as it is. */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(7), -1, 1));
  set.fetches[0] = dropout(graph, x, 0.0, 3);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_OK(run_on(graph, OCL, &set, &out));
  expect_match(out, set.values[0], 0, 0, "Dropout rate 0");
  weft_tensor_destroy(out);
  release(&set);
  weft_graph_destroy(graph);
}

/* RandomShuffle permutes the rows as the CPU does (the same Fisher-Yates
 * on the same stream), for rows of every element size, and the result is
 * a permutation that moved something. */
Test(opencl, random_shuffle_matches_the_cpu) {
  REQUIRE_OPENCL();
  wt_rng rng = {43};
  const weft_dtype types[] = {WEFT_INT32, WEFT_UINT8, WEFT_FLOAT16,
                              WEFT_INT64};
  for (int t = 0; t < 4; ++t) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x",
                         random_bytes(&rng, types[t], WT_SHAPE(257, 3), NULL, 0));
    weft_op_builder* b = weft_op_begin(graph, "RandomShuffle", "shuffled");
    weft_op_add_input(b, x);
    weft_op_set_attr_int(b, "seed", 23);
    weft_node* node = NULL;
    WT_OK(weft_op_finish(b, &node));
    set.fetches[0] = (weft_output){node, 0};
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, weft_dtype_name(types[t]));
    release(&set);
    weft_graph_destroy(graph);
  }
  /* Rows holding their own index: a permutation of them, not the identity. */
  int32_t rows[500];
  for (int i = 0; i < 500; ++i) rows[i] = i;
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x =
      feed(graph, &set, "x", wt_tensor(WEFT_INT32, WT_SHAPE(500), rows));
  weft_op_builder* b = weft_op_begin(graph, "RandomShuffle", "shuffled");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "seed", 4);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_OK(run_on(graph, OCL, &set, &out));
  const int32_t* got = weft_tensor_data(out);
  int seen[500] = {0}, moved = 0;
  for (int i = 0; i < 500; ++i) {
    cr_assert(got[i] >= 0 && got[i] < 500 && !seen[got[i]],
              "element %d (%d) repeats or is out of range", i, got[i]);
    seen[got[i]] = 1;
    moved += got[i] != i;
  }
  cr_expect(moved > 400, "only %d of 500 rows moved", moved);
  weft_tensor_destroy(out);
  release(&set);
  weft_graph_destroy(graph);
}

/* A BatchMatMul of fed x and y (float32 values in [-1, 1), or int32 in
 * [-3, 3]) compared with the CPU: within float tolerance, integers
 * exactly; float16 through an exact Cast to float32. */
static void batch_matmul_case(weft_dtype dtype, const int64_t* x_dims,
                              int32_t x_rank, const int64_t* y_dims,
                              int32_t y_rank, int adj_x, int adj_y,
                              wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x, y;
  if (dtype == WEFT_INT32) {
    x = feed(graph, &set, "x", random_i32(rng, x_dims, x_rank, -3, 3));
    y = feed(graph, &set, "y", random_i32(rng, y_dims, y_rank, -3, 3));
  } else {
    x = feed(graph, &set, "x", random_f32(rng, x_dims, x_rank, -1, 1));
    y = feed(graph, &set, "y", random_f32(rng, y_dims, y_rank, -1, 1));
    if (dtype != WEFT_FLOAT32) {
      x = cast(graph, "x_t", x, dtype);
      y = cast(graph, "y_t", y, dtype);
    }
  }
  weft_op_builder* b = weft_op_begin(graph, "BatchMatMul", "z");
  weft_op_add_input(b, x);
  weft_op_add_input(b, y);
  weft_op_set_attr_bool(b, "adj_x", adj_x);
  weft_op_set_attr_bool(b, "adj_y", adj_y);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  const weft_output z = {node, 0};
  const int wide = dtype == WEFT_FLOAT16 || dtype == WEFT_FLOAT64;
  set.fetches[0] = wide ? cast(graph, "z32", z, WEFT_FLOAT32) : z;
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "BatchMatMul %s rank %d x rank %d adj %d%d",
           weft_dtype_name(dtype), x_rank, y_rank, adj_x, adj_y);
  const double k = (double)x_dims[x_rank - (adj_x ? 2 : 1)];
  if (dtype == WEFT_FLOAT16) {
    compare(graph, &set, 2e-3, 2e-3, what); /* a float16 ulp */
  } else {
    compare(graph, &set, 1e-5 * k, 1e-5, what);
  }
  release(&set);
  weft_graph_destroy(graph);
}

/* Batch dims broadcast as NumPy's (a missing or size-1 dim repeats the
 * other operand's matrices), with adjoints, odd sizes, rank 2 against
 * rank 4, and empty batches. */
Test(opencl, batch_matmul_broadcasting) {
  REQUIRE_OPENCL();
  wt_rng rng = {47};
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_FLOAT16,
                              WEFT_FLOAT64};
  for (int t = 0; t < 4; ++t) {
    const weft_dtype d = types[t];
    batch_matmul_case(d, WT_SHAPE(2, 1, 5, 7), WT_SHAPE(3, 7, 19), 0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(3, 7, 5), WT_SHAPE(1, 19, 7), 1, 1, &rng);
    batch_matmul_case(d, WT_SHAPE(9, 17), WT_SHAPE(2, 2, 17, 33), 0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(4, 1, 3, 2, 6), WT_SHAPE(1, 5, 1, 6, 4),
                      0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(0, 3, 4), WT_SHAPE(1, 4, 2), 0, 0, &rng);
    batch_matmul_case(d, WT_SHAPE(2, 3, 0), WT_SHAPE(2, 0, 2), 0, 0, &rng);
  }
}

/* One op on fed float matrices `x`. */
static void solver_case(const char* op, weft_dtype dtype, weft_tensor* value,
                        int adjoint, double tol) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", value);
  if (dtype == WEFT_FLOAT64) x = cast(graph, "x64", x, WEFT_FLOAT64);
  weft_op_builder* b = weft_op_begin(graph, op, "solved");
  weft_op_add_input(b, x);
  if (adjoint) weft_op_set_attr_bool(b, "adjoint", 1);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  set.fetches[0] = (weft_output){node, 0};
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "%s %s adjoint %d", op, weft_dtype_name(dtype),
           adjoint);
  compare(graph, &set, tol, tol, what);
  release(&set);
  weft_graph_destroy(graph);
}

/* Inverses and determinants of random batches (diagonally weighted, so
 * well conditioned) agree with the CPU's; so do the determinants of
 * matrices that need row swaps, of a singular one (0) and of an empty one
 * (1), and values beyond float32's range become infinities on both. */
Test(opencl, matrix_inverse_and_determinant) {
  REQUIRE_OPENCL();
  wt_rng rng = {53};
  const int64_t sizes[] = {1, 3, 8, 17};
  for (int s = 0; s < 4; ++s) {
    const int64_t m = sizes[s];
    for (int d = 0; d < 2; ++d) {
      const weft_dtype dtype = d ? WEFT_FLOAT64 : WEFT_FLOAT32;
      weft_tensor* x = random_f32(&rng, WT_SHAPE(5, m, m), -1, 1);
      float* v = weft_tensor_data(x);
      for (int64_t i = 0; i < 5 * m; ++i) v[i * m + i % m] += 2.0f;
      weft_tensor* copy = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5, m, m), v);
      weft_tensor* copy2 = wt_tensor(WEFT_FLOAT32, WT_SHAPE(5, m, m), v);
      const double tol = d ? 1e-12 : 1e-5;
      solver_case("MatrixInverse", dtype, x, 0, tol);
      solver_case("MatrixInverse", dtype, copy, 1, tol);
      solver_case("MatrixDeterminant", dtype, copy2, 0, tol);
    }
  }
  /* Pivoting: zeros on the diagonal; the second matrix is singular; the
   * third has a determinant of 2^150, beyond float32. */
  const float special[3][9] = {
      {0, 2, 1, 3, 0, 4, 1, 5, 0},
      {1, 2, 3, 2, 4, 6, 1, 0, 1},
      {0x1p50f, 0, 0, 0, 0x1p50f, 0, 0, 0, 0x1p50f},
  };
  solver_case("MatrixDeterminant", WEFT_FLOAT32,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 3, 3), special), 0, 1e-6);
  solver_case("MatrixDeterminant", WEFT_FLOAT64,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 3, 3), special), 0, 1e-12);
  solver_case("MatrixInverse", WEFT_FLOAT32,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 3, 3), special[0]), 0, 1e-6);
  solver_case("MatrixDeterminant", WEFT_FLOAT32,
              wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 0, 0), NULL), 0, 0);
}

/* A singular matrix (or one holding NaN) has no inverse: the kernel call
 * fails with the CPU's message, naming the first such matrix of the
 * batch. */
Test(opencl, singular_matrix_inverse_is_an_error) {
  REQUIRE_OPENCL();
  const float batches[2][3][4] = {
      /* matrix 1 is singular (rows proportional) */
      {{2, 1, 1, 3}, {1, 2, 2, 4}, {4, 3, 0, 1}},
      /* matrix 2 holds NaN */
      {{1, 0, 0, 1}, {2, 1, 1, 1}, {NAN, 1, 0, 1}},
  };
  for (int c = 0; c < 2; ++c) {
    for (int d = 0; d < 2; ++d) { /* float32, float64 */
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           wt_tensor(WEFT_FLOAT32, WT_SHAPE(3, 2, 2),
                                     batches[c]));
      if (d) x = cast(graph, "x64", x, WEFT_FLOAT64);
      set.fetches[0] = wt_apply1(graph, "MatrixInverse", "inverse", x);
      set.num_fetches = 1;
      const char* which = c == 0 ? "matrix 1 of the batch" : "matrix 2 of the batch";
      weft_tensor* out = NULL;
      WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                      "inverse", which, "not invertible");
      WT_EXPECT_ERROR(run_on(graph, "CPU", &set, &out), WEFT_INVALID_ARGUMENT,
                      "inverse", which, "not invertible");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

/* ---- Training: gradient ops, views, Fill, optimizers -------------------- */

/* Finishes builder `b` and returns its output `index`. */
static weft_output finish(weft_op_builder* b, int32_t index) {
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, index};
}

/* One op over two fed float32 inputs of shapes a_dims and b_dims, values in
 * [lo, hi), compared within the tolerances. */
static void two_input_case(const char* op, const int64_t* a_dims,
                           int32_t a_rank, const int64_t* b_dims,
                           int32_t b_rank, float lo, float hi, double tol,
                           wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output a = feed(graph, &set, "a", random_f32(rng, a_dims, a_rank, lo, hi));
  weft_output b = feed(graph, &set, "b", random_f32(rng, b_dims, b_rank, lo, hi));
  set.fetches[0] = wt_apply2(graph, op, "z", a, b);
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "%s rank %d / %d", op, a_rank, b_rank);
  compare(graph, &set, tol, tol, what);
  release(&set);
  weft_graph_destroy(graph);
}

/* ArgMax and ArgMin take the first of equal elements and the first NaN,
 * as the CPU does (runtime/ops/CONVENTIONS.md), along either axis. */
Test(opencl, arg_max_and_arg_min_pick_the_first_tie_and_nan) {
  REQUIRE_OPENCL();
  const float v[4 * 5] = {1, 3, 3, NAN, NAN, /* */ 2, 2, 2, 2, 2,
                          -1, NAN, 4, 4, -INFINITY, /* */ 0, -0.0f, 0, 7, 7};
  static const char* const kOps[] = {"ArgMax", "ArgMin"};
  for (int o = 0; o < 2; ++o)
    for (int64_t axis = 0; axis < 2; ++axis) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           wt_tensor(WEFT_FLOAT32, WT_SHAPE(4, 5), v));
      weft_op_builder* b = weft_op_begin(graph, kOps[o], "arg");
      weft_op_add_input(b, x);
      weft_op_set_attr_int(b, "axis", axis);
      weft_node* node = NULL;
      WT_OK(weft_op_finish(b, &node));
      set.fetches[0] = (weft_output){node, 0};
      set.num_fetches = 1;
      char what[64];
      snprintf(what, sizeof what, "%s along axis %lld", kOps[o],
               (long long)axis);
      compare(graph, &set, 0, 0, what);
      release(&set);
      weft_graph_destroy(graph);
    }
}

/* ---- Convolution and pooling --------------------------------------------- */

/* A pooling op over `x` with ksize = strides = 2 or 3x3 windows at stride
 * 2, SAME padding (clipped windows at the edges). */
static weft_output pool(weft_graph* graph, const char* op, const char* name,
                        const weft_output* inputs, int num_inputs,
                        int overlapping, int32_t output) {
  const int64_t k = overlapping ? 3 : 2;
  weft_op_builder* b = weft_op_begin(graph, op, name);
  for (int i = 0; i < num_inputs; ++i) weft_op_add_input(b, inputs[i]);
  weft_op_set_attr_int_list(b, "ksize", (const int64_t[]){1, k, k, 1}, 4);
  weft_op_set_attr_int_list(b, "strides", (const int64_t[]){1, 2, 2, 1}, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  return finish(b, output);
}

/* Ties, NaN (first in a window, later in a window, two in one) and
 * infinities: which element is a window's maximum decides where its
 * gradient goes, and both devices must pick the same one
 * (runtime/ops/CONVENTIONS.md: the first maximum, the first NaN). */
Test(opencl, pooling_ties_and_nan_agree_with_the_cpu) {
  REQUIRE_OPENCL();
  for (int overlapping = 0; overlapping < 2; ++overlapping) {
    float v[2 * 5 * 5 * 3];
    for (int k = 0; k < 75 * 2; ++k) v[k] = (float)((k * 7) % 5) - 2;
    v[0] = NAN;       /* first of its window */
    v[3 * 4] = NAN;   /* later in a window */
    v[3 * 6] = NAN;   /* a second NaN nearby */
    v[3 * 20 + 1] = INFINITY;
    v[75 + 7] = -INFINITY;
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x",
                         wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 5, 5, 3), v));
    const int64_t out = 3;
    float g[2 * 3 * 3 * 3];
    for (int k = 0; k < 54; ++k) g[k] = (float)(k % 7) - 3;
    weft_output dy = feed(graph, &set, "dy",
                          wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, out, out, 3), g));
    weft_output max_in[1] = {x};
    set.fetches[0] = pool(graph, "MaxPool", "max", max_in, 1, overlapping, 0);
    weft_output grad_in[2] = {x, dy};
    set.fetches[1] =
        pool(graph, "MaxPoolGrad", "max_grad", grad_in, 2, overlapping, 0);
    set.fetches[2] = pool(graph, "MaxPoolReluGrad", "max_relu_grad", grad_in,
                          2, overlapping, 0);
    /* Its window index (output 1); its maximum is MaxPool's. */
    set.fetches[3] = pool(graph, "MaxPoolWithWindowIndex", "with_index",
                          max_in, 1, overlapping, 1);
    set.num_fetches = 4;
    compare(graph, &set, 0, 0, overlapping ? "3x3 windows" : "2x2 windows");
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* An index naming a position outside its (clipped) window cannot have
 * come from MaxPoolWithWindowIndex: INVALID_ARGUMENT naming the node and
 * the element, as on the CPU, never a write outside the gradient. */
Test(opencl, window_index_outside_its_window_is_an_error) {
  REQUIRE_OPENCL();
  for (int d = 0; d < 2; ++d) {
    const char* device = d == 0 ? OCL : "CPU";
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    /* 2x2 windows at stride 2 over 3x3 (SAME): the last row and column of
     * windows hold one row or column of the input.  Element 3 (window
     * (0, 1), channel 0) names position 1, column 1 of a window clipped
     * to one column. */
    uint8_t index[2 * 2] = {0, 0, 0, 0};
    index[1] = 1;
    float g[4] = {1, 2, 3, 4};
    weft_output ix = feed(graph, &set, "index",
                          wt_tensor(WEFT_UINT8, WT_SHAPE(1, 2, 2, 1), index));
    weft_output dy = feed(graph, &set, "dy",
                          wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 2, 2, 1), g));
    weft_op_builder* b =
        weft_op_begin(graph, "MaxPoolGradFromWindowIndex", "from_index");
    weft_op_add_input(b, ix);
    weft_op_add_input(b, dy);
    weft_op_set_attr_int_list(b, "input_sizes",
                              (const int64_t[]){1, 3, 3, 1}, 4);
    weft_op_set_attr_int_list(b, "ksize", (const int64_t[]){1, 2, 2, 1}, 4);
    weft_op_set_attr_int_list(b, "strides", (const int64_t[]){1, 2, 2, 1},
                              4);
    weft_op_set_attr_string(b, "padding", "SAME");
    set.fetches[0] = finish(b, 0);
    set.num_fetches = 1;
    weft_tensor* out[MAX_FETCHES] = {0};
    WT_EXPECT_ERROR(run_on(graph, device, &set, out), WEFT_INVALID_ARGUMENT,
                    "from_index", "window_index", "MaxPoolWithWindowIndex");
    release(&set);
    weft_graph_destroy(graph);
  }
}

Test(opencl, elementwise_gradients) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"ReluGrad", "SigmoidGrad", "TanhGrad",
                                     "SqrtGrad", "RsqrtGrad"};
  wt_rng rng = {20};
  for (size_t o = 0; o < sizeof kOps / sizeof *kOps; ++o) {
    /* SqrtGrad and RsqrtGrad divide by or cube y: keep it away from 0. */
    const int positive = o >= 3;
    const float lo = positive ? 0.1f : -2.0f;
    two_input_case(kOps[o], WT_SHAPE(37, 19), WT_SHAPE(37, 19), lo, 2.0f,
                   1e-6, &rng);
    two_input_case(kOps[o], WT_SHAPE(0, 4), WT_SHAPE(0, 4), lo, 2.0f, 1e-6,
                   &rng);
    two_input_case(kOps[o], NULL, 0, NULL, 0, lo, 2.0f, 1e-6, &rng);
  }
}

/* `op` (SumGrad or MeanGrad) of x [5, 30, 7] over `axes`, its grad the
 * matching reduction of another x-shaped value (so every shape agrees). */
static void spread_case(const char* op, const axes_case* axes, int keep,
                        wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(rng, WT_SHAPE(5, 30, 7), -1, 1));
  weft_output u = feed(graph, &set, "u", random_f32(rng, WT_SHAPE(5, 30, 7), -1, 1));
  weft_op_builder* b = weft_op_begin(graph, "Sum", "dy");
  weft_op_add_input(b, u);
  if (axes->has_axes) weft_op_set_attr_int_list(b, "axes", axes->axes, axes->count);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  weft_output dy = finish(b, 0);
  b = weft_op_begin(graph, op, "dx");
  weft_op_add_input(b, dy);
  weft_op_add_input(b, x);
  if (axes->has_axes) weft_op_set_attr_int_list(b, "axes", axes->axes, axes->count);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  char what[96];
  snprintf(what, sizeof what, "%s over %d axes (keep_dims %d)", op,
           axes->has_axes ? axes->count : -1, keep);
  compare(graph, &set, 1e-5, 1e-5, what);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, sum_grad_and_mean_grad) {
  REQUIRE_OPENCL();
  static const char* const kOps[] = {"SumGrad", "MeanGrad"};
  wt_rng rng = {21};
  for (int o = 0; o < 2; ++o) {
    for (size_t a = 0; a < sizeof kAxes / sizeof *kAxes; ++a) {
      for (int keep = 0; keep < 2; ++keep) {
        spread_case(kOps[o], &kAxes[a], keep, &rng);
      }
    }
  }
}

Test(opencl, sum_to_shape_of) {
  REQUIRE_OPENCL();
  wt_rng rng = {22};
  static const int64_t likes[][3] = {{6, 5},    {1, 5}, {6, 1}, {3, 5},
                                     {4, 1, 1}, {2, 5}, {4, 6, 5}};
  static const int32_t ranks[] = {2, 2, 2, 2, 3, 2, 3};
  for (size_t k = 0; k < sizeof ranks / sizeof *ranks; ++k) {
    two_input_case("SumToShapeOf", WT_SHAPE(4, 6, 5), likes[k], ranks[k], -1,
                   1, 1e-5, &rng);
  }
  two_input_case("SumToShapeOf", WT_SHAPE(4, 6, 5), NULL, 0, -1, 1, 1e-5,
                 &rng);
  two_input_case("SumToShapeOf", WT_SHAPE(300, 70), WT_SHAPE(70), -1, 1, 1e-4,
                 &rng);
  two_input_case("SumToShapeOf", WT_SHAPE(0, 3), WT_SHAPE(3), -1, 1, 0, &rng);
}

/* Views after a device op: same bytes, the new shape. */
Test(opencl, shape_views) {
  REQUIRE_OPENCL();
  wt_rng rng = {23};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(4, 1, 6), -1, 1));
  weft_output like = feed(graph, &set, "like", random_f32(&rng, WT_SHAPE(8, 3), -1, 1));
  weft_output neg = wt_apply1(graph, "Neg", "neg", x);
  weft_op_builder* b = weft_op_begin(graph, "Reshape", "reshaped");
  weft_op_add_input(b, neg);
  const int64_t shape[] = {-1, 12};
  weft_op_set_attr_int_list(b, "shape", shape, 2);
  set.fetches[0] = finish(b, 0);
  b = weft_op_begin(graph, "ExpandDims", "expanded");
  weft_op_add_input(b, neg);
  weft_op_set_attr_int(b, "axis", -1);
  set.fetches[1] = finish(b, 0);
  b = weft_op_begin(graph, "Squeeze", "squeezed");
  weft_op_add_input(b, neg);
  set.fetches[2] = finish(b, 0);
  set.fetches[3] = wt_apply2(graph, "ReshapeLike", "reshaped_like", neg, like);
  set.num_fetches = 4;
  compare(graph, &set, 0, 0, "views");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, fill) {
  REQUIRE_OPENCL();
  for (int int_type = 0; int_type < 2; ++int_type) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    const float f = 2.5f;
    const int32_t i = -7;
    weft_output v = feed(graph, &set, "v",
                         int_type ? wt_tensor(WEFT_INT32, NULL, 0, &i)
                                  : wt_tensor(WEFT_FLOAT32, NULL, 0, &f));
    /* A device op first, so Fill reads a device value. */
    weft_output n = wt_apply1(graph, "Neg", "neg", v);
    weft_op_builder* b = weft_op_begin(graph, "Fill", "filled");
    weft_op_add_input(b, n);
    const int64_t shape[] = {3, 17};
    weft_op_set_attr_int_list(b, "shape", shape, 2);
    set.fetches[0] = finish(b, 0);
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, "Fill");
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* SliceGrad (grad the box) or PadGrad (like the box) at `begin`. */
static void box_case(const char* op, const int64_t* grad_dims,
                     const int64_t* like_dims, int32_t rank,
                     const int64_t* begin, int int_type, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output g = feed(graph, &set, "grad",
                       int_type ? random_i32(rng, grad_dims, rank, -99, 99)
                                : random_f32(rng, grad_dims, rank, -1, 1));
  weft_output like = feed(graph, &set, "like",
                          random_f32(rng, like_dims, rank, -1, 1));
  weft_op_builder* b = weft_op_begin(graph, op, "box");
  weft_op_add_input(b, g);
  weft_op_add_input(b, like);
  weft_op_set_attr_int_list(b, "begin", begin, rank);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  compare(graph, &set, 0, 0, op); /* moves bytes: bit for bit */
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, slice_grad_and_pad_grad) {
  REQUIRE_OPENCL();
  wt_rng rng = {24};
  const int64_t small[3] = {2, 3, 4}, big[3] = {5, 3, 9};
  const int64_t begin[3] = {1, 0, 4}, origin[3] = {0, 0, 0};
  for (int int_type = 0; int_type < 2; ++int_type) {
    box_case("SliceGrad", small, big, 3, begin, int_type, &rng);
    box_case("PadGrad", big, small, 3, begin, int_type, &rng);
    box_case("SliceGrad", small, small, 3, origin, int_type, &rng);
  }
  const int64_t empty[2] = {0, 3}, outer[2] = {4, 3}, at[2] = {2, 0};
  box_case("SliceGrad", empty, outer, 2, at, 0, &rng); /* all zeros */
  box_case("PadGrad", outer, empty, 2, at, 0, &rng);
}

static weft_output gather_grad(weft_graph* graph, weft_output grad,
                               weft_output indices, weft_output params,
                               int64_t axis) {
  weft_op_builder* b = weft_op_begin(graph, "GatherGrad", "dparams");
  weft_op_add_input(b, grad);
  weft_op_add_input(b, indices);
  weft_op_add_input(b, params);
  weft_op_set_attr_int(b, "axis", axis);
  return finish(b, 0);
}

static void gather_grad_case(weft_dtype index_type, int64_t axis,
                             wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  /* params [6, 5, 3]; 7 indices (with repeats) along `axis`. */
  int64_t params_dims[3] = {6, 5, 3}, grad_dims[3] = {6, 5, 3};
  grad_dims[axis] = 7;
  const int64_t limit = params_dims[axis];
  int64_t i64[7];
  int32_t i32[7];
  for (int j = 0; j < 7; ++j) {
    i64[j] = (int64_t)(wt_rng_next(rng) % (uint64_t)limit);
    i32[j] = (int32_t)i64[j];
  }
  i64[6] = i64[0]; /* a repeat adds twice */
  i32[6] = i32[0];
  weft_output g = feed(graph, &set, "grad", random_f32(rng, grad_dims, 3, -1, 1));
  weft_output idx = feed(graph, &set, "indices",
                         wt_tensor(index_type, WT_SHAPE(7),
                                   index_type == WEFT_INT64 ? (void*)i64
                                                            : (void*)i32));
  weft_output params = feed(graph, &set, "params",
                            random_f32(rng, params_dims, 3, -1, 1));
  set.fetches[0] = gather_grad(graph, g, idx, params, axis);
  set.num_fetches = 1;
  /* Sums in the indices' order on both: the same roundings. */
  compare(graph, &set, 0, 0, "GatherGrad");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, gather_grad) {
  REQUIRE_OPENCL();
  wt_rng rng = {25};
  for (int64_t axis = 0; axis < 3; ++axis) {
    gather_grad_case(WEFT_INT32, axis, &rng);
    gather_grad_case(WEFT_INT64, axis, &rng);
  }
}

Test(opencl, gather_grad_index_out_of_range_is_an_error) {
  REQUIRE_OPENCL();
  wt_rng rng = {26};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t bad[3] = {0, 4, 1};
  weft_output g = feed(graph, &set, "grad", random_f32(&rng, WT_SHAPE(3, 2), -1, 1));
  weft_output idx = feed(graph, &set, "indices", wt_tensor(WEFT_INT32, WT_SHAPE(3), bad));
  weft_output params = feed(graph, &set, "params", random_f32(&rng, WT_SHAPE(4, 2), -1, 1));
  set.fetches[0] = gather_grad(graph, g, idx, params, 0);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "dparams", "indices[1] = 4", "[0, 4)");
  release(&set);
  weft_graph_destroy(graph);
}

/* ---- Comparisons, Transpose, Concat, Split, Gather ----------------------- */

static const char* const kComparisons[] = {"Less",         "LessEqual",
                                           "Greater",      "GreaterEqual",
                                           "Equal",        "NotEqual"};

Test(opencl, comparisons_broadcasting) {
  REQUIRE_OPENCL();
  wt_rng rng = {31};
  for (size_t o = 0; o < sizeof kComparisons / sizeof *kComparisons; ++o) {
    for (size_t k = 0; k < sizeof kBroadcastShapes / sizeof *kBroadcastShapes;
         ++k) {
      for (int integer = 0; integer < 2; ++integer) {
        const shape_pair* sh = &kBroadcastShapes[k];
        weft_graph* graph = wt_graph_new();
        run_set set = {0};
        /* Small ranges so that equal values occur; floats are halves. */
        weft_tensor* xv = random_i32(&rng, sh->x, sh->x_rank, -3, 3);
        weft_tensor* yv = random_i32(&rng, sh->y, sh->y_rank, -3, 3);
        if (!integer) {
          weft_tensor* ints[2] = {xv, yv};
          for (int t = 0; t < 2; ++t) {
            const int64_t n = weft_tensor_element_count(ints[t]);
            const int32_t rank = weft_tensor_rank(ints[t]);
            int64_t dims[4];
            for (int32_t d = 0; d < rank; ++d) dims[d] = weft_tensor_dim(ints[t], d);
            float* f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
            const int32_t* iv = weft_tensor_data(ints[t]);
            for (int64_t e = 0; e < n; ++e) f[e] = (float)iv[e] / 2;
            weft_tensor_destroy(ints[t]);
            ints[t] = wt_tensor(WEFT_FLOAT32, dims, rank, f);
            free(f);
          }
          xv = ints[0];
          yv = ints[1];
        }
        weft_output x = feed(graph, &set, "x", xv);
        weft_output y = feed(graph, &set, "y", yv);
        set.fetches[0] = wt_apply2(graph, kComparisons[o], "z", x, y);
        set.num_fetches = 1;
        char what[96];
        snprintf(what, sizeof what, "%s %s shapes %zu", kComparisons[o],
                 integer ? "int32" : "float32", k);
        compare(graph, &set, 0, 0, what);
        release(&set);
        weft_graph_destroy(graph);
      }
    }
  }
}

Test(opencl, comparisons_with_nan) {
  REQUIRE_OPENCL();
  for (size_t o = 0; o < sizeof kComparisons / sizeof *kComparisons; ++o) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    const float xs[4] = {NAN, 1, NAN, 2}, ys[4] = {1, NAN, NAN, 2};
    weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_FLOAT32, WT_SHAPE(4), xs));
    weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_FLOAT32, WT_SHAPE(4), ys));
    set.fetches[0] = wt_apply2(graph, kComparisons[o], "z", x, y);
    set.num_fetches = 1;
    compare(graph, &set, 0, 0, kComparisons[o]);
    /* By hand: only NotEqual holds where NaN is involved. */
    weft_tensor* out = NULL;
    WT_OK(run_on(graph, OCL, &set, &out));
    const uint8_t* z = weft_tensor_data(out);
    const int ne = strcmp(kComparisons[o], "NotEqual") == 0;
    for (int k = 0; k < 3; ++k)
      cr_expect_eq(z[k], ne, "%s element %d", kComparisons[o], k);
    weft_tensor_destroy(out);
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* uint8 takes every comparison and bool takes Equal and NotEqual, as on
 * the CPU; a bool byte other than 0 or 1 reads as true. */
Test(opencl, comparisons_uint8_and_bool) {
  REQUIRE_OPENCL();
  wt_rng rng = {37};
  /* Ties, and bytes above 127 that a signed compare would get wrong. */
  static const uint8_t u8_values[] = {0, 1, 2, 127, 128, 200, 255};
  static const uint8_t bool_values[] = {0, 1, 2};
  for (size_t o = 0; o < sizeof kComparisons / sizeof *kComparisons; ++o) {
    const int equality = strcmp(kComparisons[o], "Equal") == 0 ||
                         strcmp(kComparisons[o], "NotEqual") == 0;
    for (size_t k = 0; k < sizeof kBroadcastShapes / sizeof *kBroadcastShapes;
         ++k) {
      for (int is_bool = 0; is_bool <= equality; ++is_bool) {
        const shape_pair* sh = &kBroadcastShapes[k];
        const weft_dtype dtype = is_bool ? WEFT_BOOL : WEFT_UINT8;
        const uint8_t* values = is_bool ? bool_values : u8_values;
        const int count = is_bool ? 3 : 7;
        weft_graph* graph = wt_graph_new();
        run_set set = {0};
        weft_output x = feed(graph, &set, "x", random_bytes(&rng, dtype, sh->x, sh->x_rank, values, count));
        weft_output y = feed(graph, &set, "y", random_bytes(&rng, dtype, sh->y, sh->y_rank, values, count));
        set.fetches[0] = wt_apply2(graph, kComparisons[o], "z", x, y);
        set.num_fetches = 1;
        char what[96];
        snprintf(what, sizeof what, "%s %s shapes %zu", kComparisons[o],
                 weft_dtype_name(dtype), k);
        compare(graph, &set, 0, 0, what);
        release(&set);
        weft_graph_destroy(graph);
      }
    }
  }
  /* By hand: 2 is true, so it equals 1. */
  for (int ne = 0; ne < 2; ++ne) {
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    const uint8_t xs[4] = {2, 1, 0, 2}, ys[4] = {1, 2, 0, 0};
    weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_BOOL, WT_SHAPE(4), xs));
    weft_output y = feed(graph, &set, "y", wt_tensor(WEFT_BOOL, WT_SHAPE(4), ys));
    set.fetches[0] = wt_apply2(graph, ne ? "NotEqual" : "Equal", "z", x, y);
    set.num_fetches = 1;
    weft_tensor* out = NULL;
    WT_OK(run_on(graph, OCL, &set, &out));
    const uint8_t* z = weft_tensor_data(out);
    const uint8_t equal[4] = {1, 1, 1, 0};
    for (int k = 0; k < 4; ++k)
      cr_expect_eq(z[k], equal[k] ^ ne, "%s element %d is %d",
                   ne ? "NotEqual" : "Equal", k, z[k]);
    weft_tensor_destroy(out);
    release(&set);
    weft_graph_destroy(graph);
  }
}

static weft_output transpose(weft_graph* graph, weft_output x,
                             const int64_t* perm, int32_t n) {
  weft_op_builder* b = weft_op_begin(graph, "Transpose", "t");
  weft_op_add_input(b, x);
  weft_op_set_attr_int_list(b, "perm", perm, n);
  return finish(b, 0);
}

Test(opencl, transpose) {
  REQUIRE_OPENCL();
  wt_rng rng = {32};
  /* Negative entries count from the end, as on the CPU. */
  static const int64_t perms[][4] = {{2, 0, 1}, {1, 0, 2},   {0, 1, 2},
                                     {2, 1, 0}, {-1, 0, -2}, {1, -1, 0}};
  for (size_t k = 0; k < sizeof perms / sizeof *perms; ++k) {
    for (int integer = 0; integer < 2; ++integer) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      weft_output x = feed(graph, &set, "x",
                           integer ? random_i32(&rng, WT_SHAPE(3, 4, 5), -99, 99)
                                   : random_f32(&rng, WT_SHAPE(3, 4, 5), -1, 1));
      set.fetches[0] = transpose(graph, x, perms[k], 3);
      set.num_fetches = 1;
      compare(graph, &set, 0, 0, "Transpose [3,4,5]");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
  /* Size-1 dims, rank 4, and by hand: [1,2,1,3] -> perm (3,1,0,2). */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const float v[6] = {0, 1, 2, 3, 4, 5};
  weft_output x = feed(graph, &set, "x", wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 2, 1, 3), v));
  set.fetches[0] = transpose(graph, x, (int64_t[]){3, 1, 0, 2}, 4);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_OK(run_on(graph, OCL, &set, &out));
  wt_expect_shape(out, WEFT_FLOAT32, WT_DIMS(3, 2, 1, 1), 4);
  const double want[6] = {0, 3, 1, 4, 2, 5};
  wt_expect_f32(out, want, 6, 0, 0);
  weft_tensor_destroy(out);
  release(&set);
  weft_graph_destroy(graph);
}

static void concat_split_case(const int64_t (*dims)[3], int32_t count,
                              int64_t axis, int64_t pieces, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output parts[4];
  for (int32_t k = 0; k < count; ++k) {
    char name[8];
    snprintf(name, sizeof name, "v%d", k);
    parts[k] = feed(graph, &set, name, random_f32(rng, dims[k], 3, -1, 1));
  }
  weft_op_builder* b = weft_op_begin(graph, "Concat", "joined");
  weft_op_add_input_list(b, parts, count);
  weft_op_set_attr_int(b, "axis", axis);
  weft_output joined = finish(b, 0);
  b = weft_op_begin(graph, "Split", "cut");
  weft_op_add_input(b, joined);
  weft_op_set_attr_int(b, "axis", axis);
  weft_op_set_attr_int(b, "num_split", pieces);
  weft_node* cut = NULL;
  WT_OK(weft_op_finish(b, &cut));
  set.fetches[0] = joined;
  for (int64_t k = 0; k < pieces; ++k)
    set.fetches[1 + k] = (weft_output){cut, (int32_t)k};
  set.num_fetches = 1 + (int32_t)pieces;
  char what[64];
  snprintf(what, sizeof what, "Concat/Split axis %lld", (long long)axis);
  compare(graph, &set, 0, 0, what);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, concat_and_split) {
  REQUIRE_OPENCL();
  wt_rng rng = {33};
  const int64_t middle[3][3] = {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}};
  concat_split_case(middle, 3, 1, 3, &rng);   /* [2,6,4] in 3 */
  concat_split_case(middle, 3, -2, 2, &rng);  /* negative axis */
  const int64_t first[2][3] = {{1, 3, 2}, {3, 3, 2}};
  concat_split_case(first, 2, 0, 2, &rng);
  const int64_t last[2][3] = {{2, 3, 1}, {2, 3, 5}};
  concat_split_case(last, 2, 2, 3, &rng);
  const int64_t empty[2][3] = {{2, 0, 3}, {2, 4, 3}};
  concat_split_case(empty, 2, 1, 2, &rng);
}

Test(opencl, select_broadcasting) {
  REQUIRE_OPENCL();
  wt_rng rng = {36};
  /* condition, t and e shapes: equal; all three broadcast; scalars. */
  static const int64_t shapes[3][3][3] = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{3, 1, 5}, {1, 4, 1}, {1, 1, 5}},
      {{1, 1, 1}, {2, 1, 3}, {1, 1, 1}}};
  for (int k = 0; k < 3; ++k) {
    for (int integer = 0; integer < 2; ++integer) {
      weft_graph* graph = wt_graph_new();
      run_set set = {0};
      const int64_t n = count_of(shapes[k][0], 3);
      uint8_t* bits = malloc((size_t)n);
      for (int64_t e = 0; e < n; ++e) bits[e] = (uint8_t)(wt_rng_next(&rng) % 2);
      weft_output c = feed(graph, &set, "c",
                           wt_tensor(WEFT_BOOL, shapes[k][0], 3, bits));
      free(bits);
      weft_output t = feed(graph, &set, "t",
                           integer ? random_i32(&rng, shapes[k][1], 3, -9, 9)
                                   : random_f32(&rng, shapes[k][1], 3, -1, 1));
      weft_output e = feed(graph, &set, "e",
                           integer ? random_i32(&rng, shapes[k][2], 3, -9, 9)
                                   : random_f32(&rng, shapes[k][2], 3, -1, 1));
      weft_op_builder* b = weft_op_begin(graph, "Select", "picked");
      weft_op_add_input(b, c);
      weft_op_add_input(b, t);
      weft_op_add_input(b, e);
      set.fetches[0] = finish(b, 0);
      set.num_fetches = 1;
      compare(graph, &set, 0, 0, "Select");
      release(&set);
      weft_graph_destroy(graph);
    }
  }
}

static void gather_case(const int64_t* idx_dims, int32_t idx_rank,
                        weft_dtype index_type, int64_t axis, wt_rng* rng) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t params_dims[3] = {5, 4, 3};
  const int64_t limit = params_dims[axis];
  const int64_t n = count_of(idx_dims, idx_rank);
  int64_t i64[16];
  int32_t i32[16];
  for (int64_t j = 0; j < n; ++j) {
    i64[j] = (int64_t)(wt_rng_next(rng) % (uint64_t)limit);
    i32[j] = (int32_t)i64[j];
  }
  weft_output params = feed(graph, &set, "params",
                            random_f32(rng, params_dims, 3, -1, 1));
  weft_output idx = feed(graph, &set, "indices",
                         wt_tensor(index_type, idx_dims, idx_rank,
                                   index_type == WEFT_INT64 ? (void*)i64
                                                            : (void*)i32));
  weft_op_builder* b = weft_op_begin(graph, "Gather", "gathered");
  weft_op_add_input(b, params);
  weft_op_add_input(b, idx);
  weft_op_set_attr_int(b, "axis", axis);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  compare(graph, &set, 0, 0, "Gather");
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, gather) {
  REQUIRE_OPENCL();
  wt_rng rng = {34};
  for (int64_t axis = 0; axis < 3; ++axis) {
    gather_case(WT_SHAPE(7), WEFT_INT32, axis, &rng);
    gather_case(WT_SHAPE(2, 3), WEFT_INT64, axis, &rng);
    gather_case(NULL, 0, WEFT_INT32, axis, &rng); /* a scalar index */
  }
}

Test(opencl, gather_index_out_of_range_is_an_error) {
  REQUIRE_OPENCL();
  wt_rng rng = {35};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t bad[3] = {0, 9, 1};
  weft_output params = feed(graph, &set, "params",
                            random_f32(&rng, WT_SHAPE(4, 2), -1, 1));
  weft_output idx = feed(graph, &set, "indices",
                         wt_tensor(WEFT_INT32, WT_SHAPE(3), bad));
  set.fetches[0] = wt_apply2(graph, "Gather", "gathered", params, idx);
  set.num_fetches = 1;
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, &set, &out), WEFT_INVALID_ARGUMENT,
                  "gathered", "indices[1] = 9", "[0, 4)");
  release(&set);
  weft_graph_destroy(graph);
}

/* Transpose, Concat, Split, Gather and Select move bytes: every dtype runs
 * on OpenCL and matches the CPU bit for bit. */
Test(opencl, data_movement_of_every_dtype) {
  REQUIRE_OPENCL();
  wt_rng rng = {39};
  static const weft_dtype dtypes[] = {
      WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,    WEFT_UINT8,
      WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8,   WEFT_INT16,
      WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};
  static const uint8_t bool_values[] = {0, 1};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d) {
    const weft_dtype dtype = dtypes[d];
    /* Any bytes (NaN payloads included) except in bool, which is 0 or 1. */
    const uint8_t* values = dtype == WEFT_BOOL ? bool_values : NULL;
    weft_graph* graph = wt_graph_new();
    run_set set = {0};
    weft_output x = feed(graph, &set, "x", random_bytes(&rng, dtype, WT_SHAPE(3, 4, 5), values, 2));
    weft_output w = feed(graph, &set, "w", random_bytes(&rng, dtype, WT_SHAPE(3, 2, 5), values, 2));
    weft_output e = feed(graph, &set, "e", random_bytes(&rng, dtype, WT_SHAPE(3, 4, 5), values, 2));
    weft_output t = transpose(graph, x, (int64_t[]){2, 0, 1}, 3);
    weft_op_builder* b = weft_op_begin(graph, "Concat", "joined");
    weft_output parts[2] = {w, x};
    weft_op_add_input_list(b, parts, 2);
    weft_op_set_attr_int(b, "axis", 1);
    weft_output joined = finish(b, 0);
    b = weft_op_begin(graph, "Split", "cut");
    weft_op_add_input(b, joined);
    weft_op_set_attr_int(b, "axis", 1);
    weft_op_set_attr_int(b, "num_split", 3);
    weft_output piece = finish(b, 1); /* x's first two columns */
    const int32_t picks[4] = {4, 0, 4, 2};
    weft_output idx = wt_const(graph, "picks", wt_tensor(WEFT_INT32, WT_SHAPE(4), picks));
    b = weft_op_begin(graph, "Gather", "gathered");
    weft_op_add_input(b, x);
    weft_op_add_input(b, idx);
    weft_op_set_attr_int(b, "axis", -1);
    weft_output gathered = finish(b, 0);
    weft_output c = wt_const(graph, "c", random_bytes(&rng, WEFT_BOOL, WT_SHAPE(4, 1), bool_values, 2));
    b = weft_op_begin(graph, "Select", "picked");
    weft_op_add_input(b, c);
    weft_op_add_input(b, x);
    weft_op_add_input(b, e);
    weft_output picked = finish(b, 0);
    const weft_output fetches[2][4] = {{t, joined, piece, gathered},
                                       {picked}};
    for (int f = 0; f < 2; ++f) {
      set.num_fetches = f == 0 ? 4 : 1;
      memcpy(set.fetches, fetches[f], sizeof set.fetches);
      char what[64];
      snprintf(what, sizeof what, "data movement of %s",
               weft_dtype_name(dtype));
      compare(graph, &set, 0, 0, what);
    }
    release(&set);
    weft_graph_destroy(graph);
  }
}

/* A placeholder of unknown rank fed with `value`: the graph cannot check
 * the attributes of what consumes it, so the kernel must. */
static weft_output feed_unknown_rank(weft_graph* graph, run_set* set,
                                     const char* name, weft_tensor* value) {
  weft_output out =
      wt_placeholder(graph, name, weft_tensor_dtype(value), NULL, -1);
  set->feeds[set->num_feeds] = out;
  set->values[set->num_feeds++] = value;
  return out;
}

/* Runs `set` on OpenCL and on the CPU: both must fail with
 * INVALID_ARGUMENT, OpenCL's message naming `node` and `detail`. */
static void expect_both_reject(weft_graph* graph, run_set* set,
                               const char* node, const char* detail) {
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(run_on(graph, OCL, set, &out), WEFT_INVALID_ARGUMENT, node,
                  detail);
  WT_EXPECT_CODE(run_on(graph, "CPU", set, &out), WEFT_INVALID_ARGUMENT);
  release(set);
  weft_graph_destroy(graph);
}

/* Split of a [5, 3] matrix fed with unknown rank along `axis` in `pieces`,
 * which its shape does not allow. */
static void split_rejected(wt_rng* rng, int64_t axis, int64_t pieces,
                           const char* detail) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(rng, WT_SHAPE(5, 3), -1, 1));
  weft_op_builder* b = weft_op_begin(graph, "Split", "cut");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "axis", axis);
  weft_op_set_attr_int(b, "num_split", pieces);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "cut", detail);
}

Test(opencl, array_attributes_that_do_not_fit_the_input_are_errors) {
  REQUIRE_OPENCL();
  wt_rng rng = {40};
  /* perm has 2 entries, x 3 axes. */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(&rng, WT_SHAPE(2, 3, 4), -1, 1));
  set.fetches[0] = transpose(graph, x, (int64_t[]){1, 0}, 2);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "t", "perm");

  /* Concat along axis 2 of matrices. */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  weft_output parts[2] = {
      feed_unknown_rank(graph, &set, "a", random_f32(&rng, WT_SHAPE(2, 3), -1, 1)),
      feed_unknown_rank(graph, &set, "b", random_f32(&rng, WT_SHAPE(2, 3), -1, 1))};
  weft_op_builder* b = weft_op_begin(graph, "Concat", "joined");
  weft_op_add_input_list(b, parts, 2);
  weft_op_set_attr_int(b, "axis", 2);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "joined", "axis");

  split_rejected(&rng, -3, 2, "axis");  /* axis -3 of a matrix */
  split_rejected(&rng, 0, 2, "split");  /* 5 rows in 2 */

  /* Gather along axis 2 of a matrix. */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  const int32_t zero[1] = {0};
  weft_output params = feed_unknown_rank(graph, &set, "params", random_f32(&rng, WT_SHAPE(4, 2), -1, 1));
  weft_output idx = feed(graph, &set, "indices", wt_tensor(WEFT_INT32, WT_SHAPE(1), zero));
  b = weft_op_begin(graph, "Gather", "gathered");
  weft_op_add_input(b, params);
  weft_op_add_input(b, idx);
  weft_op_set_attr_int(b, "axis", 2);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "gathered", "axis");
}

Test(opencl, gather_negative_index_is_an_error) {
  REQUIRE_OPENCL();
  wt_rng rng = {41};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t bad[4] = {1, 0, 2, -1};
  weft_output params = feed(graph, &set, "params", random_f32(&rng, WT_SHAPE(2, 3), -1, 1));
  weft_output idx = feed(graph, &set, "indices", wt_tensor(WEFT_INT64, WT_SHAPE(2, 2), bad));
  weft_op_builder* b = weft_op_begin(graph, "Gather", "gathered");
  weft_op_add_input(b, params);
  weft_op_add_input(b, idx);
  weft_op_set_attr_int(b, "axis", 1);
  set.fetches[0] = finish(b, 0);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "gathered", "indices[3] = -1");
}

/* ---- Optimizer updates: three steps of one update op on each device ----- */

#define UPDATE_STEPS 3

/* Runs `op` (variables first, then data inputs) UPDATE_STEPS times on
 * `devices`, fetching every output each step into outs[step][output]. */
static void update_steps(const char* op, int nesterov, const char* devices,
                         weft_tensor* outs[UPDATE_STEPS][3],
                         int32_t* num_outputs) {
  static const char* const kNames[] = {
      "var", "s1", "s2", "beta1_power", "beta2_power", "lr", "beta1",
      "beta2", "epsilon", "grad"};
  const int adam = strcmp(op, "ApplyAdam") == 0;
  const int momentum = strcmp(op, "ApplyMomentum") == 0;
  const int32_t refs = adam ? 3 : momentum ? 2 : 1;
  wt_rng rng = {27};
  weft_graph* graph = wt_graph_new();
  weft_output inputs[10];
  int32_t n = 0;
  weft_node* inits[3];
  for (int32_t r = 0; r < refs; ++r) {
    char name[32];
    snprintf(name, sizeof name, "%s_value", kNames[r]);
    /* Adam's second moment is non-negative. */
    weft_tensor* v = random_f32(&rng, WT_SHAPE(9, 7), r == 2 ? 0.0f : -1.0f, 1.0f);
    WT_OK(weft_graph_variable(graph, kNames[r], wt_const(graph, name, v),
                              &inputs[n++], &inits[r]));
  }
  run_set set = {0};
  weft_output grad = feed(graph, &set, "grad",
                          random_f32(&rng, WT_SHAPE(9, 7), -1, 1));
  if (adam) {
    const float scalars[6] = {0.9f, 0.999f, 0.01f, 0.9f, 0.999f, 1e-7f};
    for (int k = 0; k < 6; ++k)
      inputs[n++] = wt_const(graph, kNames[3 + k], wt_scalar_f32(scalars[k]));
    inputs[n++] = grad;
  } else if (momentum) {
    inputs[n++] = wt_const(graph, "lr", wt_scalar_f32(0.05f));
    inputs[n++] = grad;
    inputs[n++] = wt_const(graph, "momentum", wt_scalar_f32(0.9f));
  } else {
    inputs[n++] = wt_const(graph, "alpha", wt_scalar_f32(0.1f));
    inputs[n++] = grad;
  }
  weft_op_builder* b = weft_op_begin(graph, op, "update");
  weft_op_add_input_list(b, inputs, n);
  if (momentum) weft_op_set_attr_bool(b, "use_nesterov", nesterov);
  weft_node* update = NULL;
  WT_OK(weft_op_finish(b, &update));
  for (int32_t r = 0; r < refs; ++r) set.fetches[r] = (weft_output){update, r};
  set.num_fetches = refs;
  weft_session* session = session_on(graph, devices);
  wt_run_targets(session, inits, refs);
  for (int step = 0; step < UPDATE_STEPS; ++step) {
    WT_OK(weft_session_run(session, set.feeds, set.values, set.num_feeds,
                           set.fetches, set.num_fetches, NULL, 0,
                           outs[step]));
  }
  *num_outputs = refs;
  weft_session_destroy(session);
  release(&set);
  weft_graph_destroy(graph);
}

static void update_case(const char* op, int nesterov) {
  weft_tensor* ocl[UPDATE_STEPS][3] = {{0}};
  weft_tensor* cpu[UPDATE_STEPS][3] = {{0}};
  int32_t n = 0;
  update_steps(op, nesterov, OCL, ocl, &n);
  update_steps(op, nesterov, "CPU", cpu, &n);
  for (int step = 0; step < UPDATE_STEPS; ++step) {
    for (int32_t r = 0; r < n; ++r) {
      char what[96];
      snprintf(what, sizeof what, "%s%s step %d output %d", op,
               nesterov ? " (Nesterov)" : "", step + 1, r);
      expect_match(ocl[step][r], cpu[step][r], 1e-6, 1e-5, what);
      weft_tensor_destroy(ocl[step][r]);
      weft_tensor_destroy(cpu[step][r]);
    }
  }
}

Test(opencl, apply_gradient_descent) {
  REQUIRE_OPENCL();
  update_case("ApplyGradientDescent", 0);
}

Test(opencl, apply_momentum) {
  REQUIRE_OPENCL();
  update_case("ApplyMomentum", 0);
  update_case("ApplyMomentum", 1);
}

Test(opencl, apply_adam) {
  REQUIRE_OPENCL();
  update_case("ApplyAdam", 0);
}

/* ---- End to end: weft_minimize on a tiny MLP, 20 steps ------------------ */

#define TRAIN_STEPS 20

/* The losses of TRAIN_STEPS steps of `kind` on `devices`. */
static void train_losses(int32_t kind, int nesterov, const char* devices,
                         double* losses) {
  wt_rng rng = {28};
  weft_graph* graph = wt_graph_new();
  weft_node* inits[4];
  weft_output w1, b1, w2, b2;
  WT_OK(weft_graph_variable(graph, "w1", wt_const(graph, "w1_value", random_f32(&rng, WT_SHAPE(8, 16), -0.5f, 0.5f)), &w1, &inits[0]));
  WT_OK(weft_graph_variable(graph, "b1", wt_const(graph, "b1_value", random_f32(&rng, WT_SHAPE(16), -0.1f, 0.1f)), &b1, &inits[1]));
  WT_OK(weft_graph_variable(graph, "w2", wt_const(graph, "w2_value", random_f32(&rng, WT_SHAPE(16, 4), -0.5f, 0.5f)), &w2, &inits[2]));
  WT_OK(weft_graph_variable(graph, "b2", wt_const(graph, "b2_value", random_f32(&rng, WT_SHAPE(4), -0.1f, 0.1f)), &b2, &inits[3]));
  run_set set = {0};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(32, 8), -1, 1));
  weft_output labels = feed(graph, &set, "labels",
                            random_i32(&rng, WT_SHAPE(32), 0, 3));
  weft_output h = wt_apply1(
      graph, "Relu", "h",
      wt_apply2(graph, "BiasAdd", "hb", wt_apply2(graph, "MatMul", "hm", x, w1), b1));
  /* A tanh layer as well, so TanhGrad runs. */
  weft_output t = wt_apply1(graph, "Tanh", "t", h);
  weft_output logits = wt_apply2(graph, "BiasAdd", "logits",
                                 wt_apply2(graph, "MatMul", "lm", t, w2), b2);
  weft_output xent = wt_apply2(graph, "SparseSoftmaxCrossEntropyWithLogits",
                               "xent", logits, labels);
  weft_op_builder* b = weft_op_begin(graph, "Mean", "loss");
  weft_op_add_input(b, xent);
  const int64_t axis0[] = {0};
  weft_op_set_attr_int_list(b, "axes", axis0, 1);
  weft_output loss = finish(b, 0);
  weft_optimizer_options options;
  weft_optimizer_options_init(&options, kind);
  options.learning_rate = kind == WEFT_OPTIMIZER_ADAM ? 0.01 : 0.1;
  options.use_nesterov = nesterov;
  weft_node* train = NULL;
  WT_OK(weft_minimize(graph, loss, &options, "train", &train));
  weft_node* init_all = NULL;
  WT_OK(weft_graph_initialize_all(graph, "init_all", &init_all));
  weft_session* session = session_on(graph, devices);
  wt_run_targets(session, &init_all, 1);
  for (int step = 0; step < TRAIN_STEPS; ++step) {
    weft_tensor* value = NULL;
    WT_OK(weft_session_run(session, set.feeds, set.values, set.num_feeds,
                           &loss, 1, &train, 1, &value));
    losses[step] = element(value, 0);
    weft_tensor_destroy(value);
  }
  weft_session_destroy(session);
  release(&set);
  weft_graph_destroy(graph);
}

Test(opencl, training_loop_matches_cpu) {
  REQUIRE_OPENCL();
  static const struct {
    int32_t kind;
    int nesterov;
    const char* name;
  } kOptimizers[] = {{WEFT_OPTIMIZER_GRADIENT_DESCENT, 0, "sgd"},
                     {WEFT_OPTIMIZER_MOMENTUM, 0, "momentum"},
                     {WEFT_OPTIMIZER_MOMENTUM, 1, "nesterov"},
                     {WEFT_OPTIMIZER_ADAM, 0, "adam"}};
  for (size_t o = 0; o < sizeof kOptimizers / sizeof *kOptimizers; ++o) {
    double ocl[TRAIN_STEPS], cpu[TRAIN_STEPS];
    train_losses(kOptimizers[o].kind, kOptimizers[o].nesterov, OCL, ocl);
    train_losses(kOptimizers[o].kind, kOptimizers[o].nesterov, "CPU", cpu);
    for (int s = 0; s < TRAIN_STEPS; ++s) {
      cr_assert(fabs(ocl[s] - cpu[s]) <= 1e-4 * fabs(cpu[s]),
                "%s step %d: loss %.9g on OpenCL, %.9g on CPU",
                kOptimizers[o].name, s + 1, ocl[s], cpu[s]);
    }
    /* And it learns. */
    cr_expect_lt(ocl[TRAIN_STEPS - 1], ocl[0], "%s: loss %g -> %g",
                 kOptimizers[o].name, ocl[0], ocl[TRAIN_STEPS - 1]);
  }
}

/* ---- Slice, Tile, Pad, Pack, Unpack, OneHot, Shape, Size, Rank ----------- *
 * The conformance kit (`weft conformance`) runs these against the CPU for
 * every dtype on ordinary shapes; here: the errors, the edges (scalars,
 * empty tensors, negative axes, indices outside OneHot's depth) and ranks
 * past the eight dims a kernel walks. */

static weft_output pack(weft_graph* graph, const char* name,
                        const weft_output* values, int32_t n, int64_t axis) {
  weft_op_builder* b = weft_op_begin(graph, "Pack", name);
  weft_op_add_input_list(b, values, n);
  weft_op_set_attr_int(b, "axis", axis);
  return finish(b, 0);
}

/* Unpack's node; `num` < 0 leaves the attribute to the shape function. */
static weft_node* unpack(weft_graph* graph, const char* name, weft_output x,
                         int64_t axis, int64_t num) {
  weft_op_builder* b = weft_op_begin(graph, "Unpack", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "axis", axis);
  if (num >= 0) weft_op_set_attr_int(b, "num", num);
  return finish(b, 0).node;
}

static weft_output one_hot(weft_graph* graph, const char* name,
                           weft_output indices, int64_t depth, int64_t axis,
                           double on, double off, weft_dtype dtype) {
  weft_op_builder* b = weft_op_begin(graph, "OneHot", name);
  weft_op_add_input(b, indices);
  weft_op_set_attr_int(b, "depth", depth);
  weft_op_set_attr_int(b, "axis", axis);
  weft_op_set_attr_float(b, "on_value", on);
  weft_op_set_attr_float(b, "off_value", off);
  weft_op_set_attr_dtype(b, "dtype", dtype);
  return finish(b, 0);
}

/* `op` (Slice, Tile or Pad) over x with int-list attributes: `first`
 * (begin, multiples or paddings) and, for Slice, `size`. */
static weft_output boxed(weft_graph* graph, const char* op, const char* name,
                         weft_output x, const char* first,
                         const int64_t* values, int32_t n,
                         const int64_t* size) {
  weft_op_builder* b = weft_op_begin(graph, op, name);
  weft_op_add_input(b, x);
  weft_op_set_attr_int_list(b, first, values, n);
  if (size != NULL) weft_op_set_attr_int_list(b, "size", size, n);
  return finish(b, 0);
}

Test(opencl, pack_and_unpack_of_scalars_empty_tensors_and_negative_axes) {
  REQUIRE_OPENCL();
  wt_rng rng = {60};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output scalars[3];
  for (int i = 0; i < 3; ++i) {
    char name[8];
    snprintf(name, sizeof name, "s%d", i);
    scalars[i] = feed(graph, &set, name, random_f32(&rng, NULL, 0, -1, 1));
  }
  /* Scalars stack into a vector whichever way axis counts, and back. */
  weft_output back = pack(graph, "back", scalars, 3, -1);
  weft_node* items = unpack(graph, "items", back, -1, -1);
  set.num_fetches = 4;
  set.fetches[0] = pack(graph, "front", scalars, 3, 0);
  set.fetches[1] = pack(graph, "one", scalars, 1, -1);
  set.fetches[2] = (weft_output){items, 0};
  set.fetches[3] = (weft_output){items, 2};
  compare(graph, &set, 0, 0, "Pack of scalars, Unpack into scalars");
  weft_tensor* got[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, &set, got));
  cr_expect_eq(weft_tensor_rank(got[3]), 0);
  cr_expect_eq(((const float*)weft_tensor_data(got[3]))[0],
               ((const float*)weft_tensor_data(set.values[2]))[0],
               "Unpack(Pack(s))[2] is s2");
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  release(&set);
  weft_graph_destroy(graph);

  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  weft_output empties[2] = {
      feed(graph, &set, "e0", random_f32(&rng, WT_SHAPE(0, 3), -1, 1)),
      feed(graph, &set, "e1", random_f32(&rng, WT_SHAPE(0, 3), -1, 1))};
  /* [0, 3] twice at axis -2 (of the output's three): [0, 2, 3], and back
   * into two [0, 3]. */
  weft_output empty = pack(graph, "empty", empties, 2, -2);
  weft_node* halves = unpack(graph, "halves", empty, -2, -1);
  set.num_fetches = 3;
  set.fetches[0] = empty;
  set.fetches[1] = (weft_output){halves, 0};
  set.fetches[2] = (weft_output){halves, 1};
  compare(graph, &set, 0, 0, "Pack and Unpack of empty tensors");
  WT_OK(run_on(graph, OCL, &set, got));
  cr_expect(weft_tensor_rank(got[0]) == 3 && weft_tensor_dim(got[0], 1) == 2);
  cr_expect(weft_tensor_rank(got[2]) == 2 && weft_tensor_dim(got[2], 0) == 0);
  for (int i = 0; i < 3; ++i) weft_tensor_destroy(got[i]);
  /* A [2, 3, 4] cut along -1 (four [2, 3]) and -3 (two [3, 4]), and the
   * four stacked again along -1. */
  weft_output x = feed(graph, &set, "x", random_f32(&rng, WT_SHAPE(2, 3, 4), -1, 1));
  weft_node* last = unpack(graph, "last", x, -1, -1);
  weft_node* first = unpack(graph, "first", x, -3, -1);
  const weft_output pieces[4] = {{last, 0}, {last, 1}, {last, 2}, {last, 3}};
  set.num_fetches = 4;
  set.fetches[0] = pieces[0];
  set.fetches[1] = pieces[3];
  set.fetches[2] = (weft_output){first, 1};
  set.fetches[3] = pack(graph, "again", pieces, 4, -1);
  compare(graph, &set, 0, 0, "Unpack along negative axes");
  WT_OK(run_on(graph, OCL, &set, got));
  expect_match(got[3], set.values[2], 0, 0, "Pack(Unpack(x, -1), -1) is x");
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  release(&set);
  weft_graph_destroy(graph);
}

/* An index outside [0, depth) — negative or past it — leaves its row all
 * off_value on both devices, as TensorFlow does; it is not an error. */
Test(opencl, one_hot_index_outside_depth_gives_a_row_of_off_value) {
  REQUIRE_OPENCL();
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int32_t idx32[6] = {-1, 0, 4, 5, 2, 99};
  const int64_t idx64[4] = {3, -7, 1, 4};
  const int64_t scalar = 3;
  weft_output i32 = feed(graph, &set, "i32", wt_tensor(WEFT_INT32, WT_SHAPE(2, 3), idx32));
  weft_output i64 = feed(graph, &set, "i64", wt_tensor(WEFT_INT64, WT_SHAPE(4), idx64));
  weft_output i0 = feed(graph, &set, "i0", wt_tensor(WEFT_INT64, NULL, 0, &scalar));
  set.num_fetches = 4;
  set.fetches[0] = one_hot(graph, "rows", i32, 5, -1, 7, -2, WEFT_INT32);
  set.fetches[1] = one_hot(graph, "first", i32, 5, 0, 2.5, -0.5, WEFT_FLOAT16);
  set.fetches[2] = one_hot(graph, "middle", i64, 4, -2, 1, 0, WEFT_BOOL);
  set.fetches[3] = one_hot(graph, "scalar", i0, 4, -1, 1, 0, WEFT_UINT64);
  compare(graph, &set, 0, 0, "OneHot with indices outside depth");
  weft_tensor* got[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, &set, got));
  const int32_t* rows = weft_tensor_data(got[0]);
  for (int r = 0; r < 6; ++r) {
    for (int d = 0; d < 5; ++d) {
      cr_expect_eq(rows[r * 5 + d], idx32[r] == d ? 7 : -2,
                   "row %d (index %d), column %d: %d", r, idx32[r], d,
                   rows[r * 5 + d]);
    }
  }
  const uint64_t* hot = weft_tensor_data(got[3]);
  cr_expect(weft_tensor_rank(got[3]) == 1 && hot[3] == 1 && hot[0] == 0);
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  /* depth 0: nothing to write. */
  set.num_fetches = 1;
  set.fetches[0] = one_hot(graph, "none", i32, 0, -1, 1, 0, WEFT_FLOAT32);
  compare(graph, &set, 0, 0, "OneHot of depth 0");
  release(&set);
  weft_graph_destroy(graph);
}

/* `op` (Slice, Tile or Pad) over a [3, 5] matrix fed with unknown rank,
 * with `attr` = values (and Slice's size [1, 2]) that do not fit it. */
static void box_rejected(wt_rng* rng, const char* op, const char* attr,
                         const int64_t* values, int32_t n,
                         const char* detail) {
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(rng, WT_SHAPE(3, 5), -1, 1));
  const int64_t size[4] = {1, 2, 1, 1};
  set.fetches[0] = boxed(graph, op, "box", x, attr, values, n,
                         strcmp(op, "Slice") == 0 ? size : NULL);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "box", detail);
}

/* Attributes the graph could not check (the input's rank was unknown):
 * both kernels refuse them, OpenCL's message naming the node and what is
 * wrong, in the CPU's words. */
Test(opencl, layout_attributes_that_do_not_fit_the_input_are_errors) {
  REQUIRE_OPENCL();
  wt_rng rng = {61};
  box_rejected(&rng, "Slice", "begin", WT_SHAPE(1),
               "attribute begin has 1 entries; the input needs 2");
  box_rejected(&rng, "Slice", "begin", WT_SHAPE(1, 4),
               "begin 4, size 2 is out of bounds for dimension 1 of [3,5]");
  box_rejected(&rng, "Tile", "multiples", WT_SHAPE(2, 2, 2),
               "attribute multiples has 3 entries");
  box_rejected(&rng, "Pad", "paddings", WT_SHAPE(1, 1),
               "attribute paddings has 2 entries; the input needs 4");

  /* Pack: an axis past the output's rank, and two shapes. */
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  weft_output parts[2] = {
      feed_unknown_rank(graph, &set, "a", random_f32(&rng, WT_SHAPE(2, 3), -1, 1)),
      feed_unknown_rank(graph, &set, "b", random_f32(&rng, WT_SHAPE(2, 3), -1, 1))};
  set.fetches[0] = pack(graph, "stacked", parts, 2, 3);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "stacked", "attribute axis = 3 is out of range [-3, 3)");
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  parts[0] = feed_unknown_rank(graph, &set, "a", random_f32(&rng, WT_SHAPE(2, 3), -1, 1));
  parts[1] = feed_unknown_rank(graph, &set, "b", random_f32(&rng, WT_SHAPE(3, 2), -1, 1));
  set.fetches[0] = pack(graph, "stacked", parts, 2, -1);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "stacked", "input 1 has shape [3,2] but input 0 has [2,3]; Pack needs one shape");

  /* Unpack: of a scalar (no axis to cut), along -3 of a matrix, and into
   * a count of outputs the dim is not. */
  static const struct {
    int64_t dims[2];
    int32_t rank;
    int64_t axis, num;
    const char* detail;
  } kUnpacks[] = {
      {{0}, 0, 0, 1, "attribute axis = 0 is out of range [0, 0)"},
      {{3, 4}, 2, -3, 3, "attribute axis = -3 is out of range [-2, 2)"},
      {{3, 4}, 2, 0, 2, "the node has 2 outputs but dimension 0 of [3,4] is 3"},
  };
  for (size_t k = 0; k < sizeof kUnpacks / sizeof *kUnpacks; ++k) {
    graph = wt_graph_new();
    memset(&set, 0, sizeof set);
    weft_output x = feed_unknown_rank(graph, &set, "x", random_f32(&rng, kUnpacks[k].dims, kUnpacks[k].rank, -1, 1));
    set.fetches[0] = (weft_output){unpack(graph, "cut", x, kUnpacks[k].axis, kUnpacks[k].num), 0};
    set.num_fetches = 1;
    expect_both_reject(graph, &set, "cut", kUnpacks[k].detail);
  }

  /* OneHot along axis 3 of [2] indices (the output has two axes). */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  const int32_t idx[2] = {0, 1};
  weft_output i = feed_unknown_rank(graph, &set, "i", wt_tensor(WEFT_INT32, WT_SHAPE(2), idx));
  set.fetches[0] = one_hot(graph, "hot", i, 3, 3, 1, 0, WEFT_FLOAT32);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "hot", "attribute axis = 3 is out of range [-2, 2)");

  /* Shape as int32 of a dim past INT32_MAX (an empty tensor, so the dim
   * costs no memory): refused rather than wrapped; int64 holds it. */
  graph = wt_graph_new();
  memset(&set, 0, sizeof set);
  weft_output big = feed_unknown_rank(graph, &set, "big", wt_tensor(WEFT_FLOAT32, WT_SHAPE(3000000000LL, 0), NULL));
  weft_op_builder* b = weft_op_begin(graph, "Shape", "dims");
  weft_op_add_input(b, big);
  weft_op_set_attr_dtype(b, "out_type", WEFT_INT64);
  set.fetches[0] = finish(b, 0);
  set.fetches[1] = wt_apply1(graph, "Size", "count", big);
  set.fetches[2] = wt_apply1(graph, "Rank", "rank", big);
  set.num_fetches = 3;
  compare(graph, &set, 0, 0, "Shape, Size and Rank of [3000000000, 0]");
  set.fetches[0] = wt_apply1(graph, "Shape", "dims32", big);
  set.num_fetches = 1;
  expect_both_reject(graph, &set, "dims32", "3000000000 does not fit out_type int32");
}

/* Rank 10, past the eight dims a kernel walks: Slice, Tile and Pad merge
 * the dims that run on, and Shape writes its ten values in two parts. */
Test(opencl, layout_of_rank_ten) {
  REQUIRE_OPENCL();
  wt_rng rng = {62};
  weft_graph* graph = wt_graph_new();
  run_set set = {0};
  const int64_t dims[10] = {2, 1, 3, 1, 2, 2, 1, 2, 1, 3};
  weft_output x = feed(graph, &set, "x", random_f32(&rng, dims, 10, -1, 1));
  const int64_t begin[10] = {1, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  const int64_t size[10] = {1, 1, -1, 1, 2, 2, 1, 2, 1, 2};
  const int64_t multiples[10] = {1, 3, 1, 1, 2, 1, 1, 1, 2, 1};
  const int64_t paddings[20] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0,
                                0, 0, 0, 0, 0, 0, 2, 0, 0, 1};
  set.num_fetches = 4;
  set.fetches[0] = boxed(graph, "Slice", "sliced", x, "begin", begin, 10, size);
  set.fetches[1] = boxed(graph, "Tile", "tiled", x, "multiples", multiples, 10, NULL);
  set.fetches[2] = boxed(graph, "Pad", "padded", x, "paddings", paddings, 20, NULL);
  set.fetches[3] = wt_apply1(graph, "Shape", "dims", x);
  compare(graph, &set, 0, 0, "rank 10");
  weft_tensor* got[MAX_FETCHES] = {0};
  WT_OK(run_on(graph, OCL, &set, got));
  const int32_t* shape = weft_tensor_data(got[3]);
  for (int i = 0; i < 10; ++i) {
    cr_expect_eq(shape[i], dims[i], "Shape[%d] = %d", i, shape[i]);
  }
  for (int i = 0; i < 4; ++i) weft_tensor_destroy(got[i]);
  release(&set);
  weft_graph_destroy(graph);
}
