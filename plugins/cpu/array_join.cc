// Concat and Pack join inputs; Split and Unpack cut one input into outputs.
// Seen as [outer, row] matrices, each input (or output) owns a fixed run of
// every row, so all four are a loop of memcpys over the outer rows.
#include <cstring>
#include <vector>

#include "array_copy.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

// Most joins have a few operands: keep them on the stack, as the success
// path of a kernel should not allocate.
template <typename T>
class Operands {
 public:
  explicit Operands(int64_t n) {
    if (n > kInline) heap_.resize(static_cast<size_t>(n));
    data_ = n > kInline ? heap_.data() : inline_;
  }
  T& operator[](int64_t i) { return data_[i]; }

 private:
  static constexpr int64_t kInline = 16;
  T inline_[kInline];
  std::vector<T> heap_;
  T* data_;
};

weft_status* ShapeMismatch(const weft_kernel_context* ctx, int32_t i,
                           const Tensor& a, const Tensor& b, const char* why) {
  char sa[256], sb[256];
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "input %d has shape %s but input 0 has %s; %s", i,
                   FormatShape(a.dims, a.rank, sa, sizeof sa),
                   FormatShape(b.dims, b.rank, sb, sizeof sb), why);
}

// out[o] = in_0[o] ++ in_1[o] ++ ... for every outer row o, where input i
// contributes `chunk[i]` elements per row and a row of out has `row`.
void Join(const weft_kernel_context* ctx, int32_t n, Operands<Tensor>& in,
          Operands<int64_t>& chunk, int64_t outer, int64_t row, char* out,
          size_t es) {
  ParallelFor(ctx, outer, row, 0.25 * static_cast<double>(row),
              [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      char* dst = out + o * row * es;
      for (int32_t i = 0; i < n; ++i) {
        const size_t bytes = static_cast<size_t>(chunk[i]) * es;
        if (bytes == 0) continue;
        std::memcpy(dst, in[i].base + o * bytes, bytes);
        dst += bytes;
      }
    }
  });
}

weft_status* ReadAll(weft_kernel_context* ctx, int32_t n,
                     Operands<Tensor>& in) {
  for (int32_t i = 0; i < n; ++i) {
    if (weft_status* s = ReadInput(ctx, i, &in[i])) return s;
    if (in[i].dtype != in[0].dtype) {
      return DtypeMismatch(ctx, "an input", in[i].dtype, in[0].dtype);
    }
  }
  return nullptr;
}

weft_status* ConcatKernel(weft_kernel_context* ctx) {
  const int32_t n = g_host->kernel_num_inputs(ctx);
  Operands<Tensor> in(n);
  if (weft_status* s = ReadAll(ctx, n, in)) return s;
  const Tensor& x0 = in[0];
  if (x0.rank == 0) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT, "cannot concatenate scalars");
  }
  int64_t axis_attr = 0;
  int32_t axis = 0;
  if (weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) {
    return s;
  }
  if (weft_status* s = NormalizeAxis(ctx, "axis", axis_attr, x0.rank, &axis)) {
    return s;
  }
  const int64_t inner = Product(x0.dims, axis + 1, x0.rank);
  Operands<int64_t> chunk(n);
  int64_t dims[WEFT_MAX_RANK];
  std::memcpy(dims, x0.dims, sizeof(int64_t) * x0.rank);
  dims[axis] = 0;
  for (int32_t i = 0; i < n; ++i) {
    bool same = in[i].rank == x0.rank;
    for (int32_t d = 0; same && d < x0.rank; ++d) {
      same = d == axis || in[i].dims[d] == x0.dims[d];
    }
    if (!same) {
      return ShapeMismatch(ctx, i, in[i], x0,
                           "only the concat axis may differ");
    }
    dims[axis] += in[i].dims[axis];
    chunk[i] = in[i].dims[axis] * inner;
  }
  if (n == 1) return g_host->kernel_forward_input(ctx, 0, 0, dims, x0.rank);
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x0.dtype, dims, x0.rank, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  Join(ctx, n, in, chunk, Product(dims, 0, axis), dims[axis] * inner, y.base,
       weft_dtype_size_of(y.dtype));
  return nullptr;
}

