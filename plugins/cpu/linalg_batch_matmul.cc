// BatchMatMul: products of the last two dims over NumPy-broadcast batch
// dims.  adj_x and adj_y transpose (the adjoint of a real matrix).
//
// float32 (and natively supported bfloat16) go to oneDNN in one call, which
// broadcasts batch dims itself; everything else loops over the output's
// matrices with the products of matmul_product.h: in parallel, one thread
// each, when the matrices are small, or one after the other with every
// thread on each product when they are big.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "kernel.h"
#include "matmul_eigen.h"
#include "matmul_product.h"
#if WEFT_CPU_HAVE_ONEDNN
#include "matmul_onednn.h"
#endif

namespace weft_cpu {
namespace {

// The output's batch dims and, per operand, the step (in matrices) along
// each of them: 0 where the operand broadcasts.
struct Batch {
  int32_t rank = 0;
  int64_t dims[WEFT_MAX_RANK];
  int64_t x_dims[WEFT_MAX_RANK], y_dims[WEFT_MAX_RANK];  // 1 when absent
  int64_t x_step[WEFT_MAX_RANK], y_step[WEFT_MAX_RANK];
  int64_t count = 1;

  // The matrix indices of x and y that output matrix `index` multiplies.
  void Sources(int64_t index, int64_t* xi, int64_t* yi) const {
    *xi = *yi = 0;
    for (int32_t i = rank - 1; i >= 0; --i) {
      const int64_t coord = index % dims[i];
      index /= dims[i];
      *xi += coord * x_step[i];
      *yi += coord * y_step[i];
    }
  }
};

weft_status* BroadcastBatch(const weft_kernel_context* ctx, const Tensor& x,
                            const Tensor& y, Batch* batch) {
  const int32_t bx = x.rank - 2, by = y.rank - 2;
  batch->rank = std::max(bx, by);
  for (int32_t i = 0; i < batch->rank; ++i) {
    const int32_t ix = bx - batch->rank + i, iy = by - batch->rank + i;
    const int64_t dx = ix >= 0 ? x.dims[ix] : 1;
    const int64_t dy = iy >= 0 ? y.dims[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1) {
      char xs[128], ys[128];
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "batch dimensions of x %s and y %s cannot be "
                       "broadcast (batch axis %d: %lld vs %lld)",
                       FormatShape(x.dims, x.rank, xs, sizeof xs),
                       FormatShape(y.dims, y.rank, ys, sizeof ys), i,
                       static_cast<long long>(dx), static_cast<long long>(dy));
    }
    batch->x_dims[i] = dx;
    batch->y_dims[i] = dy;
    batch->dims[i] = dx == 1 ? dy : dx;
    batch->count *= batch->dims[i];
  }
  int64_t x_stride = 1, y_stride = 1;
  for (int32_t i = batch->rank - 1; i >= 0; --i) {
    batch->x_step[i] = batch->x_dims[i] == 1 ? 0 : x_stride;
    batch->y_step[i] = batch->y_dims[i] == 1 ? 0 : y_stride;
    x_stride *= batch->x_dims[i];
    y_stride *= batch->y_dims[i];
  }
  return nullptr;
}

struct Problem {
  int32_t dtype;  // float32, float64, int32 or int64 for the loop
  int64_t m, k, n;
  bool adj_x, adj_y;
};

#if WEFT_CPU_HAVE_ONEDNN
// The whole batch in one oneDNN call; false when oneDNN cannot take it.
bool TryOnednn(const Batch& batch, const Problem& p, int32_t data_type,
               const void* x, const void* y, void* out, int threads) {
  if (batch.rank > kOnednnMaxBatchRank) return false;
  MatMulGeometry g{};
  for (int32_t i = 0; i < batch.rank; ++i) {
    g.a_batch[i] = batch.x_dims[i];
    g.b_batch[i] = batch.y_dims[i];
  }
  g.batch_rank = batch.rank;
  g.m = p.m;
  g.k = p.k;
  g.n = p.n;
  g.transpose_a = p.adj_x;
  g.transpose_b = p.adj_y;
  g.data_type = data_type;
  g.threads = OnednnThreads(threads);
  return OnednnMatMul(g, x, y, out);
}
#endif

// Every output matrix through MatMulTyped.
void Loop(const weft_kernel_context* ctx, const Batch& batch,
          const Problem& p, const char* x, const char* y, char* out,
          int threads) {
  const size_t size = weft_dtype_size_of(p.dtype);
  const int64_t x_bytes = p.m * p.k * static_cast<int64_t>(size);
  const int64_t y_bytes = p.k * p.n * static_cast<int64_t>(size);
  const int64_t out_bytes = p.m * p.n * static_cast<int64_t>(size);
  auto product = [&](int64_t index, int product_threads) {
    int64_t xi, yi;
    batch.Sources(index, &xi, &yi);
    MatMulTyped(p.dtype, x + xi * x_bytes, y + yi * y_bytes,
                out + index * out_bytes, p.m, p.k, p.n, p.adj_x, p.adj_y,
                product_threads);
  };
  if (batch.count == 1 || MatMulWorthThreads(p.m, p.k, p.n)) {
    for (int64_t i = 0; i < batch.count; ++i) product(i, threads);
    return;
  }
  const int64_t work = p.m * p.k * p.n;
  ParallelFor(ctx, batch.count, work, 2.0 * static_cast<double>(work),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) product(i, 1);
              });
}

