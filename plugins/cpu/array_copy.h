// Byte movers shared by the array kernels.  Data movement does not care what
// the bytes mean, so everything here works by element size (1, 2, 4 or 8
// bytes) and serves every dtype, bool and float16 included.
#ifndef WEFT_PLUGINS_CPU_ARRAY_COPY_H_
#define WEFT_PLUGINS_CPU_ARRAY_COPY_H_

#include <cstddef>
#include <cstdint>

#include "kernel.h"

namespace weft_cpu {

// A box of elements read with one set of strides and written with another;
// strides are in elements.  Transpose, Slice, Pad and Tile are all one box.
struct Box {
  int32_t rank = 0;
  int64_t size[WEFT_MAX_RANK];
  int64_t src_stride[WEFT_MAX_RANK];
  int64_t dst_stride[WEFT_MAX_RANK];
};

// Row-major strides (in elements) of `dims`.
void RowMajorStrides(const int64_t* dims, int32_t rank, int64_t* strides);

// Copies `box` from src to dst, parallel when large.  Dimensions of size 1
// are dropped and dimensions contiguous in both layouts are merged first,
// so the innermost loop is a memcpy whenever the layouts allow.
void CopyBox(const weft_kernel_context* ctx, const char* src, char* dst,
             Box box, size_t element_size);

// Writes the element at `value` (element_size bytes) `count` times.
void FillElements(const weft_kernel_context* ctx, char* dst, int64_t count,
                  const void* value, size_t element_size);

// The bytes of `value` as one element of `dtype` (at most 8 bytes).  Floats
// round; for integers and bool the shape functions only admit values the
// type holds exactly, and anything else becomes 0 (never undefined).
// False for a dtype without values.
bool EncodeElement(double value, int32_t dtype, void* out);

// Normalises `axis` against `count` axes (rank, or rank + 1 where an axis
// is inserted).  The shape function checked the attribute already; this
// guards a graph whose input shape was unknown when it was built.
weft_status* NormalizeAxis(const weft_kernel_context* ctx, const char* name,
                           int64_t axis, int32_t count, int32_t* out);

// Product of dims[begin, end).
int64_t Product(const int64_t* dims, int32_t begin, int32_t end);

// Family hooks, called by RegisterArrayKernels.
weft_status* RegisterArrayLayoutKernels(const Registrar& registrar);
weft_status* RegisterArrayJoinKernels(const Registrar& registrar);
weft_status* RegisterArrayIndexKernels(const Registrar& registrar);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ARRAY_COPY_H_
