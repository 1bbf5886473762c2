// MatMul(a, b) with transpose_a and transpose_b: a tiled kernel for GPUs and
// a row-vector kernel for CPU devices (sources_matmul.cc), both reading
// either layout through strides; and MatMulApplyGradientDescent, the
// product followed by the update's kernel.
#include <atomic>
#include <cstdint>

#include "clblast.h"
#include "kernel_call.h"

namespace weft_opencl {
namespace {

bool g_fp64 = false;

// Set when a CLBlast call failed (a kernel it could not build on this
// device, say): the process's products run the plugin's kernels from then.
std::atomic<bool> g_clblast_failed{false};

// Whether C = op(A) op(B) goes to CLBlast, when it is loaded: on GPUs and
// other devices that are not CPUs, unless WEFT_OPENCL_GEMM=builtin; on CPU
// devices only with WEFT_OPENCL_GEMM=clblast.  On PoCL (a CPU device, the
// only OpenCL device these machines have) the plugin's matmul_rows kernel
// beat CLBlast 1.5.3 at every size measured: float32 1024^3 141-155 vs
// 22-23 GFLOP/s on a quiet machine; under load 256^3 76 vs 7.5, 2048^3 31
// vs 9.4 (bench/opencl_matmul, 2-core EPYC; README, "OpenCL against the
// CPU plugin").  CLBlast is tuned for GPUs, where the plugin's tiled kernel is
// plain: that choice is unmeasured here (no GPU), and the README says so.
bool UseClBlast(const KernelCall& call, int32_t dtype) {
  if (dtype != WEFT_FLOAT32 && dtype != WEFT_FLOAT64) return false;
  const GemmChoice choice = GemmChoiceFromEnvironment();
  const bool wanted = choice == GemmChoice::kClBlast ||
                      (choice == GemmChoice::kAuto && !call.device()->is_cpu);
  return wanted && !g_clblast_failed.load(std::memory_order_relaxed) &&
         LoadClBlast() != nullptr;
}

// C [m, n] = op(A) op(B) by CLBlast's GEMM on the stream's queue: 0, or
// CLBlast's status (negative) when it refused, having enqueued nothing
// that writes C.
int ClBlastGemm(KernelCall& call, const weft_kernel_tensor& a,
                const weft_kernel_tensor& b, const weft_kernel_tensor& c,
                int64_t m, int64_t n, int64_t k, bool transpose_a,
                bool transpose_b) {
  const ClBlastApi* blas = LoadClBlast();
  cl_command_queue queue = call.plugin_stream()->queue;
  const BufferArg ab = Buffer(a), bb = Buffer(b), cb = Buffer(c);
  const ClBlastTranspose ta = transpose_a ? kClBlastTrans : kClBlastNoTrans;
  const ClBlastTranspose tb = transpose_b ? kClBlastTrans : kClBlastNoTrans;
  const size_t lda = static_cast<size_t>(a.dims[1]);
  const size_t ldb = static_cast<size_t>(b.dims[1]);
  int status;
  if (a.dtype == WEFT_FLOAT32) {
    status = blas->sgemm(kClBlastRowMajor, ta, tb, m, n, k, 1.0f, ab.buffer,
                         ab.offset, lda, bb.buffer, bb.offset, ldb, 0.0f,
                         cb.buffer, cb.offset, n, &queue, nullptr);
  } else {
    status = blas->dgemm(kClBlastRowMajor, ta, tb, m, n, k, 1.0, ab.buffer,
                         ab.offset, lda, bb.buffer, bb.offset, ldb, 0.0,
                         cb.buffer, cb.offset, n, &queue, nullptr);
  }
  if (status != 0) g_clblast_failed.store(true, std::memory_order_relaxed);
  return status;
}

// The kernel's tile of C per work-group, and the group's shape.
constexpr int64_t kTile = 64;
constexpr size_t kItems = 16;

// op(a) [m, k] and op(b) [k, n], as MatMul's attributes say.
struct ProductDims {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
};

// Reads inputs `first` and `first` + 1 as MatMul's a and b, with its
// attributes, and checks they multiply.
weft_status* ReadProduct(KernelCall& call, int32_t first,
                         weft_kernel_tensor* a, weft_kernel_tensor* b,
                         ProductDims* d) {
  if (weft_status* s = call.Input(first, a)) return s;
  if (weft_status* s = call.Input(first + 1, b)) return s;
  if (weft_status* s =
          call.AttrBool("transpose_a", false, &d->transpose_a)) {
    return s;
  }
  if (weft_status* s =
          call.AttrBool("transpose_b", false, &d->transpose_b)) {
    return s;
  }
  if (a->dtype != b->dtype) {
    return call.Error(WEFT_INVALID_ARGUMENT, "a is %s but b is %s",
                      weft_dtype_name_of(a->dtype),
                      weft_dtype_name_of(b->dtype));
  }
  if (a->dtype != WEFT_FLOAT32 && !(g_fp64 && a->dtype == WEFT_FLOAT64)) {
    return call.UnsupportedDtype(a->dtype);
  }
  if (a->rank != 2 || b->rank != 2) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "a and b must be matrices (rank %d and %d)", a->rank,
                      b->rank);
  }
  d->m = d->transpose_a ? a->dims[1] : a->dims[0];
  d->k = d->transpose_a ? a->dims[0] : a->dims[1];
  const int64_t kb = d->transpose_b ? b->dims[1] : b->dims[0];
  d->n = d->transpose_b ? b->dims[0] : b->dims[1];
  if (d->k != kb) {
    return call.Error(WEFT_INVALID_ARGUMENT,
                      "inner dimensions differ: a gives %lld, b %lld",
                      static_cast<long long>(d->k),
                      static_cast<long long>(kb));
  }
  return nullptr;
}

