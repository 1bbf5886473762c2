// MatMul(a, b) with transpose_a and transpose_b: a tiled kernel for GPUs and
// a row-vector kernel for CPU devices (sources_matmul.cc), both reading
// either layout through strides.
#include <cstdint>

#include "kernel_call.h"

namespace weft_opencl {
namespace {

bool g_fp64 = false;

// The kernel's tile of C per work-group, and the group's shape.
constexpr int64_t kTile = 64;
constexpr size_t kItems = 16;

weft_status* MatMulKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor a, b, c;
    if (weft_status* s = call.Input(0, &a)) return s;
    if (weft_status* s = call.Input(1, &b)) return s;
    bool transpose_a = false, transpose_b = false;
    if (weft_status* s = call.AttrBool("transpose_a", false, &transpose_a)) {
      return s;
    }
    if (weft_status* s = call.AttrBool("transpose_b", false, &transpose_b)) {
      return s;
    }
    if (a.dtype != b.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "a is %s but b is %s",
                        weft_dtype_name_of(a.dtype),
                        weft_dtype_name_of(b.dtype));
    }
    if (a.dtype != WEFT_FLOAT32 && !(g_fp64 && a.dtype == WEFT_FLOAT64)) {
      return call.UnsupportedDtype(a.dtype);
    }
    if (a.rank != 2 || b.rank != 2) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "a and b must be matrices (rank %d and %d)", a.rank,
                        b.rank);
    }
    const int64_t m = transpose_a ? a.dims[1] : a.dims[0];
    const int64_t k = transpose_a ? a.dims[0] : a.dims[1];
    const int64_t kb = transpose_b ? b.dims[1] : b.dims[0];
    const int64_t n = transpose_b ? b.dims[0] : b.dims[1];
    if (k != kb) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "inner dimensions differ: a gives %lld, b %lld",
                        static_cast<long long>(k),
                        static_cast<long long>(kb));
    }
    const int64_t dims[2] = {m, n};
    if (weft_status* s = call.AllocateOutput(0, a.dtype, dims, 2, &c)) {
      return s;
    }
    if (c.element_count == 0) return nullptr;
    if (k == 0) {  // empty sums
      const unsigned char zeros[8] = {};
      return call.Fill(c, zeros, weft_dtype_size_of(c.dtype));
    }
    // Element (row, col) of a stored [rows, cols] matrix is at
    // row * cols + col; a transposed operand swaps the roles.
    const cl_long a_rs = transpose_a ? 1 : k, a_cs = transpose_a ? m : 1;
    const cl_long b_rs = transpose_b ? 1 : n, b_cs = transpose_b ? k : 1;
    WorkSize work;
    work.dims = 2;
    const bool rows = call.device()->is_cpu;
    if (rows) {  // 16 columns by 8 rows per item; the device picks groups
      work.global[0] = static_cast<size_t>((n + 15) / 16);
      work.global[1] = static_cast<size_t>((m + 7) / 8);
    } else {
      work.global[0] = static_cast<size_t>((n + kTile - 1) / kTile) * kItems;
      work.global[1] = static_cast<size_t>((m + kTile - 1) / kTile) * kItems;
      work.local[0] = work.local[1] = kItems;
    }
    char name[32];
    return call.Launch(Program::kMatMul,
                       KernelName(name, sizeof name,
                                  rows ? "matmul_rows" : "matmul", a.dtype),
                       work,
                       Buffer(a), Buffer(b), Buffer(c), static_cast<cl_long>(m),
                       static_cast<cl_long>(n), static_cast<cl_long>(k), a_rs,
                       a_cs, b_rs, b_cs);
  });
}

}  // namespace

weft_status* RegisterMatMulKernels(weft_kernel_registrar* registrar,
                                   bool fp64) {
  g_fp64 = fp64;
  const int32_t types[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  return RegisterKernel(registrar, "MatMul", "T", types, fp64 ? 2 : 1,
                        MatMulKernel, nullptr);
}

}  // namespace weft_opencl
