// The per-element code of random.cu: which Philox draw and lane element i
// of a run takes, and the value it gets, exactly as the CPU plugin's loops
// in plugins/cpu/random.cc (the stream and the distributions are shared:
// plugins/common/philox_stream.h).  __host__ __device__, so that
// test_index_math.cu checks it on a machine without a GPU.  Included by
// nvcc-compiled files only.
#ifndef WEFT_PLUGINS_CUDA_RANDOM_OPS_H_
#define WEFT_PLUGINS_CUDA_RANDOM_OPS_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "philox_stream.h"

namespace weft_cuda {

enum RandomDistribution : int { kRandomUniform, kRandomNormal,
                                kRandomTruncatedNormal };

// T's significand bits: how many random bits its uniform takes.
template <typename T>
constexpr int kUniformBits = std::is_same<T, double>::value   ? 53
                             : std::is_same<T, float>::value  ? 24
                             : std::is_same<T, __half>::value ? 11
                                                              : 8;

// A double rounded to T as the CPU's FromDouble does: through float for
// everything narrower than float64 (round to nearest even at each step).
template <typename T>
__host__ __device__ inline T RandomFromDouble(double v) {
  if constexpr (std::is_same<T, double>::value) {
    return v;
  } else if constexpr (std::is_same<T, float>::value) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same<T, __half>::value) {
    return __float2half_rn(static_cast<float>(v));
  } else {
    return __float2bfloat16_rn(static_cast<float>(v));
  }
}

// Writes the values of draw `group` (position `group`, up to LanesFor(T)
// values from out[group * lanes]) of RandomUniform, RandomNormal or
// TruncatedNormal: the body of the CPU's Generate loop.  n is the
// tensor's element count.
template <int kDist, typename T>
__host__ __device__ inline void RandomGroup(
    const weft_philox::CounterRandom& random, int64_t group, int64_t n,
    double mean, double stddev, T* out) {
  constexpr int lanes = weft_philox::LanesFor(sizeof(T));
  const weft_philox::RandomBits bits = random(static_cast<uint64_t>(group));
  const int64_t left = n - group * lanes;
  const int count = left < lanes ? static_cast<int>(left) : lanes;
  T* at = out + group * lanes;
  if constexpr (kDist == kRandomUniform) {
    for (int lane = 0; lane < count; ++lane) {
      at[lane] = RandomFromDouble<T>(
          weft_philox::UniformLane<kUniformBits<T>>(bits, lane));
    }
  } else {
    constexpr bool wide = sizeof(T) == 8;
    double z[4] = {};
    for (int pair = 0; pair < lanes / 2; ++pair) {
      weft_philox::NormalPair(bits, wide, pair, &z[2 * pair],
                              &z[2 * pair + 1]);
    }
    for (int lane = 0; lane < count; ++lane) {
      const double v = weft_philox::RedrawNormal(
          random, static_cast<uint64_t>(group), wide, lane,
          kDist == kRandomTruncatedNormal, z[lane]);
      at[lane] = RandomFromDouble<T>(mean + stddev * v);
    }
  }
}

template <typename T>
__host__ __device__ inline float RandomWiden(T v) {
  if constexpr (std::is_same<T, __half>::value) {
    return __half2float(v);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    return __bfloat162float(v);
  } else {
    return static_cast<float>(v);
  }
}

// Dropout of element i: kept when word i % 4 of draw i / 4 is at least
// `threshold` (weft_philox::DropoutThreshold), then x * scale, computed in
// double for float64 and in float otherwise (`scale` is 1 / (1 - rate)
// rounded to that type); a dropped element is +0.
template <typename T>
__host__ __device__ inline T DropoutElement(
    const weft_philox::RandomBits& bits, int lane, uint64_t threshold,
    double scale, T x) {
  const bool keep = bits.word[lane] >= threshold;
  if constexpr (std::is_same<T, double>::value) {
    return keep ? x * scale : 0.0;
  } else {
    const float v = RandomWiden(x) * static_cast<float>(scale);
    return RandomFromDouble<T>(keep ? v : 0.0f);
  }
}

// Fisher-Yates over `rows` rows, the CPU's exact algorithm and draws:
// position i decides which row lands at i.
__host__ __device__ inline void ShuffleOrder(
    const weft_philox::CounterRandom& random, int64_t rows, int64_t* order) {
  for (int64_t i = 0; i < rows; ++i) order[i] = i;
  for (int64_t i = rows - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(weft_philox::UniformBelow(
        random, static_cast<uint64_t>(i), static_cast<uint64_t>(i) + 1));
    const int64_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_RANDOM_OPS_H_
