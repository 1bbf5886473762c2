/* Definitions of the helpers opencl_support.h declares for the OpenCL op
 * tests: finding the device, running a graph on it and on the CPU, comparing
 * the results, and random inputs. */
#include "opencl_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

void discover(void) { WT_OK(weft_plugins_discover()); }

const char* opencl_missing(void) {
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

weft_session* session_on(weft_graph* graph, const char* devices) {
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = devices;
  options.placement = WEFT_PLACEMENT_STRICT;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));
  return session;
}

weft_status* run_on(weft_graph* graph, const char* devices,
                    const run_set* set, weft_tensor** outs) {
  weft_session* session = session_on(graph, devices);
  weft_status* status = weft_session_run(
      session, set->feeds, set->values, set->num_feeds, set->fetches,
      set->num_fetches, NULL, 0, outs);
  weft_session_destroy(session);
  return status;
}

double element(const weft_tensor* t, int64_t k) {
  const void* p = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT32: return ((const float*)p)[k];
    case WEFT_FLOAT64: return ((const double*)p)[k];
    case WEFT_INT32: return ((const int32_t*)p)[k];
    case WEFT_INT64: return (double)((const int64_t*)p)[k];
    default: return NAN;
  }
}

void expect_match(const weft_tensor* ocl, const weft_tensor* cpu,
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

void compare(weft_graph* graph, run_set* set, double abs_tol,
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

void release(run_set* set) {
  for (int32_t i = 0; i < set->num_feeds; ++i) {
    weft_tensor_destroy(set->values[i]);
  }
}

weft_output feed(weft_graph* graph, run_set* set, const char* name,
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

int64_t count_of(const int64_t* dims, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

weft_tensor* random_f32(wt_rng* rng, const int64_t* dims,
                        int32_t rank, float lo, float hi) {
  const int64_t n = count_of(dims, rank);
  float* data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  wt_rng_fill(rng, data, n, lo, hi);
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, dims, rank, data);
  free(data);
  return t;
}

weft_tensor* random_i32(wt_rng* rng, const int64_t* dims,
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

weft_tensor* random_bytes(wt_rng* rng, weft_dtype dtype,
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

weft_output cast(weft_graph* graph, const char* name, weft_output x,
                 weft_dtype to) {
  weft_op_builder* b = weft_op_begin(graph, "Cast", name);
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", to);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

weft_output finish(weft_op_builder* b, int32_t index) {
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, index};
}

const shape_pair kBroadcastShapes[] = {
    {{2, 3}, 2, {2, 3}, 2},          /* same shape */
    {{3, 1, 5}, 3, {4, 1}, 2},       /* both broadcast */
    {{0}, 0, {7}, 1},                /* scalar x */
    {{6, 5}, 2, {0}, 0},             /* scalar y */
    {{2, 3, 4, 5}, 4, {3, 1, 5}, 3}, /* a middle dim */
    {{37, 53}, 2, {53}, 1},          /* a row */
    {{0, 3}, 2, {3}, 1},             /* empty */
};

const axes_case kAxes[] = {
    {{0}, 0, 0},     /* absent: every axis */
    {{0}, 0, 1},     /* empty: none */
    {{0}, 1, 1},     {{1}, 1, 1}, {{-1}, 1, 1},
    {{0, 2}, 2, 1},  {{1, 2}, 2, 1}, {{0, 1}, 2, 1},
};