weft_status* PackKernel(weft_kernel_context* ctx) {
  const int32_t n = g_host->kernel_num_inputs(ctx);
  Operands<Tensor> in(n);
  if (weft_status* s = ReadAll(ctx, n, in)) return s;
  const Tensor& x0 = in[0];
  if (x0.rank >= WEFT_MAX_RANK) return RankTooLarge(ctx, "output", x0.rank + 1);
  int64_t axis_attr = 0;
  int32_t axis = 0;
  if (weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) {
    return s;
  }
  if (weft_status* s =
          NormalizeAxis(ctx, "axis", axis_attr, x0.rank + 1, &axis)) {
    return s;
  }
  Operands<int64_t> chunk(n);
  for (int32_t i = 0; i < n; ++i) {
    bool same = in[i].rank == x0.rank;
    for (int32_t d = 0; same && d < x0.rank; ++d) {
      same = in[i].dims[d] == x0.dims[d];
    }
    if (!same) return ShapeMismatch(ctx, i, in[i], x0, "Pack needs one shape");
    chunk[i] = Product(x0.dims, axis, x0.rank);
  }
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t d = 0, j = 0; d <= x0.rank; ++d) {
    dims[d] = d == axis ? n : x0.dims[j++];
  }
  Tensor y;
  if (weft_status* s =
          AllocateOutput(ctx, 0, x0.dtype, dims, x0.rank + 1, &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  Join(ctx, n, in, chunk, Product(x0.dims, 0, axis), n * chunk[0], y.base,
       weft_dtype_size_of(y.dtype));
  return nullptr;
}

// Output j gets elements [j * chunk, (j + 1) * chunk) of every outer row of
// x, a row holding `pieces * chunk` elements.  Every output has `dims`.
weft_status* SplitInto(weft_kernel_context* ctx, const Tensor& x,
                       int64_t outer, int64_t chunk, int64_t pieces,
                       const int64_t* dims, int32_t rank) {
  Operands<char*> out(pieces);
  for (int64_t j = 0; j < pieces; ++j) {
    Tensor y;
    if (weft_status* s = AllocateOutput(ctx, static_cast<int32_t>(j), x.dtype,
                                        dims, rank, &y)) {
      return s;
    }
    out[j] = y.base;
  }
  const size_t es = weft_dtype_size_of(x.dtype);
  const size_t bytes = static_cast<size_t>(chunk) * es;
  if (bytes == 0) return nullptr;
  ParallelFor(ctx, outer, pieces * chunk,
              0.25 * static_cast<double>(pieces * chunk),
              [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const char* src = x.base + o * pieces * bytes;
      for (int64_t j = 0; j < pieces; ++j) {
        std::memcpy(out[j] + o * bytes, src + j * bytes, bytes);
      }
    }
  });
  return nullptr;
}

weft_status* SplitKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  int64_t axis_attr = 0, pieces = 0;
  int32_t axis = 0;
  if (weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) {
    return s;
  }
  if (weft_status* s = g_host->kernel_attr_int(ctx, "num_split", &pieces)) {
    return s;
  }
  if (weft_status* s = NormalizeAxis(ctx, "axis", axis_attr, x.rank, &axis)) {
    return s;
  }
  if (pieces != g_host->kernel_num_outputs(ctx) || x.dims[axis] % pieces) {
    char shape[256];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "num_split = %lld does not divide dimension %d of %s",
                     static_cast<long long>(pieces), axis,
                     FormatShape(x.dims, x.rank, shape, sizeof shape));
  }
  int64_t dims[WEFT_MAX_RANK];
  std::memcpy(dims, x.dims, sizeof(int64_t) * x.rank);
  dims[axis] /= pieces;
  if (pieces == 1) return g_host->kernel_forward_input(ctx, 0, 0, dims, x.rank);
  return SplitInto(ctx, x, Product(x.dims, 0, axis),
                   dims[axis] * Product(x.dims, axis + 1, x.rank), pieces,
                   dims, x.rank);
}

weft_status* UnpackKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  int64_t axis_attr = 0;
  int32_t axis = 0;
  if (weft_status* s = g_host->kernel_attr_int(ctx, "axis", &axis_attr)) {
    return s;
  }
  if (weft_status* s = NormalizeAxis(ctx, "axis", axis_attr, x.rank, &axis)) {
    return s;
  }
  const int64_t pieces = x.dims[axis];
  if (pieces != g_host->kernel_num_outputs(ctx)) {
    char shape[256];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "the node has %d outputs but dimension %d of %s is %lld",
                     g_host->kernel_num_outputs(ctx), axis,
                     FormatShape(x.dims, x.rank, shape, sizeof shape),
                     static_cast<long long>(pieces));
  }
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t d = 0, j = 0; d < x.rank; ++d) {
    if (d != axis) dims[j++] = x.dims[d];
  }
  return SplitInto(ctx, x, Product(x.dims, 0, axis),
                   Product(x.dims, axis + 1, x.rank), pieces, dims,
                   x.rank - 1);
}

}  // namespace

weft_status* RegisterArrayJoinKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = registrar.Add("Concat", {}, Guarded<ConcatKernel>)) ||
      (s = registrar.Add("Pack", {}, Guarded<PackKernel>)) ||
      (s = registrar.Add("Split", {}, Guarded<SplitKernel>)) ||
      (s = registrar.Add("Unpack", {}, Guarded<UnpackKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
