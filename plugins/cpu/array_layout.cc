// Transpose, Slice, Tile and Pad: each is one strided box copy (see
// array_copy.h), so they serve every dtype by element size.
#include <algorithm>
#include <cstring>

#include "array_copy.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

weft_status* ListAttr(const weft_kernel_context* ctx, const char* name,
                      int32_t want, const int64_t** values) {
  int32_t count = 0;
  if (weft_status* s = g_host->kernel_attr_int_list(ctx, name, values,
                                                     &count)) {
    return s;
  }
  if (count != want) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "attribute %s has %d entries; the input needs %d", name,
                     count, want);
  }
  return nullptr;
}

weft_status* TransposeKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  const int64_t* perm = nullptr;
  if (weft_status* s = ListAttr(ctx, "perm", x.rank, &perm)) return s;
  int64_t in_strides[WEFT_MAX_RANK];
  RowMajorStrides(x.dims, x.rank, in_strides);
  Box box;
  box.rank = x.rank;
  bool seen[WEFT_MAX_RANK] = {};
  // Order of the axes that are not 1, to spot a transpose that moves no byte.
  int32_t previous = -1;
  bool moves_nothing = true;
  for (int32_t i = 0; i < x.rank; ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + x.rank : perm[i];
    if (p < 0 || p >= x.rank || seen[p]) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "perm is not a permutation of 0..%d", x.rank - 1);
    }
    seen[p] = true;
    box.size[i] = x.dims[p];
    box.src_stride[i] = in_strides[p];
    if (x.dims[p] != 1) {
      moves_nothing &= p > previous;
      previous = static_cast<int32_t>(p);
    }
  }
  if (moves_nothing) {
    return g_host->kernel_forward_input(ctx, 0, 0, box.size, box.rank);
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, box.size, box.rank,
                                      &y)) {
    return s;
  }
  RowMajorStrides(box.size, box.rank, box.dst_stride);
  CopyBox(ctx, x.base, y.base, box, weft_dtype_size_of(x.dtype));
  return nullptr;
}

weft_status* SliceKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  const int64_t* begin = nullptr;
  const int64_t* size = nullptr;
  if (weft_status* s = ListAttr(ctx, "begin", x.rank, &begin)) return s;
  if (weft_status* s = ListAttr(ctx, "size", x.rank, &size)) return s;
  Box box;
  box.rank = x.rank;
  RowMajorStrides(x.dims, x.rank, box.src_stride);
  int64_t offset = 0;
  bool whole = true;
  for (int32_t i = 0; i < x.rank; ++i) {
    const int64_t d = x.dims[i];
    const bool ok = begin[i] >= 0 && begin[i] <= d && size[i] >= -1 &&
                    (size[i] < 0 || size[i] <= d - begin[i]);
    if (!ok) {
      char shape[256];
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "begin %lld, size %lld is out of bounds for dimension "
                       "%d of %s", static_cast<long long>(begin[i]),
                       static_cast<long long>(size[i]), i,
                       FormatShape(x.dims, x.rank, shape, sizeof shape));
    }
    box.size[i] = size[i] < 0 ? d - begin[i] : size[i];
    offset += begin[i] * box.src_stride[i];
    whole &= box.size[i] == d;
  }
  if (whole) return g_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, box.size, box.rank,
                                      &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  const size_t es = weft_dtype_size_of(x.dtype);
  RowMajorStrides(box.size, box.rank, box.dst_stride);
  CopyBox(ctx, x.base + offset * es, y.base, box, es);
  return nullptr;
}

// Places x at the origin of the output, then replicates along each axis from
// the innermost out: once axes > d are complete, the block spanned by axis d
// for a fixed prefix is contiguous and is copied by doubling memcpys.
weft_status* TileKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  const int64_t* multiples = nullptr;
  if (weft_status* s = ListAttr(ctx, "multiples", x.rank, &multiples)) {
    return s;
  }
  Box box;
  box.rank = x.rank;
  int64_t out_dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < x.rank; ++i) {
    if (multiples[i] < 0 ||
        __builtin_mul_overflow(x.dims[i], multiples[i], &out_dims[i])) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "multiples[%d] = %lld is invalid for dimension %lld", i,
                       static_cast<long long>(multiples[i]),
                       static_cast<long long>(x.dims[i]));
    }
    box.size[i] = x.dims[i];
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, out_dims, x.rank,
                                      &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  const size_t es = weft_dtype_size_of(x.dtype);
  RowMajorStrides(x.dims, x.rank, box.src_stride);
  RowMajorStrides(out_dims, x.rank, box.dst_stride);
  CopyBox(ctx, x.base, y.base, box, es);
  for (int32_t d = x.rank - 1; d >= 0; --d) {
    if (multiples[d] == 1) continue;
    const size_t block = static_cast<size_t>(x.dims[d] * box.dst_stride[d]) *
                         es;
    const size_t total = block * static_cast<size_t>(multiples[d]);
    const int64_t prefixes = Product(x.dims, 0, d);
    ParallelFor(ctx, prefixes, static_cast<int64_t>(total / es),
                0.25 * static_cast<double>(total / es),
                [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        int64_t offset = 0, rest = p;
        for (int32_t k = d - 1; k >= 0; --k) {
          offset += rest % x.dims[k] * box.dst_stride[k];
          rest /= x.dims[k];
        }
        char* at = y.base + offset * es;
        for (size_t filled = block; filled < total;) {
          const size_t n = std::min(filled, total - filled);
          std::memcpy(at + filled, at, n);
          filled += n;
        }
      }
    });
  }
  return nullptr;
}

weft_status* PadKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  const int64_t* paddings = nullptr;
  if (weft_status* s = ListAttr(ctx, "paddings", 2 * x.rank, &paddings)) {
    return s;
  }
  double constant = 0;
  if (weft_status* s =
          g_host->kernel_attr_float(ctx, "constant_value", &constant)) {
    return s;
  }
  Box box;
  box.rank = x.rank;
  int64_t out_dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < x.rank; ++i) {
    const int64_t before = paddings[2 * i], after = paddings[2 * i + 1];
    if (before < 0 || after < 0 ||
        __builtin_add_overflow(x.dims[i], before, &out_dims[i]) ||
        __builtin_add_overflow(out_dims[i], after, &out_dims[i])) {
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "paddings for dimension %d are invalid", i);
    }
    box.size[i] = x.dims[i];
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, out_dims, x.rank,
                                      &y)) {
    return s;
  }
  if (y.count == 0) return nullptr;
  const size_t es = weft_dtype_size_of(x.dtype);
  unsigned char element[8];
  if (!EncodeElement(constant, x.dtype, element)) {
    return UnsupportedDtype(ctx, x.dtype);
  }
  FillElements(ctx, y.base, y.count, element, es);
  RowMajorStrides(x.dims, x.rank, box.src_stride);
  RowMajorStrides(out_dims, x.rank, box.dst_stride);
  int64_t offset = 0;
  for (int32_t i = 0; i < x.rank; ++i) {
    offset += paddings[2 * i] * box.dst_stride[i];
  }
  CopyBox(ctx, x.base, y.base + offset * es, box, es);
  return nullptr;
}

}  // namespace

weft_status* RegisterArrayLayoutKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = registrar.Add("Transpose", {}, Guarded<TransposeKernel>)) ||
      (s = registrar.Add("Slice", {}, Guarded<SliceKernel>)) ||
      (s = registrar.Add("Tile", {}, Guarded<TileKernel>)) ||
      (s = registrar.Add("Pad", {}, Guarded<PadKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
