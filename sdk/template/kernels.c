/* Kernels: Add, Sub, Mul, Div, Relu and Identity.
 *
 * Every kernel follows the same three steps, the ones a vendor keeps:
 *  1. check the inputs and allocate the outputs, on the calling thread,
 *     returning a status for anything wrong (the host adds the node's name
 *     when the message lacks it);
 *  2. copy into a work item whatever the computation needs: the kernel
 *     context, the dims and the host's strings live only during this call;
 *  3. queue the item on host->kernel_stream(ctx) and return.  Errors found
 *     while computing (integer division by zero) belong to the item, and
 *     reach the user through stream or event synchronization, named after
 *     the node like any other error.
 * Step 3 is the place for a vendor's launch call; steps 1 and 2 carry over
 * unchanged.
 */
#include "template.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "node 'name' (Op on TEMPLATE): detail", so that the user finds the
 * culprit in a large graph. */
static weft_status* node_error(const weft_kernel_context* ctx, int32_t code,
                               const char* format, ...) TPL_PRINTF(3, 4);
static weft_status* node_error(const weft_kernel_context* ctx, int32_t code,
                               const char* format, ...) {
  char detail[320];
  va_list args;
  va_start(args, format);
  vsnprintf(detail, sizeof detail, format, args);
  va_end(args);
  return tpl_status(code, "node '%s' (%s on TEMPLATE): %s",
                    tpl_host->kernel_node_name(ctx), tpl_host->kernel_op(ctx),
                    detail);
}

static void format_shape(const weft_kernel_tensor* t, char* out, size_t size) {
  size_t used = (size_t)snprintf(out, size, "[");
  for (int32_t i = 0; i < t->rank && used < size; ++i)
    used += (size_t)snprintf(out + used, size - used, i ? ",%lld" : "%lld",
                             (long long)t->dims[i]);
  if (used < size) snprintf(out + used, size - used, "]");
}

static weft_status* read_input(const weft_kernel_context* ctx, int32_t index,
                               weft_kernel_tensor* out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  return tpl_host->kernel_input(ctx, index, out);
}

/* The buffer behind a kernel tensor; an error when the host handed over
 * something that is not this device's memory. */
static tpl_buffer* tensor_buffer(const weft_kernel_tensor* t, const char* role,
                                 weft_status** out_error) {
  return tpl_buffer_resolve(t->data, t->offset, t->byte_size, role, out_error);
}

/* ---- Add, Sub, Mul, Div ------------------------------------------------- */

typedef enum binary_op { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_DIV }
    binary_op;

static const char* const binary_op_names[] = {"Add", "Sub", "Mul", "Div"};

/* Which operand, if any, is one element repeated across the output. */
typedef enum operand_layout { LAYOUT_SAME, LAYOUT_REPEAT_X, LAYOUT_REPEAT_Y }
    operand_layout;

typedef struct binary_work {
  tpl_work base; /* buffers: x, y, z */
  binary_op op;
  int32_t dtype;
  operand_layout layout;
  int64_t count; /* output elements */
  uint64_t x_offset, y_offset, z_offset;
  char node[]; /* the node's name, for errors found while running */
} binary_work;

static float apply_float(binary_op op, float a, float b) {
  switch (op) {
    case BINARY_ADD: return a + b;
#ifdef TPL_PLANTED_BUG
    /* The planted bug of weft-template-planted (sdk/template/meson.build):
     * float32 Sub off by 1e-3, which `weft conformance` must catch. */
    case BINARY_SUB: return a - b + 1e-3f;
#else
    case BINARY_SUB: return a - b;
#endif
    case BINARY_MUL: return a * b;
    case BINARY_DIV: return a / b;
  }
  return 0;
}

/* Wraps in two's complement as the op conventions ask: signed overflow is
 * undefined in C, unsigned arithmetic is not. */
