// Optimizer kernels: ApplyGradientDescent, ApplyMomentum, ApplyAdam, and
// MatMulApplyGradientDescent (the planner's fusion of a MatMul into the
// ApplyGradientDescent that alone reads it, runtime/session/fuse.cc).
// The host hands them the variables' current values as their leading inputs
// and publishes their outputs as the new values.  Where the host allows it
// (a variable whose buffer nothing else holds) a new value is written over
// the old one: every element is computed from the same element of the
// inputs, so reading and writing one buffer is safe, and nothing can fail
// once writing starts.
#include <cmath>
#include <cstdint>
#include <cstring>

#include <Eigen/Core>

#include "elementwise_types.h"
#include "host_memory.h"
#include "kernel.h"
#include "matmul_eigen.h"
#include "matmul_product.h"
#if WEFT_CPU_HAVE_ONEDNN
#include "matmul_onednn.h"
#endif

namespace weft_cpu {
namespace {

constexpr int32_t kMaxInputs = 10;  // ApplyAdam's

// An update's inputs and its outputs (the variables' new values).
struct Update {
  Tensor in[kMaxInputs];
  Tensor out[3];
};

WEFT_CPU_COLD weft_status* ShapeMismatch(const weft_kernel_context* ctx,
                                         int32_t index, const Tensor& got,
                                         const Tensor& want) {
  char a[96], b[96];
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "input %d has shape %s; the variable has shape %s", index,
                   FormatShape(got.dims, got.rank, a, sizeof a),
                   FormatShape(want.dims, want.rank, b, sizeof b));
}

bool SameShape(const Tensor& a, const Tensor& b) {
  return a.rank == b.rank &&
         std::memcmp(a.dims, b.dims, sizeof(int64_t) * a.rank) == 0;
}

// Reads the inputs: `num_refs` variable values, then data inputs of which
// those flagged in `scalar_mask` (bit i for input i) are scalars and the
// others have the variables' shape.  Allocates one output per variable,
// over the variable's own buffer where the host allows.
weft_status* Prepare(weft_kernel_context* ctx, int32_t num_inputs,
                     int32_t num_refs, unsigned scalar_mask, Update* u) {
  for (int32_t i = 0; i < num_inputs; ++i) {
    Tensor& t = u->in[i];
    if (weft_status* s = ReadInput(ctx, i, &t)) return s;
    if (t.dtype != u->in[0].dtype) {
      return DtypeMismatch(ctx, "input", t.dtype, u->in[0].dtype);
    }
    if ((scalar_mask >> i) & 1u) {
      if (t.count != 1) {
        return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                         "input %d must be a scalar, has %lld elements", i,
                         static_cast<long long>(t.count));
      }
    } else if (!SameShape(t, u->in[0])) {
      return ShapeMismatch(ctx, i, t, u->in[0]);
    }
  }
  const Tensor& var = u->in[0];
  for (int32_t r = 0; r < num_refs; ++r) {
    if (weft_status* s =
            AllocateOutputOver(ctx, r, r, var.dtype, var.dims, var.rank,
                               &u->out[r])) {
      return s;
    }
  }
  return nullptr;
}

template <typename T>
using Vec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using MutableVec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
Vec<T> Slice(const Tensor& t, int64_t begin, int64_t end) {
  return Vec<T>(t.data<T>() + begin, end - begin);
}
template <typename T>
MutableVec<T> MutableSlice(const Tensor& t, int64_t begin, int64_t end) {
  return MutableVec<T>(t.data<T>() + begin, end - begin);
}
template <typename T>
T Scalar(const Tensor& t) {
  return t.data<T>()[0];
}

// Runs body(T{}, begin, end) over the variables' elements, in parallel when
// they are many.
template <typename Body>
weft_status* ForElements(weft_kernel_context* ctx, const Update& u,
                         double cycles_per_element, Body&& body) {
  const int64_t n = u.in[0].count;
  if (n == 0) return nullptr;
  return DispatchDtype<kFloatDtypes>(ctx, u.in[0].dtype, [&](auto tag) {
    ParallelFor(ctx, n, 1, cycles_per_element,
                [&](int64_t begin, int64_t end) { body(tag, begin, end); });
    return static_cast<weft_status*>(nullptr);
  });
}

