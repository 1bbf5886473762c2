/* The array ops of runtime/ops/CONVENTIONS.md on the CPU plugin.
 *
 * Data movement ops only move bytes, so each case is checked the same way
 * for every dtype: the test gives every input element a distinct value and
 * works out, with its own index arithmetic, which input element (or which
 * constant) each output element must be.  float16 runs through Cast nodes
 * (float32 in, float32 out) with values float16 holds exactly.  Inputs are
 * fed through placeholders so no constant folding hides the kernel. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

#define CPU "/device:CPU:0"
#define MAX_IN 4
#define MAX_OUT 8
/* A source reference: input * SRC_INPUT + element index; -1 = the constant. */
#define SRC_INPUT 100000000LL

typedef struct {
  int32_t rank;
  int64_t dims[8];
} shape_t;
#define SHAPE(...) ((shape_t){WT_RANK(__VA_ARGS__), {__VA_ARGS__}})
#define SCALAR ((shape_t){0, {0}})

enum attr_kind { ATTR_INT, ATTR_FLOAT, ATTR_LIST, ATTR_DTYPE };
typedef struct {
  const char* name;
  enum attr_kind kind;
  int64_t i;
  double f;
  int32_t count;
  int64_t list[16];
} attr_t;
#define INT(n, v) {.name = (n), .kind = ATTR_INT, .i = (v)}
#define FLOAT(n, v) {.name = (n), .kind = ATTR_FLOAT, .f = (v)}
#define DTYPE(n, v) {.name = (n), .kind = ATTR_DTYPE, .i = (v)}
#define LIST(n, ...) \
  {.name = (n), .kind = ATTR_LIST, .count = WT_RANK(__VA_ARGS__), \
   .list = {__VA_ARGS__}}
#define EMPTY_LIST(n) {.name = (n), .kind = ATTR_LIST, .count = 0}

enum placeholder_kind { EXACT, DIMS_UNKNOWN, RANK_UNKNOWN };

typedef struct {
  const char* op;
  const char* name; /* node name; NULL for a fresh one */
  int num_inputs;
  shape_t shape[MAX_IN];
  weft_dtype fixed[MAX_IN]; /* non-zero: the input's own dtype (indices) */
  const void* data[MAX_IN]; /* the values of a fixed input */
  enum placeholder_kind placeholders;
  attr_t attrs[6];
  int num_outputs; /* 0 means 1 */
  int threads;     /* intra-op threads; 0 for the default */
} spec_t;

static int64_t count_of(const shape_t* s) {
  int64_t n = 1;
  for (int32_t i = 0; i < s->rank; ++i) n *= s->dims[i];
  return n;
}

static void unflatten(int64_t k, const shape_t* s, int64_t* coords) {
  for (int32_t i = s->rank - 1; i >= 0; --i) {
    coords[i] = k % s->dims[i];
    k /= s->dims[i];
  }
}

static int64_t flatten(const int64_t* coords, const shape_t* s) {
  int64_t k = 0;
  for (int32_t i = 0; i < s->rank; ++i) k = k * s->dims[i] + coords[i];
  return k;
}

static const attr_t* find_attr(const spec_t* s, const char* name) {
  for (int i = 0; i < 6 && s->attrs[i].name; ++i)
    if (strcmp(s->attrs[i].name, name) == 0) return &s->attrs[i];
  return NULL;
}

static int64_t int_attr(const spec_t* s, const char* name, int64_t fallback) {
  const attr_t* a = find_attr(s, name);
  return a ? a->i : fallback;
}

static int64_t axis_attr(const spec_t* s, const char* name, int64_t fallback,
                         int32_t count) {
  int64_t a = int_attr(s, name, fallback);
  return a < 0 ? a + count : a;
}

/* Distinct values for element i of input j, held exactly by `dtype`; for
 * float16 the float32 that is fed and cast.  Written as the fed dtype. */
static void element_value(weft_dtype dtype, int j, int64_t i, void* out) {
  switch (dtype) {
    case WEFT_FLOAT32: *(float*)out = (float)(j * 1000 + i) + 0.5f; break;
    case WEFT_FLOAT64: *(double*)out = j * 1000.0 + (double)i + 0.25; break;
    case WEFT_INT32: *(int32_t*)out = (int32_t)(j * 100000 + i * 3 - 7); break;
    case WEFT_INT64:
      *(int64_t*)out = (j * 100000 + i) * 3000000001LL;
      break;
    case WEFT_UINT8: *(uint8_t*)out = (uint8_t)((j * 37 + i * 5) % 256); break;
    case WEFT_BOOL: *(uint8_t*)out = (uint8_t)((i * 7 + j) % 3 == 0); break;
    case WEFT_FLOAT16: *(float*)out = (float)(j * 300 + i % 300 - 600); break;
    default: cr_assert_fail("no values for %s", weft_dtype_name(dtype));
  }
}

/* `c` as the fetched dtype's element (float16 comes back as float32). */
static void constant_value(weft_dtype dtype, double c, void* out) {
  switch (dtype) {
    case WEFT_FLOAT32: case WEFT_FLOAT16: *(float*)out = (float)c; break;
    case WEFT_FLOAT64: *(double*)out = c; break;
    case WEFT_INT32: *(int32_t*)out = (int32_t)c; break;
    case WEFT_INT64: *(int64_t*)out = (int64_t)c; break;
    case WEFT_UINT8: *(uint8_t*)out = (uint8_t)c; break;
    case WEFT_BOOL: *(uint8_t*)out = c != 0; break;
    default: cr_assert_fail("no constant for %s", weft_dtype_name(dtype));
  }
}

static weft_dtype fed_dtype(weft_dtype dtype) {
  return dtype == WEFT_FLOAT16 ? WEFT_FLOAT32 : dtype;
}

