// RandomUniform, RandomNormal, TruncatedNormal, RandomShuffle and Dropout
// with the CPU plugin's values: the same Philox stream keyed by the same
// (seed, seed2, run counter) and the same distributions
// (plugins/common/philox_stream.h, shared with plugins/cpu/random.cc), one
// thread per 128-bit draw (random_ops.h, host-tested).  Bit for bit where
// no transcendental function is involved; the normal ops' log, sin and cos
// are CUDA's and may differ from glibc's in the last bits.  Checks and
// messages are the CPU's (and the OpenCL plugin's, plugins/opencl/random.cc).
#include <cstdint>

#include "grid_loop.h"
#include "kernel_call.h"
#include "random_ops.h"

namespace weft_cuda {
namespace {

using weft_philox::CounterRandom;

bool IsRandomFloat(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || dtype == WEFT_FLOAT64 ||
         dtype == WEFT_FLOAT16 || dtype == WEFT_BFLOAT16;
}

// The generator of this run of the node: seed, seed2 and the run counter.
weft_status* MakeGenerator(const KernelCall& call, CounterRandom* out) {
  int64_t seed = 0, seed2 = 0;
  if (weft_status* s = call.AttrInt("seed", 0, &seed)) return s;
  if (weft_status* s = call.AttrInt("seed2", 0, &seed2)) return s;
  *out = CounterRandom(static_cast<uint64_t>(seed),
                       static_cast<uint64_t>(seed2),
                       g_host->kernel_run_counter(call.context()));
  return nullptr;
}

int64_t GroupsFor(int64_t count, int32_t dtype) {
  const int lanes = weft_philox::LanesFor(dtype == WEFT_FLOAT64 ? 8 : 4);
  return (count + lanes - 1) / lanes;
}

template <int kDist, typename T>
__global__ void GenerateKernel(CounterRandom random, T* out, int64_t n,
                               int64_t groups, double mean, double stddev) {
  for (int64_t g = GridStart(); g < groups; g += GridStride()) {
    RandomGroup<kDist, T>(random, g, n, mean, stddev, out);
  }
}

template <int kDist>
void LaunchGenerate(const KernelCall& call, const CounterRandom& random,
                    const weft_kernel_tensor& y, double mean, double stddev) {
  const int64_t n = y.element_count;
  const int64_t groups = GroupsFor(n, y.dtype);
  const unsigned int blocks = BlocksFor(groups);
  void* data = TensorData(y);
  switch (y.dtype) {
    case WEFT_FLOAT64:
      GenerateKernel<kDist, double><<<blocks, kBlockThreads, 0,
                                      call.stream()>>>(
          random, static_cast<double*>(data), n, groups, mean, stddev);
      break;
    case WEFT_FLOAT16:
      GenerateKernel<kDist, __half><<<blocks, kBlockThreads, 0,
                                      call.stream()>>>(
          random, static_cast<__half*>(data), n, groups, mean, stddev);
      break;
    case WEFT_BFLOAT16:
      GenerateKernel<kDist, __nv_bfloat16><<<blocks, kBlockThreads, 0,
                                             call.stream()>>>(
          random, static_cast<__nv_bfloat16*>(data), n, groups, mean, stddev);
      break;
    default:
      GenerateKernel<kDist, float><<<blocks, kBlockThreads, 0,
                                     call.stream()>>>(
          random, static_cast<float*>(data), n, groups, mean, stddev);
      break;
  }
}

const char* const kGeneratorNames[] = {"RandomUniform", "RandomNormal",
                                       "TruncatedNormal"};

// `arg` is the RandomDistribution.
weft_status* GeneratorCompute(void* arg, weft_kernel_context* ctx) {
  const int dist = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    CounterRandom random(0, 0, 0);
    if (weft_status* s = MakeGenerator(call, &random)) return s;
    const int64_t* dims = nullptr;
    int32_t rank = 0, dtype = 0;
    if (weft_status* s =
            g_host->kernel_attr_int_list(ctx, "shape", &dims, &rank)) {
      return s;
    }
    if (weft_status* s = call.AttrDtype("dtype", &dtype)) return s;
    if (!IsRandomFloat(dtype)) return call.UnsupportedDtype(dtype);
    double mean = 0, stddev = 1;
    if (dist != kRandomUniform) {
      if (weft_status* s = g_host->kernel_attr_float(ctx, "mean", &mean)) {
        return s;
      }
      if (weft_status* s = g_host->kernel_attr_float(ctx, "stddev", &stddev)) {
        return s;
      }
    }
    weft_kernel_tensor y;
    if (weft_status* s = call.AllocateOutput(0, dtype, dims, rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    switch (dist) {
      case kRandomUniform:
        LaunchGenerate<kRandomUniform>(call, random, y, mean, stddev);
        break;
      case kRandomNormal:
        LaunchGenerate<kRandomNormal>(call, random, y, mean, stddev);
        break;
      default:
        LaunchGenerate<kRandomTruncatedNormal>(call, random, y, mean, stddev);
        break;
    }
    return call.CheckLaunch(kGeneratorNames[dist]);
  });
}

// ---- Dropout ----

template <typename T>
__global__ void DropoutKernel(CounterRandom random, const T* x, T* y,
                              int64_t n, int64_t groups, uint64_t threshold,
                              double scale) {
  for (int64_t g = GridStart(); g < groups; g += GridStride()) {
    const weft_philox::RandomBits bits = random(static_cast<uint64_t>(g));
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t i = g * 4 + lane;
      if (i >= n) break;
      y[i] = DropoutElement<T>(bits, lane, threshold, scale, x[i]);
    }
  }
}

template <typename T>
void LaunchDropout(const KernelCall& call, const CounterRandom& random,
                   const weft_kernel_tensor& x, const weft_kernel_tensor& y,
                   double rate) {
  const int64_t n = y.element_count;
  const int64_t groups = (n + 3) / 4;
  DropoutKernel<T><<<BlocksFor(groups), kBlockThreads, 0, call.stream()>>>(
      random, static_cast<const T*>(TensorData(x)),
      static_cast<T*>(TensorData(y)), n, groups,
      weft_philox::DropoutThreshold(rate), 1.0 / (1.0 - rate));
}

weft_status* DropoutCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (!IsRandomFloat(x.dtype)) return call.UnsupportedDtype(x.dtype);
    double rate = 0;
    if (weft_status* s = g_host->kernel_attr_float(ctx, "rate", &rate)) {
      return s;
    }
    if (!(rate >= 0 && rate < 1)) {
      return call.Error(WEFT_INVALID_ARGUMENT, "rate = %g must be in [0, 1)",
                        rate);
    }
    // Nothing dropped and a scale of exactly 1: the input as it is.
    if (rate == 0) return call.ForwardInput(0, 0, x.dims, x.rank);
    CounterRandom random(0, 0, 0);
    if (weft_status* s = MakeGenerator(call, &random)) return s;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    switch (x.dtype) {
      case WEFT_FLOAT64: LaunchDropout<double>(call, random, x, y, rate); break;
      case WEFT_FLOAT16: LaunchDropout<__half>(call, random, x, y, rate); break;
      case WEFT_BFLOAT16:
        LaunchDropout<__nv_bfloat16>(call, random, x, y, rate);
        break;
      default: LaunchDropout<float>(call, random, x, y, rate); break;
    }
    return call.CheckLaunch("Dropout");
  });
}

