// Strided box copies, element fills and attribute values as elements.
#include "array_copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <Eigen/Core>

namespace weft_cpu {
namespace {

// An unsigned integer of N bytes: the unit a byte mover copies.
template <size_t N> struct Unit;
template <> struct Unit<1> { using type = uint8_t; };
template <> struct Unit<2> { using type = uint16_t; };
template <> struct Unit<4> { using type = uint32_t; };
template <> struct Unit<8> { using type = uint64_t; };

template <size_t N>
void StridedRun(const char* src, char* dst, int64_t n, int64_t src_stride,
                int64_t dst_stride) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * dst_stride * N, src + i * src_stride * N, N);
  }
}

void CopyRun(const char* src, char* dst, int64_t n, int64_t src_stride,
             int64_t dst_stride, size_t element_size) {
  if (src_stride == 1 && dst_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * element_size);
    return;
  }
  switch (element_size) {
    case 1: return StridedRun<1>(src, dst, n, src_stride, dst_stride);
    case 2: return StridedRun<2>(src, dst, n, src_stride, dst_stride);
    case 4: return StridedRun<4>(src, dst, n, src_stride, dst_stride);
    default: return StridedRun<8>(src, dst, n, src_stride, dst_stride);
  }
}

// Drops size-1 dimensions and merges neighbours that are contiguous in both
// layouts, so that e.g. a Transpose of [2,3,4] by [0,2,1] becomes a batch of
// 2 transposes and a Slice of whole rows becomes one memcpy.
Box Simplify(const Box& in) {
  Box out;
  for (int32_t i = 0; i < in.rank; ++i) {
    const int64_t n = in.size[i], s = in.src_stride[i], d = in.dst_stride[i];
    if (n == 1) continue;
    const int32_t last = out.rank - 1;
    if (last >= 0 && out.src_stride[last] == s * n &&
        out.dst_stride[last] == d * n) {
      out.size[last] *= n;
      out.src_stride[last] = s;
      out.dst_stride[last] = d;
    } else {
      out.size[out.rank] = n;
      out.src_stride[out.rank] = s;
      out.dst_stride[out.rank] = d;
      ++out.rank;
    }
  }
  return out;
}

// Side of the square tiles a transposing copy moves at a time.
constexpr int64_t kTile = 32;

// One tile of a transpose: element (i, j) is read at src + i + j * src_col
// and written at dst + i * dst_row + j (in elements).  Reading the tile's
// source rows whole into a local buffer first matters when the strides are
// powers of two: the 32 source lines a column walk touches would otherwise
// share one L1 set and evict each other on every row.
template <size_t N>
void TransposeTile(const char* src, char* dst, int64_t ni, int64_t nj,
                   int64_t src_col, int64_t dst_row) {
  unsigned char buffer[kTile][kTile * N];
  for (int64_t j = 0; j < nj; ++j) {
    std::memcpy(buffer[j], src + j * src_col * N, static_cast<size_t>(ni) * N);
  }
  for (int64_t i = 0; i < ni; ++i) {
    char* row = dst + i * dst_row * N;
    for (int64_t j = 0; j < nj; ++j) {
      std::memcpy(row + j * N, buffer[j] + i * N, N);
    }
  }
}

// The two innermost dimensions swap layouts (source contiguous along the
// second to last, destination along the last): copy tile by tile instead of
// striding through the whole source for every destination row.
void CopyTransposedPlanes(const weft_kernel_context* ctx, const char* src,
                          char* dst, const Box& b, size_t es) {
  const int32_t r = b.rank - 2;  // the row dimension; r + 1 is the column
  const int64_t rows = b.size[r], cols = b.size[r + 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t planes = Product(b.size, 0, r);
  const int64_t src_col = b.src_stride[r + 1], dst_row = b.dst_stride[r];
  auto tile = es == 1 ? TransposeTile<1>
              : es == 2 ? TransposeTile<2>
              : es == 4 ? TransposeTile<4>
                        : TransposeTile<8>;
  ParallelFor(ctx, planes * row_tiles, kTile * cols, 2.0 * kTile * cols,
              [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t plane = item / row_tiles, src_off = 0, dst_off = 0;
      for (int32_t d = r - 1; d >= 0; --d) {
        const int64_t index = plane % b.size[d];
        plane /= b.size[d];
        src_off += index * b.src_stride[d];
        dst_off += index * b.dst_stride[d];
      }
      const int64_t i0 = item % row_tiles * kTile;
      const int64_t ni = std::min(rows - i0, kTile);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        tile(src + (src_off + i0 + j0 * src_col) * es,
             dst + (dst_off + i0 * dst_row + j0) * es, ni,
             std::min(cols - j0, kTile), src_col, dst_row);
      }
    }
  });
}

template <typename E>
void FillUnits(char* dst, int64_t count, const void* value) {
  E v;
  std::memcpy(&v, value, sizeof v);
  std::fill_n(reinterpret_cast<E*>(dst), count, v);
}