static weft_output cast(weft_graph* g, weft_output x, weft_dtype to) {
  weft_op_builder* b = weft_op_begin(g, "Cast", NULL);
  weft_op_add_input(b, x);
  weft_op_set_attr_dtype(b, "DstT", to);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* Adds the op of `s` over placeholders of `dtype` to `g`; returns the
 * weft_op_finish status.  feeds/values (may be NULL) get the placeholders
 * and tensors for them. */
static weft_status* build(weft_graph* g, const spec_t* s, weft_dtype dtype,
                          weft_output* feeds, weft_tensor** values,
                          weft_node** node) {
  weft_op_builder* b = weft_op_begin(g, s->op, s->name);
  for (int j = 0; j < s->num_inputs; ++j) {
    const shape_t* sh = &s->shape[j];
    weft_dtype t = s->fixed[j] ? s->fixed[j] : fed_dtype(dtype);
    int64_t unknown[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    char name[16];
    snprintf(name, sizeof name, "input%d", j);
    weft_output p = wt_placeholder(
        g, name, t, s->placeholders == EXACT ? sh->dims : unknown,
        s->placeholders == RANK_UNKNOWN ? -1 : sh->rank);
    if (feeds) feeds[j] = p;
    if (values && s->fixed[j]) {
      values[j] = wt_tensor(t, sh->dims, sh->rank,
                            count_of(sh) ? s->data[j] : NULL);
    } else if (values) {
      values[j] = wt_tensor(t, sh->dims, sh->rank, NULL);
      char* at = weft_tensor_data(values[j]);
      for (int64_t i = 0; i < count_of(sh); ++i)
        element_value(dtype, j, i, at + i * wt_dtype_bytes(t));
    }
    if (!s->fixed[j] && dtype == WEFT_FLOAT16) p = cast(g, p, WEFT_FLOAT16);
    weft_op_add_input(b, p);
  }
  for (int i = 0; i < 6 && s->attrs[i].name; ++i) {
    const attr_t* a = &s->attrs[i];
    switch (a->kind) {
      case ATTR_INT: weft_op_set_attr_int(b, a->name, a->i); break;
      case ATTR_FLOAT: weft_op_set_attr_float(b, a->name, a->f); break;
      case ATTR_DTYPE:
        weft_op_set_attr_dtype(b, a->name, (weft_dtype)a->i);
        break;
      case ATTR_LIST:
        weft_op_set_attr_int_list(b, a->name, a->list, a->count);
        break;
    }
  }
  return weft_op_finish(b, node);
}

static weft_status* try_build(const spec_t* s, weft_dtype dtype) {
  weft_graph* g = wt_graph_new();
  weft_node* node = NULL;
  weft_status* status = build(g, s, dtype, NULL, NULL, &node);
  weft_graph_destroy(g);
  return status;
}

/* Builds and runs `s` on the CPU; out[] gets every output (as float32 when
 * dtype is float16).  Build and run errors both come back as the status. */
static weft_status* try_run(const spec_t* s, weft_dtype dtype,
                            weft_tensor** out) {
  int n_out = s->num_outputs ? s->num_outputs : 1;
  for (int o = 0; o < n_out; ++o) out[o] = NULL;
  weft_graph* g = wt_graph_new();
  weft_output feeds[MAX_IN];
  weft_tensor* values[MAX_IN];
  weft_node* node = NULL;
  weft_status* status = build(g, s, dtype, feeds, values, &node);
  if (status == NULL) {
    weft_output fetches[MAX_OUT];
    for (int o = 0; o < n_out; ++o) {
      fetches[o] = (weft_output){node, o};
      if (dtype == WEFT_FLOAT16 && weft_output_dtype(fetches[o]) == WEFT_FLOAT16)
        fetches[o] = cast(g, fetches[o], WEFT_FLOAT32);
    }
    weft_session_options options;
    weft_session_options_init(&options);
    options.devices = CPU;
    options.intra_op_threads = s->threads;
    weft_session* session = NULL;
    WT_OK(weft_session_create(g, &options, &session));
    status = weft_session_run(session, feeds, values, s->num_inputs, fetches,
                              n_out, NULL, 0, out);
    weft_session_destroy(session);
  }
  for (int j = 0; j < s->num_inputs; ++j) weft_tensor_destroy(values[j]);
  weft_graph_destroy(g);
  return status;
}

/* Which source element output `o`'s element at `coords` must be. */
typedef int64_t (*reference_fn)(const spec_t* s, int o, const int64_t* coords,
                                const shape_t* out);

/* Runs `s` for `dtype` and checks every output element, byte for byte,
 * against the input element `ref` names or the constant `fill`. */
static void check_op_dtype(const spec_t* s, weft_dtype dtype,
                           const shape_t* want, reference_fn ref, double fill) {
  weft_tensor* out[MAX_OUT];
  int n_out = s->num_outputs ? s->num_outputs : 1;
  WT_OK(try_run(s, dtype, out));
  weft_dtype t = fed_dtype(dtype);
  size_t es = wt_dtype_bytes(t);
  for (int o = 0; o < n_out; ++o) {
    const shape_t* w = &want[s->num_outputs ? o : 0];
    wt_expect_shape(out[o], t, w->dims, w->rank);
    const char* got = weft_tensor_data(out[o]);
    int64_t coords[8];
    for (int64_t k = 0; k < count_of(w); ++k) {
      unflatten(k, w, coords);
      int64_t src = ref(s, o, coords, w);
      unsigned char expected[8];
      if (src < 0) constant_value(dtype, fill, expected);
      else element_value(dtype, (int)(src / SRC_INPUT), src % SRC_INPUT,
                         expected);
      if (memcmp(got + k * es, expected, es) != 0) {
        cr_expect_fail("%s (%s) output %d element %lld differs from source "
                       "%lld", s->op, weft_dtype_name(dtype), o, (long long)k,
                       (long long)src);
        break;
      }
    }
    weft_tensor_destroy(out[o]);
  }
}

static const weft_dtype kAllDtypes[] = {WEFT_FLOAT32, WEFT_FLOAT64,
                                        WEFT_INT32,   WEFT_INT64,
                                        WEFT_UINT8,   WEFT_BOOL,
                                        WEFT_FLOAT16};

static void check_op(const spec_t* s, const shape_t* want, reference_fn ref,
                     double fill) {
  for (size_t d = 0; d < sizeof kAllDtypes / sizeof kAllDtypes[0]; ++d)
    check_op_dtype(s, kAllDtypes[d], want, ref, fill);
}

/* The inferred shape of output `index` of the node `s` builds. */
static void expect_inferred(const spec_t* s, int index, const int64_t* dims,
                            int32_t rank) {
  weft_graph* g = wt_graph_new();
  weft_node* node = NULL;
  WT_OK(build(g, s, WEFT_FLOAT32, NULL, NULL, &node));
  int64_t got[8];
  int32_t got_rank = 0;
  WT_OK(weft_output_shape((weft_output){node, index}, got, 8, &got_rank));
  cr_expect_eq(got_rank, rank, "%s: rank %d, expected %d", s->op, got_rank,
               rank);
  for (int32_t i = 0; i < rank && i < got_rank; ++i)
    cr_expect_eq(got[i], dims[i], "%s: dim %d is %lld, expected %lld", s->op,
                 i, (long long)got[i], (long long)dims[i]);
  weft_graph_destroy(g);
}

#define EXPECT_REFUSED(spec, ...)                                      \
  WT_EXPECT_ERROR(try_build(&(spec), WEFT_FLOAT32), WEFT_INVALID_ARGUMENT, \
                  (spec).name, (spec).op, __VA_ARGS__)

/* ---- reference index maps ------------------------------------------------ */

static int64_t same_index(const spec_t* s, int o, const int64_t* c,
                          const shape_t* out) {
  (void)s, (void)o;
  return flatten(c, out);
}

static int64_t transpose_ref(const spec_t* s, int o, const int64_t* c,
                             const shape_t* out) {
  (void)o;
  const attr_t* perm = find_attr(s, "perm");
  int64_t in[8];
  for (int32_t i = 0; i < out->rank; ++i) {
    int64_t p = perm->list[i] < 0 ? perm->list[i] + out->rank : perm->list[i];
    in[p] = c[i];
  }
  return flatten(in, &s->shape[0]);
}

static int64_t concat_ref(const spec_t* s, int o, const int64_t* c,
                          const shape_t* out) {
  (void)o;
  int64_t axis = axis_attr(s, "axis", 0, out->rank), in[8];
  memcpy(in, c, sizeof in);
  for (int j = 0; j < s->num_inputs; ++j) {
    if (in[axis] < s->shape[j].dims[axis])
      return j * SRC_INPUT + flatten(in, &s->shape[j]);
    in[axis] -= s->shape[j].dims[axis];
  }
  cr_assert_fail("concat_ref: coordinate past every input");
  return 0;
}

static int64_t split_ref(const spec_t* s, int o, const int64_t* c,
                         const shape_t* out) {
  int64_t axis = axis_attr(s, "axis", 0, out->rank), in[8];
  memcpy(in, c, sizeof in);
  in[axis] += o * out->dims[axis];
  return flatten(in, &s->shape[0]);
}

static int64_t slice_ref(const spec_t* s, int o, const int64_t* c,
                         const shape_t* out) {
  (void)o;
  const attr_t* begin = find_attr(s, "begin");
  int64_t in[8];
  for (int32_t i = 0; i < out->rank; ++i) in[i] = c[i] + begin->list[i];
  return flatten(in, &s->shape[0]);
}

static int64_t pack_ref(const spec_t* s, int o, const int64_t* c,
                        const shape_t* out) {
  (void)o;
  int64_t axis = axis_attr(s, "axis", 0, out->rank), in[8];
  for (int32_t i = 0, k = 0; i < out->rank; ++i)
    if (i != axis) in[k++] = c[i];
  return c[axis] * SRC_INPUT + flatten(in, &s->shape[0]);
}

static int64_t unpack_ref(const spec_t* s, int o, const int64_t* c,
                          const shape_t* out) {
  int64_t axis = axis_attr(s, "axis", 0, out->rank + 1), in[8];
  for (int32_t i = 0, k = 0; i <= out->rank; ++i)
    in[i] = i == axis ? o : c[k++];
  return flatten(in, &s->shape[0]);
}

static int64_t tile_ref(const spec_t* s, int o, const int64_t* c,
                        const shape_t* out) {
  (void)o;
  int64_t in[8];
  for (int32_t i = 0; i < out->rank; ++i) in[i] = c[i] % s->shape[0].dims[i];
  return flatten(in, &s->shape[0]);
}

static int64_t pad_ref(const spec_t* s, int o, const int64_t* c,
                       const shape_t* out) {
  (void)o;
  const attr_t* p = find_attr(s, "paddings");
  int64_t in[8];
  for (int32_t i = 0; i < out->rank; ++i) {
    in[i] = c[i] - p->list[2 * i];
    if (in[i] < 0 || in[i] >= s->shape[0].dims[i]) return -1;
  }
  return flatten(in, &s->shape[0]);
}

static int64_t index_at(const spec_t* s, int j, int64_t k) {
  return s->fixed[j] == WEFT_INT32 ? ((const int32_t*)s->data[j])[k]
                                   : ((const int64_t*)s->data[j])[k];
}

static int64_t gather_ref(const spec_t* s, int o, const int64_t* c,
                          const shape_t* out) {
  (void)o, (void)out;
  const shape_t* params = &s->shape[0];
  const shape_t* idx = &s->shape[1];
  int64_t axis = axis_attr(s, "axis", 0, params->rank), in[8];
  for (int32_t i = 0; i < axis; ++i) in[i] = c[i];
  in[axis] = index_at(s, 1, flatten(c + axis, idx));
  for (int32_t i = axis + 1; i < params->rank; ++i)
    in[i] = c[i - 1 + idx->rank];
  return flatten(in, params);
}

static int64_t first_element(const spec_t* s, int o, const int64_t* c,
                             const shape_t* out) {
  (void)s, (void)o, (void)c, (void)out;
  return 0;
}

static int64_t constant(const spec_t* s, int o, const int64_t* c,
                        const shape_t* out) {
  (void)s, (void)o, (void)c, (void)out;
  return -1;
}

/* ---- Rank, Shape, Size --------------------------------------------------- */

Test(ops_array, rank_shape_size) {
  const weft_dtype types[] = {WEFT_FLOAT32, WEFT_BOOL, WEFT_INT64};
  for (int t = 0; t < 3; ++t) {
    weft_tensor* out[1];
    spec_t rank = {.op = "Rank", .num_inputs = 1, .shape = {SHAPE(2, 0, 5)}};
    WT_OK(try_run(&rank, types[t], out));
    wt_expect_shape(out[0], WEFT_INT32, NULL, 0);
    cr_expect_eq(*(const int32_t*)weft_tensor_data(out[0]), 3);
    weft_tensor_destroy(out[0]);

    spec_t shape = {.op = "Shape", .num_inputs = 1, .shape = {SHAPE(2, 0, 5)}};
    WT_OK(try_run(&shape, types[t], out));
    wt_expect_shape(out[0], WEFT_INT32, WT_SHAPE(3));
    const int32_t* dims = weft_tensor_data(out[0]);
    cr_expect(dims[0] == 2 && dims[1] == 0 && dims[2] == 5);
    weft_tensor_destroy(out[0]);

    spec_t shape64 = {.op = "Shape", .num_inputs = 1, .shape = {SHAPE(7, 3)},
                      .attrs = {DTYPE("out_type", WEFT_INT64)}};
    WT_OK(try_run(&shape64, types[t], out));
    wt_expect_shape(out[0], WEFT_INT64, WT_SHAPE(2));
    const int64_t* dims64 = weft_tensor_data(out[0]);
    cr_expect(dims64[0] == 7 && dims64[1] == 3);
    weft_tensor_destroy(out[0]);

    spec_t size = {.op = "Size", .num_inputs = 1, .shape = {SHAPE(4, 6)},
                   .attrs = {DTYPE("out_type", WEFT_INT64)}};
    WT_OK(try_run(&size, types[t], out));
    wt_expect_shape(out[0], WEFT_INT64, NULL, 0);
    cr_expect_eq(*(const int64_t*)weft_tensor_data(out[0]), 24);
    weft_tensor_destroy(out[0]);
  }
  /* A scalar: rank 0, an empty shape, one element. */
  weft_tensor* out[1];
  spec_t shape = {.op = "Shape", .num_inputs = 1, .shape = {SCALAR}};
  WT_OK(try_run(&shape, WEFT_FLOAT64, out));
  wt_expect_shape(out[0], WEFT_INT32, WT_SHAPE(0));
  weft_tensor_destroy(out[0]);
  spec_t size = {.op = "Size", .num_inputs = 1, .shape = {SCALAR},
                 .placeholders = RANK_UNKNOWN};
  WT_OK(try_run(&size, WEFT_UINT8, out));
  cr_expect_eq(*(const int32_t*)weft_tensor_data(out[0]), 1);
  weft_tensor_destroy(out[0]);
  spec_t bad = {.op = "Shape", .name = "shape_bad_type", .num_inputs = 1,
                .shape = {SHAPE(2)}, .attrs = {DTYPE("out_type", WEFT_UINT8)}};
  EXPECT_REFUSED(bad, "out_type");
  expect_inferred(&(spec_t){.op = "Shape", .num_inputs = 1,
                            .shape = {SHAPE(2)}, .placeholders = RANK_UNKNOWN},
                  0, WT_SHAPE(-1));
}

/* ---- views: Reshape, ExpandDims, Squeeze --------------------------------- */

Test(ops_array, reshape_expand_squeeze_every_dtype) {
  spec_t reshape = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(2, 3, 4)},
                    .attrs = {LIST("shape", 4, -1, 3)}};
  check_op(&reshape, &SHAPE(4, 2, 3), same_index, 0);
  spec_t flat = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(2, 3)},
                 .placeholders = RANK_UNKNOWN, .attrs = {LIST("shape", -1)}};
  check_op(&flat, &SHAPE(6), same_index, 0);
  spec_t scalar = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(1, 1)},
                   .attrs = {EMPTY_LIST("shape")}};
  check_op(&scalar, &SCALAR, same_index, 0);
  spec_t empty = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(3, 0)},
                  .attrs = {LIST("shape", 0, 5)}};
  check_op(&empty, &SHAPE(0, 5), same_index, 0);

  spec_t expand = {.op = "ExpandDims", .num_inputs = 1, .shape = {SHAPE(2, 3)},
                   .attrs = {INT("axis", -1)}};
  check_op(&expand, &SHAPE(2, 3, 1), same_index, 0);
  expand.attrs[0].i = 0;
  check_op(&expand, &SHAPE(1, 2, 3), same_index, 0);
  expand.attrs[0].i = -3;
  check_op(&expand, &SHAPE(1, 2, 3), same_index, 0);

  spec_t squeeze = {.op = "Squeeze", .num_inputs = 1,
                    .shape = {SHAPE(1, 2, 1, 3, 1)}};
  check_op(&squeeze, &SHAPE(2, 3), same_index, 0);
  squeeze.attrs[0] = (attr_t)LIST("squeeze_dims", 0, -1);
  check_op(&squeeze, &SHAPE(2, 1, 3), same_index, 0);
  squeeze.attrs[0] = (attr_t)EMPTY_LIST("squeeze_dims");
  check_op(&squeeze, &SHAPE(1, 2, 1, 3, 1), same_index, 0);
}