// ---- RandomShuffle ----

// Fisher-Yates is sequential (step i swaps with a position the earlier
// steps chose): one thread walks it, as the CPU does.
__global__ void ShuffleOrderKernel(CounterRandom random, int64_t rows,
                                   int64_t* order) {
  if (GridStart() == 0) ShuffleOrder(random, rows, order);
}

// Row k of y is row order[k] of x, moved in elements of U's size.
template <typename U>
__global__ void GatherRowsKernel(const U* x, const int64_t* order, U* y,
                                 int64_t row_units, int64_t count) {
  for (int64_t i = GridStart(); i < count; i += GridStride()) {
    const int64_t row = i / row_units;
    y[i] = x[order[row] * row_units + (i - row * row_units)];
  }
}

template <typename U>
void LaunchGatherRows(const KernelCall& call, const weft_kernel_tensor& x,
                      const int64_t* order, const weft_kernel_tensor& y,
                      uint64_t row_bytes, int64_t rows) {
  const int64_t row_units = static_cast<int64_t>(row_bytes / sizeof(U));
  const int64_t count = row_units * rows;
  GatherRowsKernel<U><<<BlocksFor(count), kBlockThreads, 0, call.stream()>>>(
      static_cast<const U*>(TensorData(x)), order,
      static_cast<U*>(TensorData(y)), row_units, count);
}

