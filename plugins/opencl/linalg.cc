// BatchMatMul for every dtype the CPU plugin has (float16, bfloat16,
// float32, float64, int32, int64), over NumPy-broadcast batch dims; and
// MatrixInverse and MatrixDeterminant for float32 and float64: one LU
// factorisation with partial pivoting per [M, M] matrix of the batch, one
// work item each, following the CPU plugin's linalg_lu.cc: the same pivot
// choices, the same test of singularity to working precision (an error
// naming the first such matrix) and the same overflow-safe product of the
// pivots.  The OpenCL C is sources_linalg.cc.
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernel_call.h"

namespace weft_opencl {

namespace {

bool g_fp64 = false;

// "[2,3,4]" into `out`; returns out.
const char* ShapeText(const weft_kernel_tensor& t, char* out, size_t size) {
  size_t used = static_cast<size_t>(std::snprintf(out, size, "["));
  for (int32_t d = 0; d < t.rank && used + 24 < size; ++d) {
    used += static_cast<size_t>(
        std::snprintf(out + used, size - used, d ? ",%lld" : "%lld",
                      static_cast<long long>(t.dims[d])));
  }
  std::snprintf(out + used, size - used, "]");
  return out;
}

// ---- BatchMatMul ----------------------------------------------------------

// The output's batch dims as the kernel walks them: dims of 1 dropped and
// neighbours that both operands step through alike merged, so that any
// batch rank the broadcasting rules allow fits kMaxKernelRank unless its
// operands broadcast in more than that many alternating runs.  Steps count
// matrices, 0 where an operand broadcasts.
struct Batch {
  int32_t rank = 0;
  cl_long dims[kMaxKernelRank] = {}, x_step[kMaxKernelRank] = {},
          y_step[kMaxKernelRank] = {};
  int64_t count = 1;
};

// Broadcasts the batch dims of x and y (all but their last two) as the CPU
// does; `out_dims` gets the output's, *out_rank their number.
weft_status* BroadcastBatch(const KernelCall& call,
                            const weft_kernel_tensor& x,
                            const weft_kernel_tensor& y, int64_t* out_dims,
                            int32_t* out_rank, Batch* batch) {
  const int32_t bx = x.rank - 2, by = y.rank - 2;
  const int32_t rank = std::max(bx, by);
  int64_t x_dims[WEFT_MAX_RANK], y_dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) {
    const int32_t ix = bx - rank + i, iy = by - rank + i;
    x_dims[i] = ix >= 0 ? x.dims[ix] : 1;
    y_dims[i] = iy >= 0 ? y.dims[iy] : 1;
    if (x_dims[i] != y_dims[i] && x_dims[i] != 1 && y_dims[i] != 1) {
      char xs[128], ys[128];
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "batch dimensions of x %s and y %s cannot be "
                        "broadcast (batch axis %d: %lld vs %lld)",
                        ShapeText(x, xs, sizeof xs),
                        ShapeText(y, ys, sizeof ys),
                        i, static_cast<long long>(x_dims[i]),
                        static_cast<long long>(y_dims[i]));
    }
    out_dims[i] = x_dims[i] == 1 ? y_dims[i] : x_dims[i];
    batch->count *= out_dims[i];
  }
  *out_rank = rank;
  // Steps in matrices, 0 where an operand broadcasts.
  cl_long x_step[WEFT_MAX_RANK], y_step[WEFT_MAX_RANK];
  int64_t x_stride = 1, y_stride = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    x_step[i] = x_dims[i] == 1 ? 0 : x_stride;
    y_step[i] = y_dims[i] == 1 ? 0 : y_stride;
    x_stride *= x_dims[i];
    y_stride *= y_dims[i];
  }
  // Outermost first: a dim joins the run outside it when that run steps by
  // the dim's extent in both operands (a broadcast operand steps 0 over
  // both); dims of 1 drop out.
  int32_t& merged = batch->rank;
  for (int32_t i = 0; i < rank; ++i) {
    if (out_dims[i] == 1) continue;
    const int32_t last = merged - 1;
    if (merged > 0 && batch->x_step[last] == x_step[i] * out_dims[i] &&
        batch->y_step[last] == y_step[i] * out_dims[i]) {
      batch->dims[last] *= out_dims[i];
    } else if (merged == kMaxKernelRank) {
      return call.Error(WEFT_UNIMPLEMENTED,
                        "the batch dims of x and y broadcast in more than %d "
                        "alternating runs, more than the OpenCL kernel walks",
                        kMaxKernelRank);
    } else {
      batch->dims[merged++] = out_dims[i];
    }
    batch->x_step[merged - 1] = x_step[i];
    batch->y_step[merged - 1] = y_step[i];
  }
  return nullptr;
}