// out = var - alpha * delta over elements [b, e) (out may be var).
template <typename T>
void Descend(const Tensor& out, const Tensor& var, T alpha,
             const Tensor& delta, int64_t b, int64_t e) {
  MutableSlice<T>(out, b, e) =
      Slice<T>(var, b, e) - alpha * Slice<T>(delta, b, e);
}

// var - alpha * delta.
weft_status* GradientDescentKernel(weft_kernel_context* ctx) {
  Update u;
  if (weft_status* s = Prepare(ctx, 3, 1, 1u << 1, &u)) return s;
  return ForElements(ctx, u, 2, [&](auto tag, int64_t b, int64_t e) {
    using T = decltype(tag);
    Descend<T>(u.out[0], u.in[0], Scalar<T>(u.in[1]), u.in[2], b, e);
  });
}

bool Overlap(const Tensor& x, const Tensor& y) {
  const char* xb = static_cast<const char*>(x.base);
  const char* yb = static_cast<const char*>(y.base);
  const size_t element = weft_dtype_size_of(x.dtype);
  return xb < yb + static_cast<size_t>(y.count) * element &&
         yb < xb + static_cast<size_t>(x.count) * element;
}

// Inputs var, alpha, a, b (attrs transpose_a, transpose_b as MatMul's):
// var - alpha * op(a) · op(b), ApplyGradientDescent's output for MatMul's
// delta.  A float32 product oneDNN runs goes as one primitive writing over
// the new value (MatMulSubtractScaledOnednn): the gradient is never stored
// and the update has no pass of its own (the MLP's 784x256 weights: ~12 of
// a 370 us step).  Otherwise the two kernels' own arithmetic in turn.
weft_status* MatMulDescentKernel(weft_kernel_context* ctx) {
  Tensor var, alpha, a, b;
  MatMulShape shape;
  if (weft_status* s = ReadInput(ctx, 0, &var)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &alpha)) return s;
  if (weft_status* s = ReadMatMulOperands(ctx, 2, &a, &b, &shape)) return s;
  if (alpha.dtype != var.dtype)
    return DtypeMismatch(ctx, "input alpha", alpha.dtype, var.dtype);
  if (a.dtype != var.dtype)
    return DtypeMismatch(ctx, "input a", a.dtype, var.dtype);
  if (alpha.count != 1) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "input 1 must be a scalar, has %lld elements",
                     static_cast<long long>(alpha.count));
  }
  if (var.rank != 2 || var.dims[0] != shape.m || var.dims[1] != shape.n) {
    char v[96];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "the product is [%lld,%lld]; the variable has shape %s",
                     static_cast<long long>(shape.m),
                     static_cast<long long>(shape.n),
                     FormatShape(var.dims, var.rank, v, sizeof v));
  }
  Tensor out;
  if (weft_status* s = AllocateOutputOver(ctx, 0, 0, var.dtype, var.dims,
                                          var.rank, &out)) {
    return s;
  }
  if (out.count == 0) return nullptr;
  const int threads = MatMulWorthThreads(shape.m, shape.k, shape.n)
                          ? g_host->kernel_intra_op_threads(ctx)
                          : 1;
#if WEFT_CPU_HAVE_ONEDNN
  if (var.dtype == WEFT_FLOAT32 && shape.k > 0 &&
      MatMulPrefersOnednn(shape.m, shape.k, shape.n) && !Overlap(out, a) &&
      !Overlap(out, b)) {
    if (out.base != var.base) {
      std::memcpy(out.base, var.base,
                  static_cast<size_t>(var.count) * sizeof(float));
    }
    if (MatMulSubtractScaledOnednn(a.data<float>(), b.data<float>(),
                                   out.data<float>(), shape.m, shape.k,
                                   shape.n, shape.transpose_a,
                                   shape.transpose_b, alpha.data<float>()[0],
                                   threads)) {
      return nullptr;
    }
  }
