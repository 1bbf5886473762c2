/* Gradients of the array ops against central differences (grad_check.h),
 * with dims unknown when the graph is built, and registering a gradient
 * function of one's own. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "grad_check.h"
#include "test_support.h"

#define F64(dims_, vals_) \
  { WEFT_FLOAT64, dims_, (int32_t)(sizeof dims_ / sizeof dims_[0]), vals_, 0 }

static void fill(double* out, int n, uint64_t seed) {
  wt_rng rng = {seed};
  for (int i = 0; i < n; ++i) out[i] = wt_rng_uniform(&rng, -2, 2);
}

/* One op over the inputs with one int-list attribute (and an int one). */
typedef struct op_spec {
  const char* op;
  const char* list_name;
  int64_t list[8];
  int32_t list_count;
  const char* int_name;
  int64_t int_value;
} op_spec;

#define LIST(op_, name_, n_, ...) \
  ((op_spec){                     \
      .op = op_, .list_name = name_, .list = {__VA_ARGS__}, .list_count = n_})
#define INT_ATTR(op_, name_, v_) \
  ((op_spec){.op = op_, .int_name = name_, .int_value = v_})
#define PLAIN(op_) ((op_spec){.op = op_})

static weft_output apply_spec(weft_graph* graph, const weft_output* xs,
                              int32_t n, void* arg) {
  const op_spec* s = arg;
  weft_op_builder* b = weft_op_begin(graph, s->op, "op");
  if (strcmp(s->op, "Concat") == 0 || strcmp(s->op, "Pack") == 0) {
    weft_op_add_input_list(b, xs, n);
  } else {
    for (int32_t i = 0; i < n; ++i) weft_op_add_input(b, xs[i]);
  }
  if (s->list_name != NULL)
    weft_op_set_attr_int_list(b, s->list_name, s->list, s->list_count);
  if (s->int_name != NULL) weft_op_set_attr_int(b, s->int_name, s->int_value);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

/* One input of dims `d`, unknown dims `unknown`. */
static void check1(const char* what, op_spec spec, const int64_t* d,
                   int32_t rank, uint32_t unknown) {
  double v[64];
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= d[i];
  cr_assert(n <= 64);
  fill(v, (int)n, 5);
  gc_input x = {WEFT_FLOAT64, d, rank, v, unknown};
  gc_check_f64(what, apply_spec, &spec, &x, 1, 0);
}

Test(gradients_array, reshape_expand_squeeze) {
  check1("Reshape", LIST("Reshape", "shape", 2, 3, 2), WT_SHAPE(2, 3), 0);
  check1("Reshape, batch unknown", LIST("Reshape", "shape", 1, -1),
         WT_SHAPE(4, 3), 1u);
  /* Two unknown dims: the gradient cannot be a Reshape (ReshapeLike). */
  check1("Reshape, two dims unknown", LIST("Reshape", "shape", 1, -1),
         WT_SHAPE(2, 3), 3u);
  check1("ExpandDims", INT_ATTR("ExpandDims", "axis", 1), WT_SHAPE(2, 3), 1u);
  check1("Squeeze", PLAIN("Squeeze"), WT_SHAPE(2, 1, 3), 0);
}

Test(gradients_array, transpose) {
  check1("Transpose", LIST("Transpose", "perm", 3, 1, 2, 0), WT_SHAPE(2, 3, 4),
         1u);
}

/* Slice has two list attributes. */
static weft_output build_slice(weft_graph* graph, const weft_output* xs,
                               int32_t n, void* arg) {
  (void)n;
  const int64_t* bs = arg; /* begin[2], size[2] */
  weft_op_builder* b = weft_op_begin(graph, "Slice", "slice");
  weft_op_add_input(b, xs[0]);
  weft_op_set_attr_int_list(b, "begin", bs, 2);
  weft_op_set_attr_int_list(b, "size", bs + 2, 2);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

Test(gradients_array, slice_with_sizes) {
  static const int64_t d[] = {4, 5};
  double v[20];
  fill(v, 20, 6);
  int64_t box[4] = {1, 2, 2, -1};
  gc_input x = F64(d, v);
  gc_check_f64("Slice [4,5] at [1,2] of [2,-1]", build_slice, box, &x, 1, 0);
  x.unknown_dims = 3u;
  gc_check_f64("Slice, dims unknown", build_slice, box, &x, 1, 0);
}

Test(gradients_array, tile_pad) {
  check1("Tile", LIST("Tile", "multiples", 3, 2, 1, 3), WT_SHAPE(2, 3, 1), 0);
  check1("Tile, batch unknown", LIST("Tile", "multiples", 2, 3, 2),
         WT_SHAPE(2, 3), 1u);
  check1("Pad", LIST("Pad", "paddings", 4, 1, 2, 0, 1), WT_SHAPE(2, 3), 0);
  check1("Pad, batch unknown", LIST("Pad", "paddings", 4, 2, 1, 1, 0),
         WT_SHAPE(2, 3), 3u);
}

Test(gradients_array, concat_pack) {
  static const int64_t a[] = {3, 2}, b[] = {3, 4}, c[] = {3, 1};
  /* vc has room for Pack's [3, 2] too (Concat reads its first 3). */
  double va[6], vb[12], vc[6];
  fill(va, 6, 1);
  fill(vb, 12, 2);
  fill(vc, 6, 3);
  gc_input in[3] = {F64(a, va), F64(b, vb), F64(c, vc)};
  op_spec concat = {.op = "Concat", .int_name = "axis", .int_value = -1};
  gc_check_f64("Concat axis -1", apply_spec, &concat, in, 3, 0);
  for (int i = 0; i < 3; ++i) in[i].unknown_dims = 1u;
  gc_check_f64("Concat axis -1, batch unknown", apply_spec, &concat, in, 3, 0);
  gc_input same[3] = {F64(a, va), F64(a, vb), F64(a, vc)};
  op_spec pack = {.op = "Pack", .int_name = "axis", .int_value = 1};
  gc_check_f64("Pack axis 1", apply_spec, &pack, same, 3, 0);
}

/* Split and Unpack, with an output left unused (its gradient is zeros). */
static weft_output build_pieces(weft_graph* graph, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  int unpack = arg != NULL;
  weft_op_builder* b = weft_op_begin(graph, unpack ? "Unpack" : "Split", "cut");
  weft_op_add_input(b, xs[0]);
  weft_op_set_attr_int(b, "axis", 1);
  if (!unpack) weft_op_set_attr_int(b, "num_split", 3);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  weft_output first = {node, 0}, last = {node, 2};
  weft_output sq = wt_apply2(graph, "Mul", "sq", last, last);
  return wt_apply2(graph, "Add", "y", first, sq);
}

Test(gradients_array, split_unpack) {
  static const int64_t d[] = {2, 6}, u[] = {2, 3};
  double v[12];
  fill(v, 12, 8);
  gc_input x = F64(d, v);
  gc_check_f64("Split into 3, piece 1 unused", build_pieces, NULL, &x, 1, 0);
  gc_input y = F64(u, v);
  y.unknown_dims = 1u;
  gc_check_f64("Unpack of 3, piece 1 unused", build_pieces, (void*)1, &y, 1, 0);
}

static weft_output build_gather(weft_graph* graph, const weft_output* xs,
                                int32_t n, void* arg) {
  (void)n;
  weft_output in[2] = {xs[0], xs[1]};
  weft_op_builder* b = weft_op_begin(graph, "Gather", "gather");
  weft_op_add_input(b, in[0]);
  weft_op_add_input(b, in[1]);
  weft_op_set_attr_int(b, "axis", *(const int64_t*)arg);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

Test(gradients_array, gather) {
  static const int64_t p[] = {4, 3}, i[] = {5}, i2[] = {2, 2};
  double pv[12];
  fill(pv, 12, 9);
  static const double idx[] = {2, 0, 2, 3, 2}; /* repeats add up */
  static const double idx2[] = {1, 1, 0, 2};
  int64_t axis0 = 0, axis1 = 1;
  gc_input in[2] = {F64(p, pv), {WEFT_INT32, i, 1, idx, 0}};
  gc_check_f64("Gather axis 0, repeated indices", build_gather, &axis0, in, 2,
               2u);
  in[0].unknown_dims = 1u;
  in[1].unknown_dims = 1u;
  gc_check_f64("Gather axis 0, dims unknown", build_gather, &axis0, in, 2, 2u);
  gc_input in2[2] = {F64(p, pv), {WEFT_INT64, i2, 2, idx2, 0}};
  gc_check_f64("Gather axis 1, int64 [2,2] indices", build_gather, &axis1, in2,
               2, 2u);
}

static weft_output build_fill(weft_graph* graph, const weft_output* xs,
                              int32_t n, void* arg) {
  (void)n;
  (void)arg;
  weft_op_builder* b = weft_op_begin(graph, "Fill", "fill");
  weft_op_add_input(b, xs[0]);
  weft_op_set_attr_int_list(b, "shape", (const int64_t[]){2, 3}, 2);
  weft_node* node = NULL;
  WT_OK(weft_op_finish(b, &node));
  return (weft_output){node, 0};
}

Test(gradients_array, fill) {
  static const int64_t s[1] = {0};
  static const double v[] = {0.75};
  gc_input x = {WEFT_FLOAT64, s, 0, v, 0};
  gc_check_f64("Fill [2,3]", build_fill, NULL, &x, 1, 0);
}

/* The gradient ops that have gradients of their own, in their `grad`
 * input (`like`, input 1, gives only a shape). */
Test(gradients_array, gradient_ops) {
  static const int64_t small[] = {2, 2}, big[] = {3, 4}, flat[] = {4};
  double a[12], b[12];
  fill(a, 12, 12);
  fill(b, 12, 13);
  op_spec slice_grad = {
      .op = "SliceGrad", .list_name = "begin", .list = {1, 2}, .list_count = 2};
  gc_input sg[2] = {F64(small, a), F64(big, b)};
  gc_check_f64("SliceGrad", apply_spec, &slice_grad, sg, 2, 2u);
  op_spec pad_grad = {
      .op = "PadGrad", .list_name = "begin", .list = {1, 1}, .list_count = 2};
  gc_input pg[2] = {F64(big, a), F64(small, b)};
  gc_check_f64("PadGrad", apply_spec, &pad_grad, pg, 2, 2u);
  op_spec reshape_like = {.op = "ReshapeLike"};
  gc_input rl[2] = {F64(small, a), F64(flat, b)};
  gc_check_f64("ReshapeLike", apply_spec, &reshape_like, rl, 2, 2u);
  cr_expect_eq(weft_op_gradient_status("SumToShapeOf"), 0);
  cr_expect_eq(weft_op_gradient_status("GatherGrad"), 0);
}

/* ---- registering a gradient ------------------------------------------------
 */

static weft_status* triple(void* arg, weft_gradient_context* ctx) {
  int* calls = arg;
  ++*calls;
  weft_graph* g = weft_gradient_graph(ctx);
  weft_output dy = weft_gradient_output_grad(ctx, 0);
  double three = 3;
  weft_tensor* t = NULL;
  weft_status* s =
      weft_tensor_create_copy(WEFT_FLOAT64, NULL, 0, &three, sizeof three, &t);
  if (s != NULL) return s;
  weft_output c = {NULL, 0};
  s = weft_graph_constant(g, "my_three", t, &c);
  weft_tensor_destroy(t);
  if (s != NULL) return s;
  weft_output in[2] = {dy, c};
  weft_output out = {NULL, 0};
  s = weft_graph_apply(g, "Mul", "my_grad", in, 2, &out);
  if (s != NULL) return s;
  cr_expect(weft_gradient_input_wanted(ctx, 0));
  return weft_gradient_set_input_grad(ctx, 0, out);
}

static weft_status* negate(void* arg, weft_gradient_context* ctx) {
  (void)arg;
  weft_output dy = weft_gradient_output_grad(ctx, 0);
  weft_output out = {NULL, 0};
  weft_status* s = weft_graph_apply(weft_gradient_graph(ctx), "Neg", "neg_grad",
                                    &dy, 1, &out);
  if (s != NULL) return s;
  return weft_gradient_set_input_grad(ctx, 0, out);
}

/* Neg, which no other test of this program differentiates; the library's
 * gradient (-dy) is put back at the end. */
Test(gradients_array, registered_gradient_is_used) {
  WT_EXPECT_ERROR(weft_gradient_register("NoSuchOp", triple, NULL),
                  WEFT_INVALID_ARGUMENT, "NoSuchOp");
  int calls = 0;
  WT_OK(weft_gradient_register("Neg", triple, &calls));
  cr_expect_eq(weft_op_gradient_status("Neg"), 1);
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, WT_SHAPE(2));
  weft_output y = wt_apply1(g, "Neg", "y", x);
  weft_output grad = {NULL, 0};
  WT_OK(weft_gradients(g, &y, 1, &x, 1, NULL, &grad));
  cr_expect_eq(calls, 1);
  weft_session* s = wt_session_new(g, "/device:CPU:0");
  weft_tensor* v = wt_tensor(WEFT_FLOAT64, WT_SHAPE(2), (double[]){1, 2});
  weft_tensor* r = wt_run1(s, &x, &v, 1, grad);
  const double* got = weft_tensor_data(r);
  cr_expect(got[0] == 3 && got[1] == 3, "gradient %g %g, expected 3 3", got[0],
            got[1]);
  weft_tensor_destroy(r);
  weft_tensor_destroy(v);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  WT_OK(weft_gradient_register("Neg", negate, NULL));
}

/* A gradient function that sets input 0's gradient to zeros of the dtype
 * and shape it is given, as a buggy or hostile one might. */
typedef struct fixed_gradient {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[2];
  int32_t output_index;  /* of the constant: 0, or out of range */
  int ignore_refusal;    /* return OK even when the gradient is refused */
} fixed_gradient;

static weft_status* set_fixed(void* arg, weft_gradient_context* ctx) {
  const fixed_gradient* f = arg;
  weft_tensor* zeros = NULL;
  weft_status* s = weft_tensor_create(f->dtype, f->dims, f->rank, &zeros);
  if (s != NULL) return s;
  weft_output c = {NULL, 0};
  s = weft_graph_constant(weft_gradient_graph(ctx), "fixed_grad", zeros, &c);
  weft_tensor_destroy(zeros);
  if (s != NULL) return s;
  c.index = f->output_index;
  s = weft_gradient_set_input_grad(ctx, 0, c);
  if (s != NULL && f->ignore_refusal) {
    weft_status_destroy(s);
    return NULL;
  }
  return s;
}

/* d(Neg)/dx through `f` for x of float64 `x_dims`; the library's gradient
 * is put back afterwards. */
static weft_status* gradient_through(fixed_gradient* f, const int64_t* x_dims,
                                     int32_t x_rank) {
  WT_OK(weft_gradient_register("Neg", set_fixed, f));
  weft_graph* g = wt_graph_new();
  weft_output x = wt_placeholder(g, "x", WEFT_FLOAT64, x_dims, x_rank);
  weft_output y = wt_apply1(g, "Neg", "y", x);
  weft_output grad = {NULL, 0};
  weft_status* s = weft_gradients(g, &y, 1, &x, 1, NULL, &grad);
  if (s != NULL) cr_expect_null(grad.node, "a failed call left a gradient");
  weft_graph_destroy(g);
  WT_OK(weft_gradient_register("Neg", negate, NULL));
  return s;
}

/* A gradient of another shape than its input would silently train wrong
 * (or fail at run time far from its cause). */
Test(gradients_array, registered_gradient_of_the_wrong_shape_is_refused) {
  fixed_gradient f = {WEFT_FLOAT64, 1, {3}, 0, 0};
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "Neg", "'y'", "input 0", "[3]", "[2]");
  f = (fixed_gradient){WEFT_FLOAT64, 2, {2, 1}, 0, 0};
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "Neg", "'y'", "input 0", "[2,1]", "[2]");
  f = (fixed_gradient){WEFT_FLOAT64, 2, {5, 4}, 0, 0};
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(-1, 3)),
                  WEFT_INVALID_ARGUMENT, "input 0", "[5,4]", "[?,3]");
  /* A function that ignores the refusal still fails the call. */
  f = (fixed_gradient){WEFT_FLOAT64, 1, {3}, 0, 1};
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "Neg", "'y'", "input 0", "[3]", "[2]");
}

Test(gradients_array, registered_gradient_of_the_wrong_dtype_is_refused) {
  fixed_gradient f = {WEFT_FLOAT32, 1, {2}, 0, 0};
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "Neg", "'y'", "input 0", "float32", "float64");
  f.ignore_refusal = 1;
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "Neg", "'y'", "input 0", "float32", "float64");
}

/* An output index the gradient's node does not have. */
Test(gradients_array, registered_gradient_naming_a_missing_output_is_refused) {
  fixed_gradient f = {WEFT_FLOAT64, 1, {2}, 7, 0};
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "input 0", "output 7");
  f.output_index = -1;
  WT_EXPECT_ERROR(gradient_through(&f, WT_SHAPE(2)), WEFT_INVALID_ARGUMENT,
                  "input 0", "output -1");
}

/* Unknown dims are compatible with any. */
Test(gradients_array, registered_gradient_with_compatible_shape_is_accepted) {
  fixed_gradient f = {WEFT_FLOAT64, 2, {5, 3}, 0, 0};
  WT_OK(gradient_through(&f, WT_SHAPE(-1, 3)));
}
