/* The numeric gradient checker (grad_check.h).
 *
 * One graph holds y, a placeholder w for the weights (y's inferred shape,
 * fed at y's run-time shape) and the symbolic gradients of sum(w * y),
 * asked for with grad_ys = w: the checker then depends on no reduction's
 * gradient, only on the ops under test.  One session runs everything: y
 * once to learn its shape, the gradients once, and y twice per checked
 * element for the central differences, whose sum(w * y) is taken here in
 * double. */
#include "grad_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

enum { kMaxInputs = 16 };

static int64_t element_count(const int64_t* dims, int32_t rank) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

static double read_element(const weft_tensor* t, int64_t i) {
  const void* p = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT64:
      return ((const double*)p)[i];
    case WEFT_FLOAT32:
      return ((const float*)p)[i];
    case WEFT_INT32:
      return ((const int32_t*)p)[i];
    case WEFT_INT64:
      return (double)((const int64_t*)p)[i];
    case WEFT_UINT8:
    case WEFT_BOOL:
      return ((const uint8_t*)p)[i];
    default:
      cr_assert_fail("grad_check: cannot read %s elements",
                     weft_dtype_name(weft_tensor_dtype(t)));
      return 0;
  }
}

static void write_element(weft_tensor* t, int64_t i, double v) {
  void* p = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_FLOAT64:
      ((double*)p)[i] = v;
      break;
    case WEFT_FLOAT32:
      ((float*)p)[i] = (float)v;
      break;
    case WEFT_INT32:
      ((int32_t*)p)[i] = (int32_t)v;
      break;
    case WEFT_INT64:
      ((int64_t*)p)[i] = (int64_t)v;
      break;
    case WEFT_UINT8:
      ((uint8_t*)p)[i] = (uint8_t)v;
      break;
    case WEFT_BOOL:
      ((uint8_t*)p)[i] = v != 0;
      break;
    default:
      cr_assert_fail("grad_check: cannot write %s elements",
                     weft_dtype_name(weft_tensor_dtype(t)));
  }
}

static weft_tensor* input_tensor(const gc_input* x) {
  weft_tensor* t = wt_tensor(x->dtype, x->dims, x->rank, NULL);
  int64_t n = element_count(x->dims, x->rank);
  for (int64_t i = 0; i < n; ++i) write_element(t, i, x->values[i]);
  return t;
}

/* sum(w * y) for the current feeds. */
static double weighted_sum(weft_session* session, const weft_output* feeds,
                           weft_tensor* const* values, int32_t num_feeds,
                           weft_output y, const weft_tensor* w) {
  weft_tensor* out = wt_run1(session, feeds, values, num_feeds, y);
  int64_t n = weft_tensor_element_count(out);
  cr_assert_eq(n, weft_tensor_element_count(w),
               "grad_check: y changed its element count under a perturbation");
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += read_element(w, i) * read_element(out, i);
  weft_tensor_destroy(out);
  return sum;
}