bool IsBatchMatMulType(int32_t dtype) {
  switch (dtype) {
    case WEFT_FLOAT16: case WEFT_BFLOAT16: case WEFT_FLOAT32:
    case WEFT_INT32: case WEFT_INT64:
      return true;
    case WEFT_FLOAT64:
      return g_fp64;
    default:
      return false;
  }
}

int g_matmul_tag;

// output[..., M, N] = op(x)[..., M, K] op(y)[..., K, N], op transposing
// where adj_x or adj_y is set.  The 16-bit floats accumulate in float32
// and integers wrap, as on the CPU.  With `arg` &g_matmul_tag: MatMul of
// the dtypes matmul.cc's kernels lack (float16, bfloat16, int32, int64),
// matrices with transpose_a and transpose_b.
weft_status* BatchMatMulKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool matmul = arg == &g_matmul_tag;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y, z;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &y)) return s;
    bool adj_x = false, adj_y = false;
    if (weft_status* s = call.AttrBool(matmul ? "transpose_a" : "adj_x",
                                       false, &adj_x)) {
      return s;
    }
    if (weft_status* s = call.AttrBool(matmul ? "transpose_b" : "adj_y",
                                       false, &adj_y)) {
      return s;
    }
    if (matmul && (x.rank != 2 || y.rank != 2)) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "a and b must be matrices (rank %d and %d)", x.rank,
                        y.rank);
    }
    if (x.dtype != y.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "x is %s but y is %s",
                        weft_dtype_name_of(x.dtype),
                        weft_dtype_name_of(y.dtype));
    }
    if (!IsBatchMatMulType(x.dtype)) return call.UnsupportedDtype(x.dtype);
    char xs[128], ys[128];
    if (x.rank < 2 || y.rank < 2) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inputs must have rank >= 2, got x %s and y %s",
                        ShapeText(x, xs, sizeof xs),
                        ShapeText(y, ys, sizeof ys));
    }
    const int64_t x_rows = x.dims[x.rank - 2], x_cols = x.dims[x.rank - 1];
    const int64_t y_rows = y.dims[y.rank - 2], y_cols = y.dims[y.rank - 1];
    const int64_t m = adj_x ? x_cols : x_rows, k = adj_x ? x_rows : x_cols;
    const int64_t n = adj_y ? y_rows : y_cols;
    if ((adj_y ? y_cols : y_rows) != k) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inner dimensions differ: x%s%s and y%s%s give K = "
                        "%lld vs %lld",
                        ShapeText(x, xs, sizeof xs), adj_x ? " adjoint" : "",
                        ShapeText(y, ys, sizeof ys), adj_y ? " adjoint" : "",
                        static_cast<long long>(k),
                        static_cast<long long>(adj_y ? y_cols : y_rows));
    }
    Batch batch;
    int64_t dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    if (weft_status* s = BroadcastBatch(call, x, y, dims, &rank, &batch)) {
      return s;
    }
    dims[rank] = m;
    dims[rank + 1] = n;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, dims, rank + 2, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    if (k == 0) {  // empty sums: zero bits are 0 in every dtype here
      const unsigned char zeros[8] = {};
      return call.Fill(z, zeros, weft_dtype_size_of(z.dtype));
    }
    // Batch steps in elements, and each operand's row and column strides:
    // a stored [rows, cols] matrix has element (r, c) at r * cols + c, and
    // an adjoint swaps the roles.
    for (int32_t i = 0; i < batch.rank; ++i) {
      batch.x_step[i] *= m * k;
      batch.y_step[i] *= k * n;
    }
    const cl_long x_rs = adj_x ? 1 : k, x_cs = adj_x ? m : 1;
    const cl_long y_rs = adj_y ? 1 : n, y_cs = adj_y ? k : 1;
    // An item per 16 columns x 8 rows of one output matrix.
    const cl_long row_groups = (m + 7) / 8;
    WorkSize work;
    work.dims = 2;
    work.global[0] = static_cast<size_t>((n + 15) / 16);
    work.global[1] = static_cast<size_t>(batch.count * row_groups);
    char name[32];
    return call.Launch(
        Program::kLinalg,
        KernelName(name, sizeof name, "batch_matmul", x.dtype), work,
        Buffer(x), Buffer(y), Buffer(z), static_cast<cl_long>(m),
        static_cast<cl_long>(n), static_cast<cl_long>(k), x_rs, x_cs, y_rs,
        y_cs, row_groups, static_cast<cl_int>(batch.rank), Long8(batch.dims),
        Long8(batch.x_step), Long8(batch.y_step));
  });
}

