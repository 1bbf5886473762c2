// RandomUniform, RandomNormal, TruncatedNormal, RandomShuffle and Dropout
// with the CPU plugin's values: the same Philox stream (sources_random.cc),
// keyed by the same (seed, seed2, run counter), and the same distributions,
// so that a graph draws the same numbers on either device (bit for bit
// where no transcendental function is involved; the normal ops' log, sin
// and cos may differ from the CPU's libm in the last bits).
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "kernel_call.h"

namespace weft_opencl {


namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

int g_tags[3];  // the kernel argument of each generator: its Distribution

// The key and counter inputs every kernel takes: seed, seed2 and this run
// of the node (random_philox.h's CounterRandom).
struct Stream {
  cl_ulong seed = 0, seed2 = 0, run = 0;
};

weft_status* ReadStream(const KernelCall& call, Stream* out) {
  int64_t seed = 0, seed2 = 0;
  if (weft_status* s = call.AttrInt("seed", 0, &seed)) return s;
  if (weft_status* s = call.AttrInt("seed2", 0, &seed2)) return s;
  out->seed = static_cast<cl_ulong>(seed);
  out->seed2 = static_cast<cl_ulong>(seed2);
  out->run = call.host()->kernel_run_counter(call.context());
  return nullptr;
}

bool IsFloat(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || dtype == WEFT_FLOAT64 ||
         dtype == WEFT_FLOAT16 || dtype == WEFT_BFLOAT16;
}

// One work item per 128 random bits: four values, two of float64.
WorkSize Positions(int64_t count, int32_t dtype) {
  return Linear((count + (dtype == WEFT_FLOAT64 ? 1 : 3)) /
                (dtype == WEFT_FLOAT64 ? 2 : 4));
}

// RandomUniform, RandomNormal and TruncatedNormal (`arg` points at the
// entry of g_tags for the distribution).
weft_status* GeneratorKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const auto dist =
        static_cast<Distribution>(static_cast<int*>(arg) - g_tags);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    Stream stream;
    if (weft_status* s = ReadStream(call, &stream)) return s;
    bool present = false;
    const int64_t* dims = nullptr;
    int32_t rank = 0, dtype = WEFT_FLOAT32;
    if (weft_status* s = call.AttrIntList("shape", &present, &dims, &rank)) {
      return s;
    }
    if (weft_status* s = call.AttrDtype("dtype", &dtype)) return s;
    if (!IsFloat(dtype)) return call.UnsupportedDtype(dtype);
    double mean = 0, stddev = 1;
    const weft_host_api* host = call.host();
    if (dist != Distribution::kUniform) {
      if (weft_status* s = host->kernel_attr_float(ctx, "mean", &mean)) {
        return s;
      }
      if (weft_status* s = host->kernel_attr_float(ctx, "stddev", &stddev)) {
        return s;
      }
    }
    weft_kernel_tensor y;
    if (weft_status* s = call.AllocateOutput(0, dtype, dims, rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const cl_long n = y.element_count;
    const WorkSize work = Positions(n, dtype);
    char name[40];
    if (dist == Distribution::kUniform) {
      return call.Launch(Program::kRandom,
                         KernelName(name, sizeof name, "random_uniform", dtype),
                         work, Buffer(y), n, stream.seed, stream.seed2,
                         stream.run);
    }
    KernelName(name, sizeof name, "random_normal", dtype);
    const cl_int truncated = dist == Distribution::kTruncatedNormal ? 1 : 0;
    // The affine step takes doubles where the device has them (as the CPU
    // computes it), floats otherwise.
    if (call.device()->fp64) {
      return call.Launch(Program::kRandom, name, work, Buffer(y), n,
                         stream.seed, stream.seed2, stream.run,
                         static_cast<cl_double>(mean),
                         static_cast<cl_double>(stddev), truncated);
    }
    return call.Launch(Program::kRandom, name, work, Buffer(y), n, stream.seed,
                       stream.seed2, stream.run, static_cast<cl_float>(mean),
                       static_cast<cl_float>(stddev), truncated);
  });
}