void gc_check(const char* what, gc_build_fn build, void* arg,
              const gc_input* xs, int32_t num_xs, uint32_t constant_inputs,
              double h, double atol, double rtol) {
  cr_assert(num_xs > 0 && num_xs <= kMaxInputs,
            "%s: grad_check takes 1 to %d inputs", what, kMaxInputs);
  weft_graph* graph = wt_graph_new();
  weft_output ph[kMaxInputs];
  for (int32_t i = 0; i < num_xs; ++i) {
    int64_t dims[8];
    cr_assert(xs[i].rank <= 8, "%s: input %d has rank above 8", what, i);
    for (int32_t d = 0; d < xs[i].rank; ++d)
      dims[d] = (xs[i].unknown_dims >> d) & 1u ? -1 : xs[i].dims[d];
    char name[32];
    snprintf(name, sizeof name, "x%d", i);
    ph[i] = wt_placeholder(graph, name, xs[i].dtype, dims, xs[i].rank);
  }
  weft_output y = build(graph, ph, num_xs, arg);
  cr_assert_not_null(y.node, "%s: the build function returned no output", what);
  weft_dtype ydt = weft_output_dtype(y);
  int64_t ydims[8];
  int32_t yrank = 0;
  WT_OK(weft_output_shape(y, ydims, 8, &yrank));
  cr_assert(yrank >= 0, "%s: y has unknown rank", what);
  weft_output w = wt_placeholder(graph, "gc_weights", ydt, ydims, yrank);

  weft_output checked[kMaxInputs], grads[kMaxInputs];
  int32_t slot[kMaxInputs];
  int32_t num_checked = 0;
  for (int32_t i = 0; i < num_xs; ++i) {
    slot[i] = -1;
    if ((constant_inputs >> i) & 1u) continue;
    slot[i] = num_checked;
    checked[num_checked++] = ph[i];
  }
  cr_assert(num_checked > 0, "%s: every input is constant", what);
  WT_OK(weft_gradients(graph, &y, 1, checked, num_checked, &w, grads));

  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = "/device:CPU:0";
  options.inter_op_threads = 1;
  weft_session* session = NULL;
  WT_OK(weft_session_create(graph, &options, &session));

  weft_output feeds[kMaxInputs + 1];
  weft_tensor* values[kMaxInputs + 1];
  for (int32_t i = 0; i < num_xs; ++i) {
    feeds[i] = ph[i];
    values[i] = input_tensor(&xs[i]);
  }
  /* The weights: fixed, of varied size and sign, none near zero. */
  weft_tensor* y0 = wt_run1(session, feeds, values, num_xs, y);
  weft_tensor* wt =
      wt_tensor(ydt, weft_tensor_dims(y0), weft_tensor_rank(y0), NULL);
  int64_t ny = weft_tensor_element_count(y0);
  wt_rng rng = {0x5eed};
  for (int64_t i = 0; i < ny; ++i) {
    double m = wt_rng_uniform(&rng, 0.5f, 1.5f);
    write_element(wt, i, (wt_rng_next(&rng) & 1) ? m : -m);
  }
  weft_tensor_destroy(y0);
  feeds[num_xs] = w;
  values[num_xs] = wt;

  /* Symbolic: an input without a gradient gets zeros. */
  weft_output fetches[kMaxInputs];
  int32_t num_fetches = 0;
  int32_t fetch_of[kMaxInputs];
  for (int32_t c = 0; c < num_checked; ++c) {
    fetch_of[c] = -1;
    if (grads[c].node == NULL) continue;
    cr_assert_eq(weft_output_dtype(grads[c]), weft_output_dtype(checked[c]),
                 "%s: the gradient of input %d is %s, the input %s", what, c,
                 weft_dtype_name(weft_output_dtype(grads[c])),
                 weft_dtype_name(weft_output_dtype(checked[c])));
    fetch_of[c] = num_fetches;
    fetches[num_fetches++] = grads[c];
  }
  weft_tensor* symbolic[kMaxInputs] = {NULL};
  if (num_fetches > 0)
    WT_OK(weft_session_run(session, feeds, values, num_xs + 1, fetches,
                           num_fetches, NULL, 0, symbolic));

  for (int32_t i = 0; i < num_xs; ++i) {
    if (slot[i] < 0) continue;
    int32_t f = fetch_of[slot[i]];
    const weft_tensor* g = f < 0 ? NULL : symbolic[f];
    int64_t n = element_count(xs[i].dims, xs[i].rank);
    if (g != NULL) {
      cr_assert_eq(weft_tensor_rank(g), xs[i].rank,
                   "%s: the gradient of input %d has rank %d, the input %d",
                   what, i, weft_tensor_rank(g), xs[i].rank);
      for (int32_t d = 0; d < xs[i].rank; ++d)
        cr_assert_eq(weft_tensor_dim(g, d), xs[i].dims[d],
                     "%s: the gradient of input %d has dim %d = %lld, the "
                     "input %lld",
                     what, i, d, (long long)weft_tensor_dim(g, d),
                     (long long)xs[i].dims[d]);
    }
    for (int64_t e = 0; e < n; ++e) {
      double x0 = xs[i].values[e];
      write_element(values[i], e, x0 + h);
      double up = weighted_sum(session, feeds, values, num_xs, y, wt);
      write_element(values[i], e, x0 - h);
      double down = weighted_sum(session, feeds, values, num_xs, y, wt);
      write_element(values[i], e, x0);
      double numeric = (up - down) / (2 * h);
      double sym = g == NULL ? 0.0 : read_element(g, e);
      cr_assert(fabs(sym - numeric) <= atol + rtol * fabs(numeric),
                "%s: d/d(input %d)[%lld]: symbolic %.10g, numeric %.10g%s",
                what, i, (long long)e, sym, numeric,
                g == NULL ? " (no gradient was built)" : "");
    }
  }

  for (int32_t f = 0; f < num_fetches; ++f) weft_tensor_destroy(symbolic[f]);
  for (int32_t i = 0; i <= num_xs; ++i) weft_tensor_destroy(values[i]);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
}

void gc_check_f64(const char* what, gc_build_fn build, void* arg,
                  const gc_input* xs, int32_t num_xs,
                  uint32_t constant_inputs) {
  gc_check(what, build, arg, xs, num_xs, constant_inputs, 1e-6, 1e-7, 1e-5);
}
