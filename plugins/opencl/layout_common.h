// Host-side helpers shared by the kernels that move elements of any dtype
// (array.cc: Transpose, Concat, Split, Gather, Select; layout.cc: Slice,
// Tile, Pad, Pack, Unpack, OneHot; grad.cc: SliceGrad, PadGrad): the
// argument checks shared with the CUDA plugin (common/layout_attrs.h), the
// element-size kernel names, and the row copies that
// Concat and Pack join with and Split and Unpack cut with (copy_rows_<size>
// in the array program).
#ifndef WEFT_PLUGINS_OPENCL_LAYOUT_COMMON_H_
#define WEFT_PLUGINS_OPENCL_LAYOUT_COMMON_H_

#include <cstdint>
#include <cstdio>

#include "kernel_call.h"
#include "layout_attrs.h"

namespace weft_opencl {

using weft_plugin_kit::BoxGradArgs;
using weft_plugin_kit::ConcatArgs;
using weft_plugin_kit::EncodeElement;
using weft_plugin_kit::GatherArgs;
using weft_plugin_kit::GatherGradArgs;
using weft_plugin_kit::OneHotArgs;
using weft_plugin_kit::OneHotAttrs;
using weft_plugin_kit::PackArgs;
using weft_plugin_kit::PadArgs;
using weft_plugin_kit::ShapeArgs;
using weft_plugin_kit::ShapeOp;
using weft_plugin_kit::ShapeValues;
using weft_plugin_kit::SliceArgs;
using weft_plugin_kit::SplitArgs;
using weft_plugin_kit::TileArgs;
using weft_plugin_kit::TransposeArgs;
using weft_plugin_kit::UnpackArgs;

// "<name>_<b1|b2|b4|b8>" for `dtype` into `out`, or an error.
inline weft_status* MoveKernel(const KernelCall& call, const char* name,
                               int32_t dtype, char* out, size_t size) {
  const char* suffix = SizeSuffix(weft_dtype_size_of(dtype));
  if (suffix == nullptr) return call.UnsupportedDtype(dtype);
  std::snprintf(out, size, "%s_%s", name, suffix);
  return nullptr;
}

// The product of dims[begin, end).
inline int64_t DimProduct(const int64_t* dims, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// Copies `rows` rows of `cols` elements from x (rows of x_row, starting at
// column x_col) to z (rows of z_row, at column z_col) with `kernel`, a
// copy_rows_<size> of the array program.
inline weft_status* CopyRows(KernelCall& call, const char* kernel,
                             const weft_kernel_tensor& x,
                             const weft_kernel_tensor& z, int64_t rows,
                             int64_t cols, int64_t x_row, int64_t x_col,
                             int64_t z_row, int64_t z_col) {
  const int64_t n = rows * cols;
  if (n == 0) return nullptr;
  return call.Launch(Program::kArray, kernel, Linear(n), Buffer(x), Buffer(z),
                     static_cast<cl_long>(n), static_cast<cl_long>(cols),
                     static_cast<cl_long>(x_row), static_cast<cl_long>(x_col),
                     static_cast<cl_long>(z_row),
                     static_cast<cl_long>(z_col));
}

// Allocates output 0 (`dtype`, `dims`) and joins the node's inputs into it
// at `axis`, as Concat and Pack do: its row o (its elements from `axis` on)
// is input 0's row o (its elements from `axis` on: Pack's axis is new to
// the output), then input 1's...
inline weft_status* JoinInputs(KernelCall& call, int64_t axis, int32_t dtype,
                               const int64_t* dims, int32_t rank) {
  char name[32];
  if (weft_status* s = MoveKernel(call, "copy_rows", dtype, name,
                                  sizeof name)) {
    return s;
  }
  weft_kernel_tensor z;
  if (weft_status* s = call.AllocateOutput(0, dtype, dims, rank, &z)) {
    return s;
  }
  if (z.element_count == 0) return nullptr;
  const int64_t outer = DimProduct(z.dims, 0, axis);
  const int64_t z_row = DimProduct(z.dims, axis, z.rank);
  const int32_t count = call.host()->kernel_num_inputs(call.context());
  int64_t column = 0;
  for (int32_t k = 0; k < count; ++k) {
    weft_kernel_tensor v;
    if (weft_status* s = call.Input(k, &v)) return s;
    const int64_t cols = DimProduct(v.dims, axis, v.rank);
    if (weft_status* s = CopyRows(call, name, v, z, outer, cols, cols, 0,
                                  z_row, column)) {
      return s;
    }
    column += cols;
  }
  return nullptr;
}

// Allocates `pieces` outputs of `dims` and cuts x into them at `axis`, as
// Split and Unpack do: x's row o (its elements from `axis` on) is output
// 0's row o, then output 1's...
inline weft_status* CutInto(KernelCall& call, const weft_kernel_tensor& x,
                            int64_t axis, int64_t pieces, const int64_t* dims,
                            int32_t rank) {
  char name[32];
  if (weft_status* s = MoveKernel(call, "copy_rows", x.dtype, name,
                                  sizeof name)) {
    return s;
  }
  const int64_t outer = DimProduct(x.dims, 0, axis);
  const int64_t x_row = DimProduct(x.dims, axis, x.rank);
  const int64_t cols = pieces > 0 ? x_row / pieces : 0;
  for (int32_t k = 0; k < pieces; ++k) {
    weft_kernel_tensor z;
    if (weft_status* s = call.AllocateOutput(k, x.dtype, dims, rank, &z)) {
      return s;
    }
    if (weft_status* s = CopyRows(call, name, x, z, outer, cols, x_row,
                                  k * cols, cols, 0)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_LAYOUT_COMMON_H_