// Enqueues c [m, n] (not empty) = op(a) op(b).
weft_status* EnqueueProduct(KernelCall& call, const weft_kernel_tensor& a,
                            const weft_kernel_tensor& b,
                            const weft_kernel_tensor& c,
                            const ProductDims& d) {
  const int64_t m = d.m, n = d.n, k = d.k;
  const bool transpose_a = d.transpose_a, transpose_b = d.transpose_b;
  if (k == 0) {  // empty sums
    const unsigned char zeros[8] = {};
    return call.Fill(c, zeros, weft_dtype_size_of(c.dtype));
  }
  // Element (row, col) of a stored [rows, cols] matrix is at
  // row * cols + col; a transposed operand swaps the roles.
  if (UseClBlast(call, a.dtype)) {
    const int status =
        ClBlastGemm(call, a, b, c, m, n, k, transpose_a, transpose_b);
    if (status == 0) return nullptr;
    // Asked for by name, a failure is an error; chosen by the plugin,
    // the product falls back to its own kernel (and so do later ones).
    if (GemmChoiceFromEnvironment() == GemmChoice::kClBlast) {
      return call.Error(WEFT_INTERNAL,
                        "CLBlast's GEMM failed (status %d) with "
                        "WEFT_OPENCL_GEMM=clblast",
                        status);
    }
  }
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
}

weft_status* MatMulKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor a, b, c;
    ProductDims d;
    if (weft_status* s = ReadProduct(call, 0, &a, &b, &d)) return s;
    const int64_t dims[2] = {d.m, d.n};
    if (weft_status* s = call.AllocateOutput(0, a.dtype, dims, 2, &c)) {
      return s;
    }
    if (c.element_count == 0) return nullptr;
    return EnqueueProduct(call, a, b, c, d);
  });
}

// MatMulApplyGradientDescent(var, alpha, a, b): the product into scratch,
// then ApplyGradientDescent's own kernel (sources_train.cc), so the result
// is the two ops' (the planner fuses them on the CPU, where it saves a
// pass; here it saves the executor a node).
weft_status* MatMulDescentKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor var, alpha, a, b, out;
    ProductDims d;
    if (weft_status* s = call.Input(0, &var)) return s;
    if (weft_status* s = call.Input(1, &alpha)) return s;
    if (weft_status* s = ReadProduct(call, 2, &a, &b, &d)) return s;
    if (var.dtype != a.dtype || alpha.dtype != a.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "var is %s, alpha %s and the product %s",
                        weft_dtype_name_of(var.dtype),
                        weft_dtype_name_of(alpha.dtype),
                        weft_dtype_name_of(a.dtype));
    }
    if (alpha.element_count != 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "input 1 must be a scalar, has %lld elements",
                        static_cast<long long>(alpha.element_count));
    }
    if (var.rank != 2 || var.dims[0] != d.m || var.dims[1] != d.n) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "the product is [%lld,%lld]; the variable has rank "
                        "%d", static_cast<long long>(d.m),
                        static_cast<long long>(d.n), var.rank);
    }
    if (weft_status* s =
            call.AllocateOutput(0, var.dtype, var.dims, var.rank, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    TempBuffer scratch;
    if (weft_status* s = scratch.Create(call, out.byte_size)) return s;
    weft_kernel_tensor delta = out;
    delta.data = scratch.arg().buffer;
    delta.offset = 0;
    if (weft_status* s = EnqueueProduct(call, a, b, delta, d)) return s;
    char name[64];
    KernelName(name, sizeof name, "apply_gradient_descent", var.dtype);
    return call.Launch(Program::kTrain, name, Linear(out.element_count),
                       Buffer(var), Buffer(alpha), scratch.arg(), Buffer(out),
                       static_cast<cl_long>(out.element_count));
  });
}

}  // namespace

weft_status* RegisterMatMulKernels(weft_kernel_registrar* registrar,
                                   bool fp64) {
  g_fp64 = fp64;
  const int32_t types[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  if (weft_status* s = RegisterKernel(registrar, "MatMul", "T", types,
                                      fp64 ? 2 : 1, MatMulKernel, nullptr)) {
    return s;
  }
  return RegisterKernel(registrar, "MatMulApplyGradientDescent", "T", types,
                        fp64 ? 2 : 1, MatMulDescentKernel, nullptr);
}

}  // namespace weft_opencl