static int32_t apply_int(binary_op op, int32_t a, int32_t b) {
  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
  switch (op) {
    case BINARY_ADD: return (int32_t)(ua + ub);
    case BINARY_SUB: return (int32_t)(ua - ub);
    case BINARY_MUL: return (int32_t)(ua * ub);
    case BINARY_DIV:
      /* INT32_MIN / -1 overflows; negating in unsigned wraps to MIN. */
      return b == -1 ? (int32_t)(0u - ua) : a / b;
  }
  return 0;
}

static void run_binary(tpl_work* self, tpl_error* error) {
  binary_work* work = (binary_work*)self;
  const unsigned char* xb = work->base.buffers[0]->bytes + work->x_offset;
  const unsigned char* yb = work->base.buffers[1]->bytes + work->y_offset;
  unsigned char* zb = work->base.buffers[2]->bytes + work->z_offset;
  const int64_t xs = work->layout == LAYOUT_REPEAT_X ? 0 : 1;
  const int64_t ys = work->layout == LAYOUT_REPEAT_Y ? 0 : 1;
  const int64_t n = work->count;
  if (work->dtype == WEFT_FLOAT32) {
    const float* x = (const float*)xb;
    const float* y = (const float*)yb;
    float* z = (float*)zb;
    for (int64_t i = 0; i < n; ++i)
      z[i] = apply_float(work->op, x[i * xs], y[i * ys]);
    return;
  }
  const int32_t* x = (const int32_t*)xb;
  const int32_t* y = (const int32_t*)yb;
  int32_t* z = (int32_t*)zb;
  if (work->op == BINARY_DIV) {
    /* Found here, on the worker, long after the kernel call returned: the
     * error can only travel on the stream.  Checked before writing so that
     * a failed node leaves no half-written output. */
    int64_t y_count = ys ? n : 1;
    for (int64_t i = 0; i < y_count; ++i) {
      if (y[i] == 0) {
        tpl_error_set(error, WEFT_INVALID_ARGUMENT,
                      "node '%s' (Div on TEMPLATE): integer division by zero "
                      "(int32, divisor element %lld)", work->node,
                      (long long)i);
        return;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i)
    z[i] = apply_int(work->op, x[i * xs], y[i * ys]);
}

/* The NumPy-broadcast shape of x and y; INVALID_ARGUMENT when they do not
 * broadcast (the host's shape inference should have refused them). */
static weft_status* broadcast_shape(const weft_kernel_context* ctx,
                                    const weft_kernel_tensor* x,
                                    const weft_kernel_tensor* y,
                                    int64_t* dims, int32_t* rank) {
  int32_t r = x->rank > y->rank ? x->rank : y->rank;
  if (r > WEFT_MAX_RANK)
    return node_error(ctx, WEFT_INVALID_ARGUMENT, "rank %d is above %d", r,
                      WEFT_MAX_RANK);
  for (int32_t i = 0; i < r; ++i) {
    int32_t xi = i - (r - x->rank), yi = i - (r - y->rank);
    int64_t a = xi >= 0 ? x->dims[xi] : 1;
    int64_t b = yi >= 0 ? y->dims[yi] : 1;
    if (a != b && a != 1 && b != 1) {
      char xs[128], ys[128];
      format_shape(x, xs, sizeof xs);
      format_shape(y, ys, sizeof ys);
      return node_error(ctx, WEFT_INVALID_ARGUMENT,
                        "shapes %s and %s do not broadcast", xs, ys);
    }
    dims[i] = a == 1 ? b : a;
  }
  *rank = r;
  return NULL;
}

static weft_status* binary_compute(void* kernel_arg, weft_kernel_context* ctx) {
  binary_op op = (binary_op)(uintptr_t)kernel_arg;
  weft_kernel_tensor x, y, z;
  weft_status* status;
  if ((status = read_input(ctx, 0, &x)) || (status = read_input(ctx, 1, &y)))
    return status;
  if (x.dtype != y.dtype)
    return node_error(ctx, WEFT_INVALID_ARGUMENT, "x is %s but y is %s",
                      tpl_dtype_name(x.dtype), tpl_dtype_name(y.dtype));
  if (x.dtype != WEFT_FLOAT32 && x.dtype != WEFT_INT32)
    return node_error(ctx, WEFT_UNIMPLEMENTED,
                      "the template plugin has no %s kernel for %s",
                      binary_op_names[op], tpl_dtype_name(x.dtype));

  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = 0;
  if ((status = broadcast_shape(ctx, &x, &y, dims, &rank))) return status;
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) count *= dims[i];

  /* Same shape, or one element against anything, covers the usual cases
   * (bias added to itself, scaling by a constant).  General broadcasting
   * is a stride walk, left for the vendor. */
  operand_layout layout;
  if (count == 0 || (x.element_count == count && y.element_count == count)) {
    layout = LAYOUT_SAME;
  } else if (y.element_count == 1 && x.element_count == count) {
    layout = LAYOUT_REPEAT_Y;
  } else if (x.element_count == 1 && y.element_count == count) {
    layout = LAYOUT_REPEAT_X;
  } else {
    char xs[128], ys[128];
    format_shape(&x, xs, sizeof xs);
    format_shape(&y, ys, sizeof ys);
    return node_error(ctx, WEFT_UNIMPLEMENTED,
                      "general broadcasting is not implemented by the "
                      "template plugin (it takes equal shapes, or one "
                      "element against any shape); got %s and %s", xs, ys);
  }

  memset(&z, 0, sizeof z);
  z.struct_size = sizeof z;
  if ((status = tpl_host->kernel_allocate_output(ctx, 0, x.dtype, dims, rank,
                                                 &z)))
    return status;
  if (count == 0) return NULL;

  tpl_buffer *xb, *yb, *zb;
  if (!(xb = tensor_buffer(&x, "kernel input x", &status)) ||
      !(yb = tensor_buffer(&y, "kernel input y", &status)) ||
      !(zb = tensor_buffer(&z, "kernel output", &status)))
    return status;

  const char* node = tpl_host->kernel_node_name(ctx);
  size_t node_bytes = strlen(node) + 1;
  binary_work* work = calloc(1, sizeof *work + node_bytes);
  if (work == NULL)
    return node_error(ctx, WEFT_RESOURCE_EXHAUSTED,
                      "out of memory queuing the kernel");
  work->base.kind = TPL_WORK_TASK;
  work->base.run = run_binary;
  tpl_work_use(&work->base, xb, 0);
  tpl_work_use(&work->base, yb, 0);
  tpl_work_use(&work->base, zb, 1);
  work->op = op;
  work->dtype = x.dtype;
  work->layout = layout;
  work->count = count;
  work->x_offset = x.offset;
  work->y_offset = y.offset;
  work->z_offset = z.offset;
  memcpy(work->node, node, node_bytes);
  return tpl_submit(tpl_host->kernel_stream(ctx), &work->base);
}

/* ---- Relu --------------------------------------------------------------- */

typedef struct relu_work {
  tpl_work base; /* buffers: x, y */
  int32_t dtype;
  int64_t count;
  uint64_t x_offset, y_offset;
} relu_work;

static void run_relu(tpl_work* self, tpl_error* error) {
  (void)error;
  relu_work* work = (relu_work*)self;
  const unsigned char* xb = work->base.buffers[0]->bytes + work->x_offset;
  unsigned char* yb = work->base.buffers[1]->bytes + work->y_offset;
  if (work->dtype == WEFT_FLOAT32) {
    const float* x = (const float*)xb;
    float* y = (float*)yb;
    /* NaN stays NaN: NaN < 0 is false. */
    for (int64_t i = 0; i < work->count; ++i) y[i] = x[i] < 0 ? 0.0f : x[i];
  } else {
    const int32_t* x = (const int32_t*)xb;
    int32_t* y = (int32_t*)yb;
    for (int64_t i = 0; i < work->count; ++i) y[i] = x[i] < 0 ? 0 : x[i];
  }
}

static weft_status* relu_compute(void* kernel_arg, weft_kernel_context* ctx) {
  (void)kernel_arg;
  weft_kernel_tensor x, y;
  weft_status* status;
  if ((status = read_input(ctx, 0, &x))) return status;
  if (x.dtype != WEFT_FLOAT32 && x.dtype != WEFT_INT32)
    return node_error(ctx, WEFT_UNIMPLEMENTED,
                      "the template plugin has no Relu kernel for %s",
                      tpl_dtype_name(x.dtype));
  memset(&y, 0, sizeof y);
  y.struct_size = sizeof y;
  if ((status = tpl_host->kernel_allocate_output(ctx, 0, x.dtype, x.dims,
                                                 x.rank, &y)))
    return status;
  if (x.element_count == 0) return NULL;
  tpl_buffer *xb, *yb;
  if (!(xb = tensor_buffer(&x, "kernel input x", &status)) ||
      !(yb = tensor_buffer(&y, "kernel output", &status)))
    return status;
  relu_work* work = calloc(1, sizeof *work);
  if (work == NULL)
    return node_error(ctx, WEFT_RESOURCE_EXHAUSTED,
                      "out of memory queuing the kernel");
  work->base.kind = TPL_WORK_TASK;
  work->base.run = run_relu;
  tpl_work_use(&work->base, xb, 0);
  tpl_work_use(&work->base, yb, 1);
  work->dtype = x.dtype;
  work->count = x.element_count;
  work->x_offset = x.offset;
  work->y_offset = y.offset;
  return tpl_submit(tpl_host->kernel_stream(ctx), &work->base);
}

/* ---- Identity ----------------------------------------------------------- */

/* No work at all: the output is the input's memory under the same shape.
 * Nothing is queued, so there is nothing to order. */
static weft_status* identity_compute(void* kernel_arg,
                                     weft_kernel_context* ctx) {
  (void)kernel_arg;
  weft_kernel_tensor x;
  weft_status* status = read_input(ctx, 0, &x);
  if (status) return status;
  return tpl_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);
}