Test(ops_array, views_infer_partly_known_shapes) {
  spec_t reshape = {.op = "Reshape", .num_inputs = 1, .shape = {SHAPE(2, 6)},
                    .placeholders = DIMS_UNKNOWN,
                    .attrs = {LIST("shape", 3, -1)}};
  expect_inferred(&reshape, 0, WT_SHAPE(3, -1));
  reshape.placeholders = EXACT;
  expect_inferred(&reshape, 0, WT_SHAPE(3, 4));
  spec_t expand = {.op = "ExpandDims", .num_inputs = 1, .shape = {SHAPE(2, 6)},
                   .placeholders = DIMS_UNKNOWN, .attrs = {INT("axis", 1)}};
  expect_inferred(&expand, 0, WT_SHAPE(-1, 1, -1));
  spec_t squeeze = {.op = "Squeeze", .num_inputs = 1, .shape = {SHAPE(1, 6)},
                    .placeholders = DIMS_UNKNOWN,
                    .attrs = {LIST("squeeze_dims", 0)}};
  expect_inferred(&squeeze, 0, WT_SHAPE(-1));
  squeeze.attrs[0].name = NULL; /* every 1: unknown dims might be 1 */
  expect_inferred(&squeeze, 0, NULL, -1);
}

/* Views share the input's memory: the fetched output of a Reshape points
 * into the fed tensor, as Identity's does. */
