// Seeded random ops and Dropout, all driven by CounterRandom
// (random_philox.h): value i of a run comes from counter position i / lanes,
// so any split of the work across threads gives the same tensor.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "kernel.h"
#include "random_philox.h"

namespace weft_cpu {
namespace {

using Eigen::bfloat16;
using Eigen::half;

weft_status* MakeGenerator(weft_kernel_context* ctx, CounterRandom* out) {
  int64_t seed = 0, seed2 = 0;
  weft_status* s = nullptr;
  if ((s = g_host->kernel_attr_int(ctx, "seed", &seed)) ||
      (s = g_host->kernel_attr_int(ctx, "seed2", &seed2))) {
    return s;
  }
  *out = CounterRandom(static_cast<uint64_t>(seed),
                       static_cast<uint64_t>(seed2),
                       g_host->kernel_run_counter(ctx));
  return nullptr;
}

template <typename T>
constexpr int kLanes = weft_philox::LanesFor(sizeof(T));

// The uniform of `lane` with exactly as many random bits as T's
// significand, so that converting to T never rounds up to 1.
template <typename T>
double UniformLane(const RandomBits& bits, int lane) {
  constexpr int kBits = std::is_same_v<T, double>  ? 53
                        : std::is_same_v<T, float> ? 24
                        : std::is_same_v<T, half>  ? 11
                                                   : 8;
  return weft_philox::UniformLane<kBits>(bits, lane);
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return T(static_cast<float>(v));
  }
}

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

template <Distribution dist, typename T>
void Generate(const weft_kernel_context* ctx, const CounterRandom& random,
              double mean, double stddev, T* out, int64_t n) {
  constexpr int lanes = kLanes<T>;
  const int64_t groups = (n + lanes - 1) / lanes;
  const double cost = dist == Distribution::kUniform ? 30.0 : 150.0;
  ParallelFor(ctx, groups, lanes, cost, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const RandomBits bits = random(static_cast<uint64_t>(g));
      const int count =
          static_cast<int>(std::min<int64_t>(lanes, n - g * lanes));
      T* at = out + g * lanes;
      if constexpr (dist == Distribution::kUniform) {
        for (int lane = 0; lane < count; ++lane) {
          at[lane] = FromDouble<T>(UniformLane<T>(bits, lane));
        }
      } else {
        double z[4] = {};
        for (int pair = 0; pair < lanes / 2; ++pair) {
          weft_philox::NormalPair(bits, sizeof(T) == 8, pair, &z[2 * pair],
                                  &z[2 * pair + 1]);
        }
        for (int lane = 0; lane < count; ++lane) {
          z[lane] = weft_philox::RedrawNormal(
              random, static_cast<uint64_t>(g), sizeof(T) == 8, lane,
              dist == Distribution::kTruncatedNormal, z[lane]);
          at[lane] = FromDouble<T>(mean + stddev * z[lane]);
        }
      }
    }
  });
}

template <Distribution dist>
weft_status* GeneratorKernel(weft_kernel_context* ctx) {
  CounterRandom random(0, 0, 0);
  if (weft_status* s = MakeGenerator(ctx, &random)) return s;
  const int64_t* dims = nullptr;
  int32_t rank = 0, dtype = 0;
  double mean = 0, stddev = 1;
  weft_status* s = nullptr;
  if ((s = g_host->kernel_attr_int_list(ctx, "shape", &dims, &rank)) ||
      (s = g_host->kernel_attr_dtype(ctx, "dtype", &dtype))) {
    return s;
  }
  if (dist != Distribution::kUniform &&
      ((s = g_host->kernel_attr_float(ctx, "mean", &mean)) ||
       (s = g_host->kernel_attr_float(ctx, "stddev", &stddev)))) {
    return s;
  }
  Tensor y;
  if ((s = AllocateOutput(ctx, 0, dtype, dims, rank, &y))) return s;
  switch (dtype) {
    case WEFT_FLOAT32:
      Generate<dist>(ctx, random, mean, stddev, y.data<float>(), y.count);
      return nullptr;
    case WEFT_FLOAT64:
      Generate<dist>(ctx, random, mean, stddev, y.data<double>(), y.count);
      return nullptr;
    case WEFT_FLOAT16:
      Generate<dist>(ctx, random, mean, stddev, y.data<half>(), y.count);
      return nullptr;
    case WEFT_BFLOAT16:
      Generate<dist>(ctx, random, mean, stddev, y.data<bfloat16>(), y.count);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, dtype);
  }
}