// Fisher-Yates over the first dimension.  Its steps depend on each other,
// so the permutation is drawn by one work item (shuffle_order, the CPU's
// exact algorithm on the same stream) into a scratch buffer; the rows then
// move in parallel with the array program's gather.
weft_status* RandomShuffleKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (x.rank == 0 || x.dims[0] <= 1) {
      return call.ForwardInput(0, 0, x.dims, x.rank);
    }
    // The array program's gather_<element size>_i64.
    const char* size = SizeSuffix(weft_dtype_size_of(x.dtype));
    if (size == nullptr) return call.UnsupportedDtype(x.dtype);
    char gather[32];
    std::snprintf(gather, sizeof gather, "gather_%s_i64", size);
    Stream stream;
    if (weft_status* s = ReadStream(call, &stream)) return s;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const cl_long rows = x.dims[0];
    TempBuffer order;
    if (weft_status* s =
            order.Create(call, static_cast<size_t>(rows) * sizeof(cl_long))) {
      return s;
    }
    const BufferArg order_arg = order.arg();
    if (weft_status* s = call.Launch(Program::kRandom, "shuffle_order",
                                     Linear(1), order_arg, rows, stream.seed,
                                     stream.seed2, stream.run)) {
      return s;
    }
    return call.Launch(Program::kArray, gather, Linear(y.element_count),
                       Buffer(x), order_arg, Buffer(y),
                       static_cast<cl_long>(y.element_count), rows, rows,
                       static_cast<cl_long>(y.element_count / rows),
                       call.Unchecked());
  });
}

// Element i is kept when word i % 4 at position i / 4 is at least rate *
// 2^32, and then scaled by 1 / (1 - rate) (in float for the types
// narrower than float64); dropped elements are +0.
weft_status* DropoutKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (!IsFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    double rate = 0;
    if (weft_status* s = call.host()->kernel_attr_float(ctx, "rate", &rate)) {
      return s;
    }
    if (!(rate >= 0 && rate < 1)) {
      return call.Error(WEFT_INVALID_ARGUMENT, "rate = %g must be in [0, 1)",
                        rate);
    }
    // Nothing dropped and a scale of exactly 1: the input as it is.
    if (rate == 0) return call.ForwardInput(0, 0, x.dims, x.rank);
    Stream stream;
    if (weft_status* s = ReadStream(call, &stream)) return s;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const double scale = 1.0 / (1.0 - rate);
    const cl_ulong threshold = static_cast<cl_ulong>(std::ceil(rate * 0x1p32));
    const cl_long n = y.element_count;
    char name[32];
    KernelName(name, sizeof name, "dropout", x.dtype);
    if (x.dtype == WEFT_FLOAT64) {
      return call.Launch(Program::kRandom, name, Positions(n, WEFT_FLOAT32),
                         Buffer(x), Buffer(y), n, stream.seed, stream.seed2,
                         stream.run, threshold, static_cast<cl_double>(scale));
    }
    return call.Launch(Program::kRandom, name, Positions(n, WEFT_FLOAT32),
                       Buffer(x), Buffer(y), n, stream.seed, stream.seed2,
                       stream.run, threshold, static_cast<cl_float>(scale));
  });
}

}  // namespace

weft_status* RegisterRandomKernels(weft_kernel_registrar* registrar,
                                   bool fp64) {
  // float64 last, registered where every device runs it.
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT16, WEFT_BFLOAT16,
                            WEFT_FLOAT64};
  const int32_t count = fp64 ? 4 : 3;
  const char* const generators[] = {"RandomUniform", "RandomNormal",
                                    "TruncatedNormal"};
  for (int i = 0; i < 3; ++i) {
    if (weft_status* s = RegisterKernel(registrar, generators[i], "dtype",
                                        floats, count, GeneratorKernel,
                                        &g_tags[i])) {
      return s;
    }
  }
  if (weft_status* s = RegisterKernel(registrar, "Dropout", "T", floats,
                                      count, DropoutKernel, nullptr)) {
    return s;
  }
  // Rows move as bytes: every dtype (all are 1, 2, 4 or 8 bytes).
  const int32_t all[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64,
                         WEFT_UINT8,   WEFT_BOOL,    WEFT_FLOAT16,
                         WEFT_BFLOAT16, WEFT_INT8,   WEFT_INT16,
                         WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};
  return RegisterKernel(registrar, "RandomShuffle", "T", all,
                        static_cast<int32_t>(sizeof all / sizeof *all),
                        RandomShuffleKernel, nullptr);
}

}  // namespace weft_opencl