static const void* fetched_data(const char* op, const attr_t* attr,
                                weft_tensor* fed, weft_tensor** keep) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(1, 6));
  weft_op_builder* b = weft_op_begin(g, op, NULL);
  weft_op_add_input(b, x);
  if (attr && attr->kind == ATTR_INT) weft_op_set_attr_int(b, attr->name, attr->i);
  if (attr && attr->kind == ATTR_LIST)
    weft_op_set_attr_int_list(b, attr->name, attr->list, attr->count);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  weft_session* session = wt_session_new(g, CPU);
  *keep = wt_run1(session, &x, &fed, 1, (weft_output){node, 0});
  weft_session_destroy(session);
  weft_graph_destroy(g);
  return weft_tensor_data(*keep);
}

Test(ops_array, views_do_not_copy) {
  weft_tensor* fed = wt_tensor(WEFT_FLOAT32, WT_SHAPE(1, 6), NULL);
  weft_tensor* out = NULL;
  if (fetched_data("Identity", NULL, fed, &out) != weft_tensor_data(fed)) {
    weft_tensor_destroy(out);
    weft_tensor_destroy(fed);
    WT_SKIP("fetches are copies here, so sharing cannot be observed");
  }
  weft_tensor_destroy(out);
  const attr_t reshape = LIST("shape", 3, 2), expand = INT("axis", 0),
               squeeze = LIST("squeeze_dims", 0);
  const char* ops[] = {"Reshape", "ExpandDims", "Squeeze", "Transpose"};
  const attr_t perm = LIST("perm", 1, 0); /* moves only a size-1 axis */
  const attr_t* attrs[] = {&reshape, &expand, &squeeze, &perm};
  for (int i = 0; i < 4; ++i) {
    cr_expect_eq(fetched_data(ops[i], attrs[i], fed, &out),
                 weft_tensor_data(fed), "%s copied its input", ops[i]);
    weft_tensor_destroy(out);
  }
  weft_tensor_destroy(fed);
}