#endif
  // Uninitialised: the product writes every element (zeros when K is 0).
  Tensor delta = var;
  const size_t bytes =
      static_cast<size_t>(var.count) * weft_dtype_size_of(var.dtype);
  // The calling thread's kept buffer, on huge pages where they are on.
  Scratch delta_data(bytes, Scratch::kProduct);
  delta.base = delta_data.as<char>();
  if (shape.k == 0) {
    std::memset(delta.base, 0, bytes);
  } else {
    MatMulTyped(var.dtype, a.base, b.base, delta.base, shape.m, shape.k,
                shape.n, shape.transpose_a, shape.transpose_b, threads);
  }
  return DispatchDtype<kFloatDtypes>(ctx, var.dtype, [&](auto tag) {
    using T = decltype(tag);
    ParallelFor(ctx, var.count, 1, 2, [&](int64_t b, int64_t e) {
      Descend<T>(out, var, Scalar<T>(alpha), delta, b, e);
    });
    return static_cast<weft_status*>(nullptr);
  });
}

// Inputs var, accum, lr, grad, momentum; outputs var, accum.
weft_status* MomentumKernel(weft_kernel_context* ctx) {
  Update u;
  if (weft_status* s = Prepare(ctx, 5, 2, (1u << 2) | (1u << 4), &u)) return s;
  bool nesterov = false;
  if (weft_status* s = OptionalBoolAttr(ctx, "use_nesterov", false, &nesterov))
    return s;
  return ForElements(ctx, u, 5, [&](auto tag, int64_t b, int64_t e) {
    using T = decltype(tag);
    const T lr = Scalar<T>(u.in[2]);
    const T momentum = Scalar<T>(u.in[4]);
    auto grad = Slice<T>(u.in[3], b, e);
    MutableVec<T> accum = MutableSlice<T>(u.out[1], b, e);
    accum = Slice<T>(u.in[1], b, e) * momentum + grad;
    if (nesterov) {
      MutableSlice<T>(u.out[0], b, e) =
          Slice<T>(u.in[0], b, e) - (grad * lr + accum * momentum * lr);
    } else {
      MutableSlice<T>(u.out[0], b, e) = Slice<T>(u.in[0], b, e) - lr * accum;
    }
  });
}

// Inputs var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
// grad; outputs var, m, v.  The step size folds in Adam's bias correction.
weft_status* AdamKernel(weft_kernel_context* ctx) {
  Update u;
  if (weft_status* s = Prepare(ctx, 10, 3, 0x1f8u, &u)) return s;
  return ForElements(ctx, u, 20, [&](auto tag, int64_t b, int64_t e) {
    using T = decltype(tag);
    const T beta1 = Scalar<T>(u.in[6]);
    const T beta2 = Scalar<T>(u.in[7]);
    const T epsilon = Scalar<T>(u.in[8]);
    const T alpha = Scalar<T>(u.in[5]) *
                    std::sqrt(T(1) - Scalar<T>(u.in[4])) /
                    (T(1) - Scalar<T>(u.in[3]));
    auto grad = Slice<T>(u.in[9], b, e);
    auto m_old = Slice<T>(u.in[1], b, e);
    auto v_old = Slice<T>(u.in[2], b, e);
    MutableVec<T> m = MutableSlice<T>(u.out[1], b, e);
    MutableVec<T> v = MutableSlice<T>(u.out[2], b, e);
    m = m_old + (grad - m_old) * (T(1) - beta1);
    v = v_old + (grad.square() - v_old) * (T(1) - beta2);
    // std::sqrt, not Eigen's: with EIGEN_FAST_MATH float sqrt is an
    // estimate off in the last bits (see unary.cc).
    T* var = u.out[0].data<T>() + b;
    const T* var_old = u.in[0].data<T>() + b;
    const T* mp = m.data();
    const T* vp = v.data();
    for (int64_t i = 0; i < e - b; ++i) {
      var[i] = var_old[i] - alpha * mp[i] / (std::sqrt(vp[i]) + epsilon);
    }
  });
}

}  // namespace

weft_status* RegisterTrainKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = RegisterForDtypes(registrar, "ApplyGradientDescent", kFloatDtypes,
                             Guarded<GradientDescentKernel>)) ||
      (s = RegisterForDtypes(registrar, "ApplyMomentum", kFloatDtypes,
                             Guarded<MomentumKernel>)) ||
      (s = RegisterForDtypes(registrar, "ApplyAdam", kFloatDtypes,
                             Guarded<AdamKernel>)) ||
      (s = RegisterForDtypes(registrar, "MatMulApplyGradientDescent",
                             kFloatDtypes, Guarded<MatMulDescentKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