template <typename I>
I ToInteger(double v) {
  // The first value past the range, exactly representable as a double.
  const double end = std::ldexp(1.0, std::numeric_limits<I>::digits);
  const double begin = std::is_signed_v<I> ? -end : 0.0;
  return v >= begin && v < end ? static_cast<I>(v) : I(0);
}

template <typename T>
bool Store(T v, void* out) {
  std::memcpy(out, &v, sizeof v);
  return true;
}

}  // namespace

void RowMajorStrides(const int64_t* dims, int32_t rank, int64_t* strides) {
  int64_t s = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= dims[i];
  }
}

int64_t Product(const int64_t* dims, int32_t begin, int32_t end) {
  int64_t n = 1;
  for (int32_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

void CopyBox(const weft_kernel_context* ctx, const char* src, char* dst,
             Box box, size_t es) {
  for (int32_t i = 0; i < box.rank; ++i) {
    if (box.size[i] == 0) return;
  }
  const Box b = Simplify(box);
  if (b.rank == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  const int32_t last = b.rank - 1;
  if (b.rank >= 2 && b.dst_stride[last] == 1 && b.src_stride[last] != 1 &&
      b.src_stride[last - 1] == 1 && b.size[last - 1] >= kTile / 2) {
    CopyTransposedPlanes(ctx, src, dst, b, es);
    return;
  }
  const int64_t inner = b.size[last];
  const bool contiguous = b.src_stride[last] == 1 && b.dst_stride[last] == 1;
  ParallelFor(ctx, Product(b.size, 0, last), inner,
              static_cast<double>(inner) * (contiguous ? 0.25 : 2.0),
              [&](int64_t begin, int64_t end) {
    int64_t index[WEFT_MAX_RANK];
    int64_t src_off = 0, dst_off = 0, rest = begin;
    for (int32_t d = last - 1; d >= 0; --d) {
      index[d] = rest % b.size[d];
      rest /= b.size[d];
      src_off += index[d] * b.src_stride[d];
      dst_off += index[d] * b.dst_stride[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      CopyRun(src + src_off * es, dst + dst_off * es, inner,
              b.src_stride[last], b.dst_stride[last], es);
      for (int32_t d = last - 1; d >= 0; --d) {
        src_off += b.src_stride[d];
        dst_off += b.dst_stride[d];
        if (++index[d] < b.size[d]) break;
        src_off -= b.src_stride[d] * b.size[d];
        dst_off -= b.dst_stride[d] * b.size[d];
        index[d] = 0;
      }
    }
  });
}

void FillElements(const weft_kernel_context* ctx, char* dst, int64_t count,
                  const void* value, size_t es) {
  ParallelFor(ctx, count, 1, 0.25, [&](int64_t begin, int64_t end) {
    char* at = dst + begin * es;
    switch (es) {
      case 1: return FillUnits<Unit<1>::type>(at, end - begin, value);
      case 2: return FillUnits<Unit<2>::type>(at, end - begin, value);
      case 4: return FillUnits<Unit<4>::type>(at, end - begin, value);
      default: return FillUnits<Unit<8>::type>(at, end - begin, value);
    }
  });
}

bool EncodeElement(double v, int32_t dtype, void* out) {
  switch (dtype) {
    case WEFT_FLOAT32: return Store(static_cast<float>(v), out);
    case WEFT_FLOAT64: return Store(v, out);
    case WEFT_FLOAT16:
      return Store(Eigen::half(static_cast<float>(v)), out);
    case WEFT_BFLOAT16:
      return Store(Eigen::bfloat16(static_cast<float>(v)), out);
    case WEFT_BOOL: return Store(static_cast<uint8_t>(v != 0), out);
    case WEFT_INT8: return Store(ToInteger<int8_t>(v), out);
    case WEFT_INT16: return Store(ToInteger<int16_t>(v), out);
    case WEFT_INT32: return Store(ToInteger<int32_t>(v), out);
    case WEFT_INT64: return Store(ToInteger<int64_t>(v), out);
    case WEFT_UINT8: return Store(ToInteger<uint8_t>(v), out);
    case WEFT_UINT16: return Store(ToInteger<uint16_t>(v), out);
    case WEFT_UINT32: return Store(ToInteger<uint32_t>(v), out);
    case WEFT_UINT64: return Store(ToInteger<uint64_t>(v), out);
    default: return false;
  }
}

weft_status* NormalizeAxis(const weft_kernel_context* ctx, const char* name,
                           int64_t axis, int32_t count, int32_t* out) {
  const int64_t a = axis < 0 ? axis + count : axis;
  if (a < 0 || a >= count) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "attribute %s = %lld is out of range [%d, %d)", name,
                     static_cast<long long>(axis), -count, count);
  }
  *out = static_cast<int32_t>(a);
  return nullptr;
}

}  // namespace weft_cpu