/* ---- Registration ------------------------------------------------------- */

static const int32_t numeric_dtypes[] = {WEFT_FLOAT32, WEFT_INT32};

typedef struct kernel_entry {
  const char* op;
  const int32_t* dtypes; /* NULL: every dtype */
  int32_t num_dtypes;
  weft_kernel_compute_fn compute;
  void* kernel_arg;
} kernel_entry;

#define TPL_NUMERIC numeric_dtypes, 2

static const kernel_entry kernels[] = {
    {"Add", TPL_NUMERIC, binary_compute, (void*)(uintptr_t)BINARY_ADD},
    {"Sub", TPL_NUMERIC, binary_compute, (void*)(uintptr_t)BINARY_SUB},
    {"Mul", TPL_NUMERIC, binary_compute, (void*)(uintptr_t)BINARY_MUL},
    {"Div", TPL_NUMERIC, binary_compute, (void*)(uintptr_t)BINARY_DIV},
    {"Relu", TPL_NUMERIC, relu_compute, NULL},
    {"Identity", NULL, 0, identity_compute, NULL},
};

weft_status* tpl_register_kernels(weft_kernel_registrar* registrar) {
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; ++i) {
    const kernel_entry* e = &kernels[i];
    weft_kernel_def def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.op = e->op;
    /* "T" is the type attribute the runtime sets on every typed op. */
    def.dtype_attr = e->dtypes ? "T" : NULL;
    def.dtypes = e->dtypes;
    def.num_dtypes = e->num_dtypes;
    /* Priority ranks kernels for the same op on the same device type: a
     * plugin with a generic and a tuned kernel gives the tuned one more. */
    def.priority = 0;
    def.compute = e->compute;
    def.kernel_arg = e->kernel_arg;
    weft_status* status = tpl_host->register_kernel(registrar, &def);
    if (status != NULL) return status;
  }
  return NULL;
}
