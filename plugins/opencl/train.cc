// Optimizer kernels: ApplyGradientDescent, ApplyMomentum, ApplyAdam.  The
// host hands them the variables' current values as their leading inputs
// and publishes their outputs as the new values, so each is a pure
// function, as in the CPU plugin (plugins/cpu/train.cc), whose semantics
// these follow.  The OpenCL C is in sources_train.cc.
#include <cstdint>

#include "kernel_call.h"

namespace weft_opencl {
namespace {

bool g_fp64 = false;

struct Update {
  const char* op;
  const char* kernel;
  int32_t num_inputs;
  int32_t num_outputs;  // the variables: the leading inputs
  unsigned scalar_mask; // bit i: input i is a scalar
};

const Update kDescent = {"ApplyGradientDescent", "apply_gradient_descent", 3,
                         1, 1u << 1};
const Update kMomentum = {"ApplyMomentum", "apply_momentum", 5, 2,
                          (1u << 2) | (1u << 4)};
const Update kAdam = {"ApplyAdam", "apply_adam", 10, 3, 0x1f8u};

constexpr int32_t kMaxInputs = 10;

weft_status* UpdateKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const Update& op = *static_cast<const Update*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in[kMaxInputs], out[3];
    for (int32_t i = 0; i < op.num_inputs; ++i) {
      if (weft_status* s = call.Input(i, &in[i])) return s;
      if (in[i].dtype != in[0].dtype) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d is %s; the variable is %s", i,
                          weft_dtype_name_of(in[i].dtype),
                          weft_dtype_name_of(in[0].dtype));
      }
      if ((op.scalar_mask >> i) & 1u) {
        if (in[i].element_count != 1) {
          return call.Error(WEFT_INVALID_ARGUMENT,
                            "input %d must be a scalar, has %lld elements",
                            i, static_cast<long long>(in[i].element_count));
        }
      } else if (!SameDims(in[i], in[0])) {
        return call.Error(WEFT_INVALID_ARGUMENT,
                          "input %d (rank %d) does not have the variable's "
                          "shape (rank %d)",
                          i, in[i].rank, in[0].rank);
      }
    }
    const weft_kernel_tensor& var = in[0];
    if (var.dtype != WEFT_FLOAT32 &&
        !(g_fp64 && var.dtype == WEFT_FLOAT64)) {
      return call.UnsupportedDtype(var.dtype);
    }
    for (int32_t r = 0; r < op.num_outputs; ++r) {
      if (weft_status* s = call.AllocateOutput(r, var.dtype, var.dims,
                                               var.rank, &out[r])) {
        return s;
      }
    }
    const int64_t n = var.element_count;
    if (n == 0) return nullptr;
    char name[64];
    KernelName(name, sizeof name, op.kernel, var.dtype);
    const WorkSize work = Linear(n);
    const cl_long count = n;
    if (&op == &kDescent) {
      return call.Launch(Program::kTrain, name, work, Buffer(in[0]),
                         Buffer(in[1]), Buffer(in[2]), Buffer(out[0]), count);
    }
    if (&op == &kMomentum) {
      bool nesterov = false;
      if (weft_status* s = call.AttrBool("use_nesterov", false, &nesterov)) {
        return s;
      }
      return call.Launch(Program::kTrain, name, work, Buffer(in[0]),
                         Buffer(in[1]), Buffer(in[2]), Buffer(in[3]),
                         Buffer(in[4]), Buffer(out[0]), Buffer(out[1]), count,
                         static_cast<cl_int>(nesterov ? 1 : 0));
    }
    return call.Launch(Program::kTrain, name, work, Buffer(in[0]),
                       Buffer(in[1]), Buffer(in[2]), Buffer(in[3]),
                       Buffer(in[4]), Buffer(in[5]), Buffer(in[6]),
                       Buffer(in[7]), Buffer(in[8]), Buffer(in[9]),
                       Buffer(out[0]), Buffer(out[1]), Buffer(out[2]), count);
  });
}

}  // namespace

weft_status* RegisterTrainKernels(weft_kernel_registrar* registrar,
                                  bool fp64) {
  g_fp64 = fp64;
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  for (const Update* op : {&kDescent, &kMomentum, &kAdam}) {
    if (weft_status* s =
            RegisterKernel(registrar, op->op, "T", floats, fp64 ? 2 : 1,
                           UpdateKernel, const_cast<Update*>(op))) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_opencl