Test(ops_array, view_refusals) {
  spec_t s = {.op = "Reshape", .name = "reshape_mismatch", .num_inputs = 1,
              .shape = {SHAPE(2, 3)}, .attrs = {LIST("shape", 4, 2)}};
  EXPECT_REFUSED(s, "[2,3]", "[4,2]");
  s.name = "reshape_two_unknown";
  s.attrs[0] = (attr_t)LIST("shape", -1, -1);
  EXPECT_REFUSED(s, "more than one -1");
  s.name = "reshape_not_divisible";
  s.attrs[0] = (attr_t)LIST("shape", 4, -1);
  EXPECT_REFUSED(s, "[4,?]");
  s.name = "reshape_negative";
  s.attrs[0] = (attr_t)LIST("shape", 3, -2);
  EXPECT_REFUSED(s, "negative");
  s.name = "reshape_zero_and_unknown";
  s.attrs[0] = (attr_t)LIST("shape", 0, -1);
  EXPECT_REFUSED(s, "-1");
  s.name = "reshape_no_shape";
  s.attrs[0].name = NULL;
  EXPECT_REFUSED(s, "shape");

  spec_t e = {.op = "ExpandDims", .name = "expand_far", .num_inputs = 1,
              .shape = {SHAPE(2, 3)}, .attrs = {INT("axis", 3)}};
  EXPECT_REFUSED(e, "axis", "[2,3]");
  e.attrs[0].i = -4;
  EXPECT_REFUSED(e, "axis");

  spec_t q = {.op = "Squeeze", .name = "squeeze_not_one", .num_inputs = 1,
              .shape = {SHAPE(1, 2)}, .attrs = {LIST("squeeze_dims", 1)}};
  EXPECT_REFUSED(q, "[1,2]", "not 1");
  q.name = "squeeze_twice";
  q.attrs[0] = (attr_t)LIST("squeeze_dims", 0, -2);
  EXPECT_REFUSED(q, "twice");
  q.name = "squeeze_out_of_range";
  q.attrs[0] = (attr_t)LIST("squeeze_dims", 2);
  EXPECT_REFUSED(q, "squeeze_dims");

  /* What the graph could not know, the kernel refuses at run time. */
  weft_tensor* out[1];
  s = (spec_t){.op = "Reshape", .name = "reshape_late", .num_inputs = 1,
               .shape = {SHAPE(2, 3)}, .placeholders = DIMS_UNKNOWN,
               .attrs = {LIST("shape", 4, -1)}};
  WT_EXPECT_ERROR(try_run(&s, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "reshape_late", "[2,3]");
  q.name = "squeeze_late";
  q.placeholders = DIMS_UNKNOWN;
  q.attrs[0] = (attr_t)LIST("squeeze_dims", 1);
  WT_EXPECT_ERROR(try_run(&q, WEFT_INT32, out), WEFT_INVALID_ARGUMENT,
                  "squeeze_late", "not 1");
}

/* ---- Transpose, Slice, Tile, Pad ----------------------------------------- */

Test(ops_array, transpose_hand_worked) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  weft_graph* g = wt_graph_new();
  weft_output in = wt_const_f32(g, "x", WT_SHAPE(2, 3), x);
  weft_op_builder* b = weft_op_begin(g, "Transpose", NULL);
  weft_op_add_input(b, in);
  weft_op_set_attr_int_list(b, "perm", WT_DIMS(1, 0), 2);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  weft_session* session = wt_session_new(g, CPU);
  weft_tensor* out = wt_run1(session, NULL, NULL, 0, (weft_output){node, 0});
  wt_expect_shape(out, WEFT_FLOAT32, WT_SHAPE(3, 2));
  const double want[6] = {1, 4, 2, 5, 3, 6};
  wt_expect_f32(out, want, 6, 0, 0);
  weft_tensor_destroy(out);
  weft_session_destroy(session);
  weft_graph_destroy(g);
}

Test(ops_array, transpose_every_dtype) {
  spec_t s = {.op = "Transpose", .num_inputs = 1, .shape = {SHAPE(2, 3, 4)},
              .attrs = {LIST("perm", 2, 0, 1)}};
  check_op(&s, &SHAPE(4, 2, 3), transpose_ref, 0);
  s.attrs[0] = (attr_t)LIST("perm", -1, 1, 0);
  check_op(&s, &SHAPE(4, 3, 2), transpose_ref, 0);
  s = (spec_t){.op = "Transpose", .num_inputs = 1, .shape = {SHAPE(3, 1, 0)},
               .attrs = {LIST("perm", 2, 0, 1)}};
  check_op(&s, &SHAPE(0, 3, 1), transpose_ref, 0);
  s = (spec_t){.op = "Transpose", .num_inputs = 1, .shape = {SCALAR},
               .attrs = {EMPTY_LIST("perm")}};
  check_op(&s, &SCALAR, transpose_ref, 0);
  /* Past the parallel threshold, with tiled planes and odd edges. */
  s = (spec_t){.op = "Transpose", .num_inputs = 1, .shape = {SHAPE(3, 97, 130)},
               .attrs = {LIST("perm", 0, 2, 1)}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT32, &SHAPE(3, 130, 97), transpose_ref, 0);
  check_op_dtype(&s, WEFT_UINT8, &SHAPE(3, 130, 97), transpose_ref, 0);
  s.attrs[0] = (attr_t)LIST("perm", 2, 1, 0);
  check_op_dtype(&s, WEFT_INT64, &SHAPE(130, 97, 3), transpose_ref, 0);
}

Test(ops_array, slice_every_dtype) {
  spec_t s = {.op = "Slice", .num_inputs = 1, .shape = {SHAPE(3, 4, 5)},
              .attrs = {LIST("begin", 1, 0, 2), LIST("size", 2, -1, 2)}};
  check_op(&s, &SHAPE(2, 4, 2), slice_ref, 0);
  s.attrs[0] = (attr_t)LIST("begin", 0, 4, 5);
  s.attrs[1] = (attr_t)LIST("size", 3, 0, -1);
  check_op(&s, &SHAPE(3, 0, 0), slice_ref, 0);
  s.attrs[0] = (attr_t)LIST("begin", 0, 0, 0);
  s.attrs[1] = (attr_t)LIST("size", -1, -1, -1);
  check_op(&s, &SHAPE(3, 4, 5), slice_ref, 0);
  s = (spec_t){.op = "Slice", .num_inputs = 1, .shape = {SHAPE(300, 260)},
               .attrs = {LIST("begin", 7, 3), LIST("size", 290, 250)},
               .threads = 2};
  check_op_dtype(&s, WEFT_INT32, &SHAPE(290, 250), slice_ref, 0);
  s.placeholders = DIMS_UNKNOWN;
  expect_inferred(&s, 0, WT_SHAPE(290, 250));
  s.attrs[1] = (attr_t)LIST("size", -1, 2);
  expect_inferred(&s, 0, WT_SHAPE(-1, 2));
}

Test(ops_array, tile_every_dtype) {
  spec_t s = {.op = "Tile", .num_inputs = 1, .shape = {SHAPE(2, 3)},
              .attrs = {LIST("multiples", 3, 2)}};
  check_op(&s, &SHAPE(6, 6), tile_ref, 0);
  s.attrs[0] = (attr_t)LIST("multiples", 1, 0);
  check_op(&s, &SHAPE(2, 0), tile_ref, 0);
  s = (spec_t){.op = "Tile", .num_inputs = 1, .shape = {SHAPE(2, 1, 3)},
               .attrs = {LIST("multiples", 2, 4, 1)}};
  check_op(&s, &SHAPE(4, 4, 3), tile_ref, 0);
  s = (spec_t){.op = "Tile", .num_inputs = 1, .shape = {SHAPE(5, 7)},
               .attrs = {LIST("multiples", 90, 60)}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT64, &SHAPE(450, 420), tile_ref, 0);
  s.placeholders = DIMS_UNKNOWN;
  s.attrs[0] = (attr_t)LIST("multiples", 2, 0);
  expect_inferred(&s, 0, WT_SHAPE(-1, 0));
}