// ---- MatrixInverse, MatrixDeterminant -------------------------------------

// Reads the [..., M, M] input: *size is M, *count the number of matrices.
weft_status* ReadSquare(const KernelCall& call, weft_kernel_tensor* x,
                        int64_t* size, int64_t* count) {
  if (weft_status* s = call.Input(0, x)) return s;
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
    char shape[128];
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "input must be square matrices [..., M, M], got %s",
                      ShapeText(*x, shape, sizeof shape));
  }
  if (x->dtype != WEFT_FLOAT32 && !(g_fp64 && x->dtype == WEFT_FLOAT64)) {
    return call.UnsupportedDtype(x->dtype);
  }
  *size = x->dims[x->rank - 1];
  *count = 1;
  for (int32_t i = 0; i < x->rank - 2; ++i) *count *= x->dims[i];
  return nullptr;
}

// The factorisations' scratch: the LU factors of every matrix, then the row
// permutations (int), then one flag (int) per matrix.
struct Factors {
  TempBuffer buffer;
  BufferArg lu, perm, bad;
};

weft_status* MakeFactors(const KernelCall& call, int32_t dtype, int64_t size,
                         int64_t count, Factors* out) {
  const size_t element = weft_dtype_size_of(dtype);
  const size_t lu = static_cast<size_t>(count * size * size) * element;
  const size_t perm = static_cast<size_t>(count * size) * sizeof(cl_int);
  const size_t flags = static_cast<size_t>(count) * sizeof(cl_int);
  if (weft_status* s = out->buffer.Create(call, lu + perm + flags)) {
    return s;
  }
  // lu is a whole number of ints: each part starts at an int index.
  const cl_mem buffer = out->buffer.arg().buffer;
  out->lu = {buffer, 0};
  out->perm = {buffer, static_cast<cl_long>(lu / sizeof(cl_int))};
  out->bad = {buffer, static_cast<cl_long>((lu + perm) / sizeof(cl_int))};
  return nullptr;
}

// The first matrix the kernel flagged in `factors`, as the CPU's error;
// NULL when there is none.  The CPU refuses a singular matrix with an
// error from the kernel call, and so does this one: it waits for the flags
// (the stream's work up to here) instead of only enqueueing, since the
// device error slot has no kind for "not invertible" (error_slot.h).
weft_status* FirstSingular(const KernelCall& call, const weft_kernel_tensor& x,
                           const Factors& factors, int64_t count) {
  std::vector<cl_int> bad(static_cast<size_t>(count));
  const cl_int error = g_cl->EnqueueReadBuffer(
      call.plugin_stream()->queue, factors.buffer.arg().buffer, CL_TRUE,
      static_cast<size_t>(factors.bad.offset) * sizeof(cl_int),
      bad.size() * sizeof(cl_int), bad.data(), 0, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return call.Error(CodeFor(error),
                      "reading the singularity flags: clEnqueueReadBuffer: "
                      "%s", ClErrorName(error));
  }
  const auto first = std::find_if(bad.begin(), bad.end(),
                                  [](cl_int flag) { return flag != 0; });
  if (first == bad.end()) return nullptr;
  char shape[128];
  return call.Error(WEFT_INVALID_ARGUMENT,
                    "matrix %lld of the batch (input %s) is not invertible: "
                    "it is singular to working precision or not finite",
                    static_cast<long long>(first - bad.begin()),
                    ShapeText(x, shape, sizeof shape));
}

