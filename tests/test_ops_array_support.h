/* The harness of test_ops_array.c: builds one op over placeholders for a
 * dtype, runs it on the CPU, and checks each output element against the
 * input element an index map names.  The index maps below are the tests'
 * own account of what each op does; nothing here calls the code under test
 * except through the public API.  Included by test_ops_array.c only. */
#ifndef WEFT_TEST_OPS_ARRAY_SUPPORT_H_
#define WEFT_TEST_OPS_ARRAY_SUPPORT_H_

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
      if (dtype == WEFT_FLOAT16 &&
          weft_output_dtype(fetches[o]) == WEFT_FLOAT16)
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

/* Views share the input's memory: the fetched output of a Reshape points
 * into the fed tensor, as Identity's does. */
static const void* fetched_data(const char* op, const attr_t* attr,
                                weft_tensor* fed, weft_tensor** keep) {
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT32, WT_SHAPE(1, 6));
  weft_op_builder* b = weft_op_begin(g, op, NULL);
  weft_op_add_input(b, x);
  if (attr && attr->kind == ATTR_INT)
    weft_op_set_attr_int(b, attr->name, attr->i);
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

#endif /* WEFT_TEST_OPS_ARRAY_SUPPORT_H_ */