Test(ops_array, pad_every_dtype) {
  spec_t s = {.op = "Pad", .num_inputs = 1, .shape = {SHAPE(2, 3)},
              .attrs = {LIST("paddings", 1, 0, 2, 1)}};
  check_op(&s, &SHAPE(3, 6), pad_ref, 0);
  s.attrs[1] = (attr_t)FLOAT("constant_value", 1);
  check_op(&s, &SHAPE(3, 6), pad_ref, 1);
  s = (spec_t){.op = "Pad", .num_inputs = 1, .shape = {SHAPE(0, 2)},
               .attrs = {LIST("paddings", 1, 1, 0, 0),
                         FLOAT("constant_value", 1)}};
  check_op(&s, &SHAPE(2, 2), pad_ref, 1);
  s = (spec_t){.op = "Pad", .num_inputs = 1, .shape = {SHAPE(180, 190)},
               .attrs = {LIST("paddings", 3, 4, 0, 9),
                         FLOAT("constant_value", -2.5)}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT32, &SHAPE(187, 199), pad_ref, -2.5);
}

Test(ops_array, layout_refusals) {
  spec_t t = {.op = "Transpose", .name = "bad_perm", .num_inputs = 1,
              .shape = {SHAPE(2, 3, 4)}, .attrs = {LIST("perm", 0, 0, 1)}};
  EXPECT_REFUSED(t, "perm", "[0,0,1]");
  t.attrs[0] = (attr_t)LIST("perm", 1, 0);
  EXPECT_REFUSED(t, "perm", "[2,3,4]");
  t.attrs[0] = (attr_t)LIST("perm", 0, 1, 3);
  EXPECT_REFUSED(t, "permutation");

  spec_t s = {.op = "Slice", .name = "slice_oob", .num_inputs = 1,
              .shape = {SHAPE(3, 4)},
              .attrs = {LIST("begin", 1, 2), LIST("size", 2, 3)}};
  EXPECT_REFUSED(s, "[3,4]", "out of bounds");
  s.attrs[0] = (attr_t)LIST("begin", -1, 0);
  s.attrs[1] = (attr_t)LIST("size", 1, 1);
  EXPECT_REFUSED(s, "out of bounds");
  s.attrs[0] = (attr_t)LIST("begin", 4, 0);
  s.attrs[1] = (attr_t)LIST("size", -1, 1);
  EXPECT_REFUSED(s, "out of bounds");
  s.attrs[0] = (attr_t)LIST("begin", 0);
  EXPECT_REFUSED(s, "begin");
  /* Run time: the bounds were unknown when the graph was built. */
  weft_tensor* out[1];
  s.attrs[0] = (attr_t)LIST("begin", 1, 2);
  s.attrs[1] = (attr_t)LIST("size", 2, 3);
  s.placeholders = DIMS_UNKNOWN;
  WT_EXPECT_ERROR(try_run(&s, WEFT_BOOL, out), WEFT_INVALID_ARGUMENT,
                  "slice_oob", "out of bounds");

  spec_t m = {.op = "Tile", .name = "tile_bad", .num_inputs = 1,
              .shape = {SHAPE(3, 4)}, .attrs = {LIST("multiples", 2)}};
  EXPECT_REFUSED(m, "multiples");
  m.attrs[0] = (attr_t)LIST("multiples", 2, -1);
  EXPECT_REFUSED(m, "negative");

  spec_t p = {.op = "Pad", .name = "pad_bad", .num_inputs = 1,
              .shape = {SHAPE(3, 4)}, .attrs = {LIST("paddings", 1, 1, 1)}};
  EXPECT_REFUSED(p, "paddings", "[3,4]");
  p.attrs[0] = (attr_t)LIST("paddings", 1, 1, -1, 0);
  EXPECT_REFUSED(p, "negative");
  p.attrs[0] = (attr_t)LIST("paddings", 1, 1, 1, 0);
  p.attrs[1] = (attr_t)FLOAT("constant_value", 0.5);
  WT_EXPECT_ERROR(try_build(&p, WEFT_INT32), WEFT_INVALID_ARGUMENT, "pad_bad",
                  "constant_value", "int32");
}

/* ---- Concat, Split, Pack, Unpack ----------------------------------------- */

Test(ops_array, concat_every_dtype) {
  spec_t s = {.op = "Concat", .num_inputs = 3,
              .shape = {SHAPE(2, 3), SHAPE(2, 1), SHAPE(2, 0)},
              .attrs = {INT("axis", -1)}};
  check_op(&s, &SHAPE(2, 4), concat_ref, 0);
  s = (spec_t){.op = "Concat", .num_inputs = 2,
               .shape = {SHAPE(1, 2, 2), SHAPE(3, 2, 2)},
               .attrs = {INT("axis", 0)}};
  check_op(&s, &SHAPE(4, 2, 2), concat_ref, 0);
  s = (spec_t){.op = "Concat", .num_inputs = 1, .shape = {SHAPE(3)},
               .attrs = {INT("axis", 0)}};
  check_op(&s, &SHAPE(3), concat_ref, 0);
  s = (spec_t){.op = "Concat", .num_inputs = 2,
               .shape = {SHAPE(400, 50), SHAPE(400, 70)},
               .attrs = {INT("axis", 1)}, .threads = 2};
  check_op_dtype(&s, WEFT_INT64, &SHAPE(400, 120), concat_ref, 0);
  s.placeholders = DIMS_UNKNOWN;
  expect_inferred(&s, 0, WT_SHAPE(-1, -1));
}

Test(ops_array, split_and_unpack_every_dtype) {
  spec_t s = {.op = "Split", .num_inputs = 1, .shape = {SHAPE(2, 6)},
              .attrs = {INT("axis", -1), INT("num_split", 3)},
              .num_outputs = 3};
  shape_t pieces[3] = {SHAPE(2, 2), SHAPE(2, 2), SHAPE(2, 2)};
  check_op(&s, pieces, split_ref, 0);
  s.attrs[0].i = 0;
  s.attrs[1].i = 2;
  s.num_outputs = 2;
  pieces[0] = pieces[1] = SHAPE(1, 6);
  check_op(&s, pieces, split_ref, 0);
  s = (spec_t){.op = "Split", .num_inputs = 1, .shape = {SHAPE(0, 4)},
               .attrs = {INT("axis", 1), INT("num_split", 2)},
               .num_outputs = 2};
  pieces[0] = pieces[1] = SHAPE(0, 2);
  check_op(&s, pieces, split_ref, 0);

  spec_t u = {.op = "Unpack", .num_inputs = 1, .shape = {SHAPE(2, 3, 2)},
              .attrs = {INT("axis", 1)}, .num_outputs = 3};
  pieces[0] = pieces[1] = pieces[2] = SHAPE(2, 2);
  check_op(&u, pieces, unpack_ref, 0);
  u.attrs[0].i = -1;
  u.attrs[1] = (attr_t)INT("num", 2);
  u.num_outputs = 2;
  pieces[0] = pieces[1] = SHAPE(2, 3);
  check_op(&u, pieces, unpack_ref, 0);
  u = (spec_t){.op = "Unpack", .num_inputs = 1, .shape = {SHAPE(2, 0)},
               .num_outputs = 2};
  pieces[0] = pieces[1] = SHAPE(0);
  check_op(&u, pieces, unpack_ref, 0);
}

