// CLBlast, the maintained OpenCL BLAS, found at run time (libclblast.so.1,
// Debian's libclblast1): MatMul and BatchMatMul hand their float32 and
// float64 products to its GEMM where it is present and chosen (see
// matmul.cc for when), on the kernel's own queue and buffers.  Loaded with
// dlopen, like the ICD loader, so the plugin neither needs CLBlast to build
// nor to load; without it every product runs the plugin's own kernels.
#ifndef WEFT_PLUGINS_OPENCL_CLBLAST_H_
#define WEFT_PLUGINS_OPENCL_CLBLAST_H_

#include <cstddef>

#include "cl_api.h"

namespace weft_opencl {

// CLBlast's C API (clblast_c.h), its values as the library defines them.
enum ClBlastLayout { kClBlastRowMajor = 101 };
enum ClBlastTranspose { kClBlastNoTrans = 111, kClBlastTrans = 112 };

template <typename T>
using ClBlastGemmFn = int (*)(ClBlastLayout layout, ClBlastTranspose a_trans,
                              ClBlastTranspose b_trans, size_t m, size_t n,
                              size_t k, T alpha, cl_mem a, size_t a_offset,
                              size_t a_ld, cl_mem b, size_t b_offset,
                              size_t b_ld, T beta, cl_mem c, size_t c_offset,
                              size_t c_ld, cl_command_queue* queue,
                              cl_event* event);

struct ClBlastApi {
  ClBlastGemmFn<float> sgemm = nullptr;
  ClBlastGemmFn<double> dgemm = nullptr;
};

// The library, or NULL when it is absent or WEFT_OPENCL_GEMM=builtin.
// Loaded once per process and never closed.
const ClBlastApi* LoadClBlast();

// WEFT_OPENCL_GEMM: "clblast" forces CLBlast wherever it is loaded,
// "builtin" the plugin's kernels; unset (or anything else), the plugin
// chooses (matmul.cc).  For benchmarks comparing the two.
enum class GemmChoice { kAuto, kClBlast, kBuiltin };
GemmChoice GemmChoiceFromEnvironment();

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_CLBLAST_H_