// MatrixInverse (`arg` NULL) and MatrixDeterminant (`arg` set).
weft_status* LuKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool determinant = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    int64_t size = 0, count = 0;
    if (weft_status* s = ReadSquare(call, &x, &size, &count)) return s;
    bool adjoint = false;
    if (!determinant) {
      if (weft_status* s = call.AttrBool("adjoint", false, &adjoint)) {
        return s;
      }
    }
    // An inverse per matrix, or a determinant (the batch dims).
    const int32_t rank = determinant ? x.rank - 2 : x.rank;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const bool f64 = x.dtype == WEFT_FLOAT64;
    if (size == 0) {  // determinants of 0 x 0 matrices: the empty product
      const float one_f = 1.0f;
      const double one_d = 1.0;
      return f64 ? call.Fill(y, &one_d, sizeof one_d)
                 : call.Fill(y, &one_f, sizeof one_f);
    }
    Factors factors;
    if (weft_status* s = MakeFactors(call, x.dtype, size, count, &factors)) {
      return s;
    }
    // One work item per matrix; on a CPU device each its own group, so
    // that the matrices spread over the cores.
    const WorkSize work = Linear(count, call.device()->is_cpu ? 1 : 64);
    const cl_long m = size, n = count;
    char name[40];
    if (determinant) {
      return call.Launch(
          Program::kLinalg,
          KernelName(name, sizeof name, "matrix_determinant", x.dtype), work,
          Buffer(x), Buffer(y), factors.lu, factors.perm, m, n);
    }
    KernelName(name, sizeof name, "matrix_inverse", x.dtype);
    const cl_int adj = adjoint ? 1 : 0;
    weft_status* status =
        f64 ? call.Launch(Program::kLinalg, name, work, Buffer(x), Buffer(y),
                          factors.lu, factors.perm, factors.bad, m, n, adj,
                          cl_double{DBL_EPSILON})
            : call.Launch(Program::kLinalg, name, work, Buffer(x), Buffer(y),
                          factors.lu, factors.perm, factors.bad, m, n, adj,
                          cl_float{FLT_EPSILON});
    if (status != nullptr) return status;
    return FirstSingular(call, x, factors, count);
  });
}

int g_determinant_tag;

}  // namespace

weft_status* RegisterLinalgKernels(weft_kernel_registrar* registrar,
                                   bool fp64) {
  g_fp64 = fp64;
  // float64 last, registered where every device runs it.
  const int32_t products[] = {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32,
                              WEFT_INT32,   WEFT_INT64,    WEFT_FLOAT64};
  if (weft_status* s = RegisterKernel(registrar, "BatchMatMul", "T", products,
                                      fp64 ? 6 : 5, BatchMatMulKernel,
                                      nullptr)) {
    return s;
  }
  // MatMul's float32 and float64 are matmul.cc's (and CLBlast's).
  const int32_t narrow_and_integer[] = {WEFT_FLOAT16, WEFT_BFLOAT16,
                                        WEFT_INT32, WEFT_INT64};
  if (weft_status* s = RegisterKernel(registrar, "MatMul", "T",
                                      narrow_and_integer, 4,
                                      BatchMatMulKernel, &g_matmul_tag)) {
    return s;
  }
  const int32_t types[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  const int32_t count = fp64 ? 2 : 1;
  if (weft_status* s = RegisterKernel(registrar, "MatrixInverse", "T", types,
                                      count, LuKernel, nullptr)) {
    return s;
  }
  return RegisterKernel(registrar, "MatrixDeterminant", "T", types, count,
                        LuKernel, &g_determinant_tag);
}

}  // namespace weft_opencl