Test(ops_array, pack_every_dtype) {
  spec_t s = {.op = "Pack", .num_inputs = 3,
              .shape = {SHAPE(2, 3), SHAPE(2, 3), SHAPE(2, 3)}};
  check_op(&s, &SHAPE(3, 2, 3), pack_ref, 0);
  s.attrs[0] = (attr_t)INT("axis", 1);
  check_op(&s, &SHAPE(2, 3, 3), pack_ref, 0);
  s.attrs[0] = (attr_t)INT("axis", -1);
  check_op(&s, &SHAPE(2, 3, 3), pack_ref, 0);
  s = (spec_t){.op = "Pack", .num_inputs = 2, .shape = {SCALAR, SCALAR}};
  check_op(&s, &SHAPE(2), pack_ref, 0);
  s = (spec_t){.op = "Pack", .num_inputs = 2, .shape = {SHAPE(0), SHAPE(0)},
               .attrs = {INT("axis", 1)}};
  check_op(&s, &SHAPE(0, 2), pack_ref, 0);
}

Test(ops_array, join_refusals) {
  spec_t c = {.op = "Concat", .name = "concat_ranks", .num_inputs = 2,
              .shape = {SHAPE(2, 3), SHAPE(2, 3, 1)},
              .attrs = {INT("axis", 0)}};
  EXPECT_REFUSED(c, "[2,3]", "[2,3,1]");
  c.name = "concat_dims";
  c.shape[1] = SHAPE(3, 4);
  EXPECT_REFUSED(c, "[2,3]", "[3,4]");
  c.name = "concat_axis";
  c.shape[1] = SHAPE(2, 3);
  c.attrs[0].i = 2;
  EXPECT_REFUSED(c, "axis");
  c.name = "concat_scalars";
  c.shape[0] = c.shape[1] = SCALAR;
  c.attrs[0].i = 0;
  EXPECT_REFUSED(c, "scalar");
  c.name = "concat_no_axis";
  c.shape[0] = c.shape[1] = SHAPE(2);
  c.attrs[0].name = NULL;
  EXPECT_REFUSED(c, "axis");
  /* Mixed dtypes: a Cast stands between the placeholders. */
  weft_graph* g = wt_graph_new();
  weft_output in[2] = {wt_placeholder(g, "a", WEFT_FLOAT32, WT_SHAPE(2)),
                       wt_placeholder(g, "b", WEFT_INT32, WT_SHAPE(2))};
  weft_op_builder* b = weft_op_begin(g, "Concat", "concat_dtypes");
  weft_op_add_input_list(b, in, 2);
  weft_op_set_attr_int(b, "axis", 0);
  WT_EXPECT_ERROR(weft_op_finish(b, NULL), WEFT_INVALID_ARGUMENT,
                  "concat_dtypes", "Concat", "int32", "float32");
  weft_graph_destroy(g);
  /* Run time: dims unknown to the graph disagree. */
  weft_tensor* out[2];
  c = (spec_t){.op = "Concat", .name = "concat_late", .num_inputs = 2,
               .shape = {SHAPE(2, 3), SHAPE(3, 3)},
               .placeholders = DIMS_UNKNOWN, .attrs = {INT("axis", 1)}};
  WT_EXPECT_ERROR(try_run(&c, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "concat_late", "[3,3]");

  spec_t s = {.op = "Split", .name = "split_uneven", .num_inputs = 1,
              .shape = {SHAPE(2, 5)},
              .attrs = {INT("axis", 1), INT("num_split", 2)}};
  EXPECT_REFUSED(s, "num_split", "[2,5]");
  s.attrs[1].i = 0;
  EXPECT_REFUSED(s, "num_split");
  s.placeholders = RANK_UNKNOWN;
  s.attrs[1].i = 2;
  s.num_outputs = 2;
  WT_EXPECT_ERROR(try_run(&s, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "split_uneven", "[2,5]");

  spec_t p = {.op = "Pack", .name = "pack_shapes", .num_inputs = 2,
              .shape = {SHAPE(2, 3), SHAPE(3, 2)}};
  EXPECT_REFUSED(p, "[2,3]", "[3,2]");
  p.shape[1] = SHAPE(2, 3);
  p.attrs[0] = (attr_t)INT("axis", 3);
  EXPECT_REFUSED(p, "axis");

  spec_t u = {.op = "Unpack", .name = "unpack_num", .num_inputs = 1,
              .shape = {SHAPE(2, 3)}, .attrs = {INT("num", 3)}};
  EXPECT_REFUSED(u, "num", "[2,3]");
  u.shape[0] = SCALAR;
  u.attrs[0].name = NULL;
  EXPECT_REFUSED(u, "scalar");
  u.shape[0] = SHAPE(2, 3);
  u.placeholders = DIMS_UNKNOWN;
  EXPECT_REFUSED(u, "num");
}

/* ---- Fill, ZerosLike, OnesLike ------------------------------------------- */

Test(ops_array, fill_and_constant_likes_every_dtype) {
  spec_t f = {.op = "Fill", .num_inputs = 1, .shape = {SCALAR},
              .attrs = {LIST("shape", 2, 3)}};
  check_op(&f, &SHAPE(2, 3), first_element, 0);
  f.attrs[0] = (attr_t)LIST("shape", 200, 300);
  f.threads = 2;
  check_op_dtype(&f, WEFT_INT64, &SHAPE(200, 300), first_element, 0);
  f.attrs[0] = (attr_t)LIST("shape", 4, 0);
  check_op(&f, &SHAPE(4, 0), first_element, 0);
  f.attrs[0] = (attr_t)EMPTY_LIST("shape");
  check_op(&f, &SCALAR, first_element, 0);

  spec_t z = {.op = "ZerosLike", .num_inputs = 1, .shape = {SHAPE(3, 2)}};
  check_op(&z, &SHAPE(3, 2), constant, 0);
  z.op = "OnesLike";
  check_op(&z, &SHAPE(3, 2), constant, 1);
  z.shape[0] = SHAPE(0, 7);
  check_op(&z, &SHAPE(0, 7), constant, 1);

  spec_t bad = {.op = "Fill", .name = "fill_vector", .num_inputs = 1,
                .shape = {SHAPE(2)}, .attrs = {LIST("shape", 2)}};
  EXPECT_REFUSED(bad, "scalar", "[2]");
  bad.name = "fill_unknown";
  bad.shape[0] = SCALAR;
  bad.attrs[0] = (attr_t)LIST("shape", 2, -1);
  EXPECT_REFUSED(bad, "shape", "[2,?]");
}

/* ---- Gather, OneHot ------------------------------------------------------ */

Test(ops_array, gather_every_dtype) {
  const int32_t idx32[4] = {2, 0, 2, 1};
  const int64_t idx64[6] = {1, 1, 0, 3, 2, 0};
  spec_t s = {.op = "Gather", .num_inputs = 2,
              .shape = {SHAPE(3, 2), SHAPE(4)}, .fixed = {0, WEFT_INT32},
              .data = {NULL, idx32}};
  check_op(&s, &SHAPE(4, 2), gather_ref, 0);
  s = (spec_t){.op = "Gather", .num_inputs = 2,
               .shape = {SHAPE(2, 4, 3), SHAPE(2, 3)},
               .fixed = {0, WEFT_INT64}, .data = {NULL, idx64},
               .attrs = {INT("axis", -2)}};
  check_op(&s, &SHAPE(2, 2, 3, 3), gather_ref, 0);
  s.attrs[0].i = 2;
  s.shape[0] = SHAPE(2, 2, 4);
  check_op(&s, &SHAPE(2, 2, 2, 3), gather_ref, 0);
  s.shape[1] = SHAPE(0);
  check_op(&s, &SHAPE(2, 2, 0), gather_ref, 0);
  /* Scalar indices drop the axis. */
  s = (spec_t){.op = "Gather", .num_inputs = 2, .shape = {SHAPE(3, 2), SCALAR},
               .fixed = {0, WEFT_INT32}, .data = {NULL, idx32}};
  check_op(&s, &SHAPE(2), gather_ref, 0);
  /* Many rows, in parallel. */
  static int32_t many[40000];
  for (int i = 0; i < 40000; ++i) many[i] = (i * 7919) % 50;
  s = (spec_t){.op = "Gather", .num_inputs = 2,
               .shape = {SHAPE(50, 3), SHAPE(40000)},
               .fixed = {0, WEFT_INT32}, .data = {NULL, many}, .threads = 2};
  check_op_dtype(&s, WEFT_FLOAT32, &SHAPE(40000, 3), gather_ref, 0);
  s.shape[0] = SHAPE(50);
  check_op_dtype(&s, WEFT_UINT8, &SHAPE(40000), gather_ref, 0);
}

Test(ops_array, gather_errors) {
  const int32_t bad32[3] = {0, 3, 1};
  const int64_t bad64[2] = {-1, 0};
  weft_tensor* out[1];
  spec_t s = {.op = "Gather", .name = "gather_oob", .num_inputs = 2,
              .shape = {SHAPE(3, 2), SHAPE(3)}, .fixed = {0, WEFT_INT32},
              .data = {NULL, bad32}};
  WT_EXPECT_ERROR(try_run(&s, WEFT_FLOAT32, out), WEFT_INVALID_ARGUMENT,
                  "gather_oob", "indices[1] = 3");
  s.fixed[1] = WEFT_INT64;
  s.data[1] = bad64;
  s.shape[1] = SHAPE(2);
  WT_EXPECT_ERROR(try_run(&s, WEFT_BOOL, out), WEFT_INVALID_ARGUMENT,
                  "gather_oob", "indices[0] = -1");
  s.attrs[0] = (attr_t)INT("axis", 2);
  EXPECT_REFUSED(s, "axis", "[3,2]");
  s.attrs[0].name = NULL;
  s.fixed[1] = WEFT_FLOAT32;
  EXPECT_REFUSED(s, "indices", "float32");
  s.fixed[1] = WEFT_INT32;
  s.shape[0] = SCALAR;
  EXPECT_REFUSED(s, "params");
}

/* OneHot's reference: out[...] along the new axis is on where it equals the
 * index, computed over the indices' coordinates. */
static void check_one_hot(const int64_t* idx, shape_t ishape, int64_t depth,
                          int64_t axis, weft_dtype dtype, double on,
                          double off, weft_dtype index_dtype) {
  int32_t idx32[64];
  for (int64_t i = 0; i < count_of(&ishape); ++i) idx32[i] = (int32_t)idx[i];
  spec_t s = {.op = "OneHot", .num_inputs = 1, .shape = {ishape},
              .fixed = {index_dtype},
              .data = {index_dtype == WEFT_INT32 ? (const void*)idx32 : idx},
              .attrs = {INT("depth", depth), INT("axis", axis),
                        DTYPE("dtype", dtype), FLOAT("on_value", on),
                        FLOAT("off_value", off)}};
  weft_tensor* out[1];
  WT_OK(try_run(&s, WEFT_FLOAT32, out));
  int64_t a = axis < 0 ? axis + ishape.rank + 1 : axis;
  shape_t want = {ishape.rank + 1, {0}};
  for (int32_t i = 0, k = 0; i < want.rank; ++i)
    want.dims[i] = i == a ? depth : ishape.dims[k++];
  wt_expect_shape(out[0], dtype, want.dims, want.rank);
  size_t es = wt_dtype_bytes(dtype);
  for (int64_t k = 0; k < count_of(&want); ++k) {
    int64_t c[8], ic[8];
    unflatten(k, &want, c);
    for (int32_t i = 0, j = 0; i < want.rank; ++i)
      if (i != a) ic[j++] = c[i];
    unsigned char expected[8];
    constant_value(dtype, idx[flatten(ic, &ishape)] == c[a] ? on : off,
                   expected);
    cr_expect(memcmp((const char*)weft_tensor_data(out[0]) + k * es, expected,
                     es) == 0, "OneHot %s element %lld", weft_dtype_name(dtype),
              (long long)k);
  }
  weft_tensor_destroy(out[0]);
}

Test(ops_array, one_hot) {
  const int64_t idx[6] = {0, 2, -1, 1, 3, 2};
  check_one_hot(idx, SHAPE(6), 3, -1, WEFT_FLOAT32, 1, 0, WEFT_INT32);
  check_one_hot(idx, SHAPE(2, 3), 4, 0, WEFT_FLOAT64, 5, -1, WEFT_INT64);
  check_one_hot(idx, SHAPE(2, 3), 3, 1, WEFT_INT32, 7, -7, WEFT_INT32);
  check_one_hot(idx, SHAPE(3, 2), 3, -1, WEFT_INT64, 1, 0, WEFT_INT64);
  check_one_hot(idx, SHAPE(6), 4, 0, WEFT_UINT8, 255, 3, WEFT_INT32);
  check_one_hot(idx, SHAPE(6), 3, -1, WEFT_BOOL, 1, 0, WEFT_INT64);
  check_one_hot(idx, SHAPE(6), 0, -1, WEFT_FLOAT32, 1, 0, WEFT_INT32);
  check_one_hot(idx, SHAPE(0), 5, -1, WEFT_FLOAT32, 1, 0, WEFT_INT32);
  check_one_hot(idx, SCALAR, 3, -1, WEFT_FLOAT32, 1, 0, WEFT_INT64);

  spec_t s = {.op = "OneHot", .name = "one_hot_bad", .num_inputs = 1,
              .shape = {SHAPE(3)}, .fixed = {WEFT_INT32}, .data = {idx},
              .attrs = {INT("depth", -1)}};
  EXPECT_REFUSED(s, "depth");
  s.attrs[0].i = 3;
  s.attrs[1] = (attr_t)INT("axis", 2);
  EXPECT_REFUSED(s, "axis", "[3]");
  s.attrs[1] = (attr_t)DTYPE("dtype", WEFT_UINT8);
  s.attrs[2] = (attr_t)FLOAT("on_value", 256);
  EXPECT_REFUSED(s, "on_value", "uint8");
  s.attrs[2].name = NULL;
  s.fixed[0] = WEFT_FLOAT32;
  EXPECT_REFUSED(s, "indices", "float32");
  s.attrs[0].name = NULL;
  s.fixed[0] = WEFT_INT32;
  EXPECT_REFUSED(s, "depth");
}