weft_status* Compute(const weft_kernel_context* ctx, const Batch& batch,
                     Problem p, const Tensor& x, const Tensor& y,
                     const Tensor& out) {
  const double total = static_cast<double>(batch.count) *
                       static_cast<double>(p.m * p.k * p.n);
  // As MatMul: only work big enough to go parallel asks for threads.
  const int threads =
      total >= 262144.0 ? g_host->kernel_intra_op_threads(ctx) : 1;
  const bool half = p.dtype == WEFT_FLOAT16 || p.dtype == WEFT_BFLOAT16;
#if WEFT_CPU_HAVE_ONEDNN
  if ((p.dtype == WEFT_FLOAT32 || half) && total >= 32768.0) {
    const int32_t type = p.dtype == WEFT_FLOAT32   ? dnnl_f32
                         : p.dtype == WEFT_FLOAT16 ? dnnl_f16
                                                   : dnnl_bf16;
    if (TryOnednn(batch, p, type, x.base, y.base, out.base, threads)) {
      return nullptr;
    }
  }
#endif
  if (!half) {
    Loop(ctx, batch, p, x.base, y.base, out.base, threads);
    return nullptr;
  }
  // Widened to float32 and rounded back, like MatMul's fallback.
  std::unique_ptr<float[]> wide(
      new float[static_cast<size_t>(x.count + y.count + out.count)]);
  float* fx = wide.get();
  float* fy = fx + x.count;
  float* fo = fy + y.count;
  HalfToFloat(ctx, p.dtype, x.base, fx, x.count);
  HalfToFloat(ctx, p.dtype, y.base, fy, y.count);
  const int32_t dtype = p.dtype;
  p.dtype = WEFT_FLOAT32;
#if WEFT_CPU_HAVE_ONEDNN
  if (total < 32768.0 || !TryOnednn(batch, p, dnnl_f32, fx, fy, fo, threads))
#endif
  {
    Loop(ctx, batch, p, reinterpret_cast<const char*>(fx),
         reinterpret_cast<const char*>(fy), reinterpret_cast<char*>(fo),
         threads);
  }
  FloatToHalf(ctx, dtype, fo, out.base, out.count);
  return nullptr;
}

weft_status* BatchMatMulKernel(weft_kernel_context* ctx) {
  Tensor x, y;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &y)) return s;
  Problem p;
  if (weft_status* s = OptionalBoolAttr(ctx, "adj_x", false, &p.adj_x)) {
    return s;
  }
  if (weft_status* s = OptionalBoolAttr(ctx, "adj_y", false, &p.adj_y)) {
    return s;
  }
  if (x.dtype != y.dtype) return DtypeMismatch(ctx, "input y", y.dtype, x.dtype);
  p.dtype = x.dtype;
  switch (p.dtype) {
    case WEFT_FLOAT16: case WEFT_BFLOAT16: case WEFT_FLOAT32:
    case WEFT_FLOAT64: case WEFT_INT32: case WEFT_INT64:
      break;
    default:
      return UnsupportedDtype(ctx, p.dtype);
  }
  char xs[128], ys[128];
  if (x.rank < 2 || y.rank < 2) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "inputs must have rank >= 2, got x %s and y %s",
                     FormatShape(x.dims, x.rank, xs, sizeof xs),
                     FormatShape(y.dims, y.rank, ys, sizeof ys));
  }
  const int64_t xr = x.dims[x.rank - 2], xc = x.dims[x.rank - 1];
  const int64_t yr = y.dims[y.rank - 2], yc = y.dims[y.rank - 1];
  p.m = p.adj_x ? xc : xr;
  p.k = p.adj_x ? xr : xc;
  p.n = p.adj_y ? yr : yc;
  const int64_t k_y = p.adj_y ? yc : yr;
  if (p.k != k_y) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "inner dimensions differ: x%s%s and y%s%s give K = "
                     "%lld vs %lld",
                     FormatShape(x.dims, x.rank, xs, sizeof xs),
                     p.adj_x ? " adjoint" : "",
                     FormatShape(y.dims, y.rank, ys, sizeof ys),
                     p.adj_y ? " adjoint" : "", static_cast<long long>(p.k),
                     static_cast<long long>(k_y));
  }
  Batch batch;
  if (weft_status* s = BroadcastBatch(ctx, x, y, &batch)) return s;
  int64_t dims[WEFT_MAX_RANK];
  std::copy(batch.dims, batch.dims + batch.rank, dims);
  dims[batch.rank] = p.m;
  dims[batch.rank + 1] = p.n;
  Tensor out;
  if (weft_status* s =
          AllocateOutput(ctx, 0, x.dtype, dims, batch.rank + 2, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  if (p.k == 0) {  // empty sums: zero bits are 0 in every dtype here
    std::memset(out.base, 0, static_cast<size_t>(out.count) *
                                 weft_dtype_size_of(out.dtype));
    return nullptr;
  }
  return Compute(ctx, batch, p, x, y, out);
}

}  // namespace

weft_status* RegisterBatchMatMulKernels(const Registrar& registrar) {
  return registrar.Add("BatchMatMul",
                       {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32,
                        WEFT_FLOAT64, WEFT_INT32, WEFT_INT64},
                       Guarded<BatchMatMulKernel>);
}

}  // namespace weft_cpu