// Fisher-Yates: position i of the generator decides which row lands at i.
weft_status* RandomShuffleKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (x.rank == 0 || x.dims[0] <= 1) {
    return g_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);
  }
  CounterRandom random(0, 0, 0);
  if (weft_status* s = MakeGenerator(ctx, &random)) return s;
  const int64_t rows = x.dims[0];
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) order[i] = i;
  for (int64_t i = rows - 1; i > 0; --i) {
    const uint64_t j = weft_philox::UniformBelow(
        random, static_cast<uint64_t>(i), static_cast<uint64_t>(i) + 1);
    std::swap(order[i], order[j]);
  }
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  const int64_t row = x.count / rows;
  const size_t bytes = static_cast<size_t>(row) * weft_dtype_size_of(x.dtype);
  if (bytes == 0) return nullptr;
  ParallelFor(ctx, rows, row, 0.25 * static_cast<double>(row),
              [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      std::memcpy(y.base + k * bytes, x.base + order[k] * bytes, bytes);
    }
  });
  return nullptr;
}

// v, or +0 when !keep, by masking bits: compilers turn `keep ? v : 0` into a
// branch, which the random mask mispredicts half the time.
template <typename F>
F KeepOrZero(F v, bool keep) {
  using Bits = std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t>;
  Bits bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= Bits{0} - static_cast<Bits>(keep);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Element i is kept when its uniform, from word i % 4 at position i / 4, is
// at least `rate`: probability 1 - rate.
template <typename T>
void DropoutRun(const weft_kernel_context* ctx, const CounterRandom& random,
                double rate, const T* x, T* y, int64_t n) {
  using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Compute scale = static_cast<Compute>(1.0 / (1.0 - rate));
  const uint64_t threshold = weft_philox::DropoutThreshold(rate);
  const int64_t groups = (n + 3) / 4;
  ParallelFor(ctx, groups, 4, 30.0, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const RandomBits bits = random(static_cast<uint64_t>(g));
      const int count = static_cast<int>(std::min<int64_t>(4, n - g * 4));
      for (int lane = 0; lane < count; ++lane) {
        const int64_t i = g * 4 + lane;
        const bool keep = bits.word[lane] >= threshold;
        y[i] = T(KeepOrZero(static_cast<Compute>(x[i]) * scale, keep));
      }
    }
  });
}

weft_status* DropoutKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  double rate = 0;
  if (weft_status* s = g_host->kernel_attr_float(ctx, "rate", &rate)) return s;
  if (!(rate >= 0 && rate < 1)) {
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "rate = %g must be in [0, 1)", rate);
  }
  // Nothing dropped and a scale of exactly 1: the input as it is.
  if (rate == 0) return g_host->kernel_forward_input(ctx, 0, 0, x.dims, x.rank);
  CounterRandom random(0, 0, 0);
  if (weft_status* s = MakeGenerator(ctx, &random)) return s;
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, x.dtype, x.dims, x.rank, &y)) {
    return s;
  }
  switch (x.dtype) {
    case WEFT_FLOAT32:
      DropoutRun(ctx, random, rate, x.data<float>(), y.data<float>(), y.count);
      return nullptr;
    case WEFT_FLOAT64:
      DropoutRun(ctx, random, rate, x.data<double>(), y.data<double>(),
                 y.count);
      return nullptr;
    case WEFT_FLOAT16:
      DropoutRun(ctx, random, rate, x.data<half>(), y.data<half>(), y.count);
      return nullptr;
    case WEFT_BFLOAT16:
      DropoutRun(ctx, random, rate, x.data<bfloat16>(), y.data<bfloat16>(),
                 y.count);
      return nullptr;
    default:
      return UnsupportedDtype(ctx, x.dtype);
  }
}

}  // namespace

weft_status* RegisterRandomKernels(const Registrar& registrar) {
  const auto floats = {int32_t{WEFT_FLOAT32}, int32_t{WEFT_FLOAT64},
                       int32_t{WEFT_FLOAT16}, int32_t{WEFT_BFLOAT16}};
  weft_status* s = nullptr;
  if ((s = registrar.Add("RandomUniform", floats,
                         Guarded<GeneratorKernel<Distribution::kUniform>>,
                         "dtype")) ||
      (s = registrar.Add("RandomNormal", floats,
                         Guarded<GeneratorKernel<Distribution::kNormal>>,
                         "dtype")) ||
      (s = registrar.Add(
           "TruncatedNormal", floats,
           Guarded<GeneratorKernel<Distribution::kTruncatedNormal>>,
           "dtype")) ||
      (s = registrar.Add("RandomShuffle", {}, Guarded<RandomShuffleKernel>)) ||
      (s = registrar.Add("Dropout", floats, Guarded<DropoutKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