weft_status* RandomShuffleCompute(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (x.rank == 0 || x.dims[0] <= 1) {
      return call.ForwardInput(0, 0, x.dims, x.rank);
    }
    const uint64_t size = weft_dtype_size_of(x.dtype);
    if (size != 1 && size != 2 && size != 4 && size != 8) {
      return call.UnsupportedDtype(x.dtype);
    }
    CounterRandom random(0, 0, 0);
    if (weft_status* s = MakeGenerator(call, &random)) return s;
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    const int64_t rows = x.dims[0];
    const uint64_t row_bytes =
        static_cast<uint64_t>(y.element_count / rows) * size;
    // The scratch goes back to the cache once the stream has passed the
    // gather: declared before the launches, destroyed after them.
    Scratch scratch(call);
    int64_t* order = nullptr;
    if (weft_status* s = scratch.Get(rows, &order)) return s;
    ShuffleOrderKernel<<<1, 1, 0, call.stream()>>>(random, rows, order);
    if (weft_status* s = call.CheckLaunch("RandomShuffle")) return s;
    // In units of the element size, which the data's offset respects.
    switch (size) {
      case 8: LaunchGatherRows<uint64_t>(call, x, order, y, row_bytes, rows);
        break;
      case 4: LaunchGatherRows<uint32_t>(call, x, order, y, row_bytes, rows);
        break;
      case 2: LaunchGatherRows<uint16_t>(call, x, order, y, row_bytes, rows);
        break;
      default: LaunchGatherRows<uint8_t>(call, x, order, y, row_bytes, rows);
        break;
    }
    return call.CheckLaunch("RandomShuffle");
  });
}

void* DistArg(int dist) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(dist));
}

}  // namespace

weft_status* RegisterRandomKernels(weft_kernel_registrar* registrar) {
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_FLOAT16,
                            WEFT_BFLOAT16};
  for (int dist = kRandomUniform; dist <= kRandomTruncatedNormal; ++dist) {
    if (weft_status* s = RegisterKernel(registrar, kGeneratorNames[dist],
                                        "dtype", floats, 4, GeneratorCompute,
                                        DistArg(dist))) {
      return s;
    }
  }
  if (weft_status* s = RegisterKernel(registrar, "Dropout", "T", floats, 4,
                                      DropoutCompute, nullptr)) {
    return s;
  }
  // Rows move as whole units: every dtype (all are 1, 2, 4 or 8 bytes).
  const int32_t all[] = {WEFT_FLOAT32, WEFT_FLOAT64,  WEFT_INT32,
                         WEFT_INT64,   WEFT_UINT8,    WEFT_BOOL,
                         WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8,
                         WEFT_INT16,   WEFT_UINT16,   WEFT_UINT32,
                         WEFT_UINT64};
  return RegisterKernel(registrar, "RandomShuffle", "T", all,
                        static_cast<int32_t>(sizeof all / sizeof *all),
                        RandomShuffleCompute, nullptr);
}

}  // namespace weft_cuda
