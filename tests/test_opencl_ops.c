/* The OpenCL plugin's kernels against the CPU plugin's (the method, and
 * the helpers, are in opencl_support.h): loading the plugin without
 * starting the platform, the device's properties and `weft devices`,
 * element-wise binary and unary ops, Cast, MatMul, reductions, ArgMax and
 * ArgMin, Softmax, BiasAdd and the losses, and a small network with every
 * op on the device.  Random ops and linear algebra are in
 * test_opencl_random_linalg.c, gradients and training in
 * test_opencl_training.c, data movement and layout in
 * test_opencl_layout.c. */
#define _POSIX_C_SOURCE 200809L /* popen */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "opencl_support.h"

TestSuite(opencl, .init = discover, .timeout = 240);

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
