// The counter-based generator behind every random kernel, and the
// distributions drawn from it, shared by the CPU plugin (random.cc) and the
// CUDA plugin (random.cu): plain C++ that nvcc also compiles for the device,
// so a seed gives the same values on both.
//
// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011) turns a 128-bit counter and a 64-bit key into
// 128 random bits with no state in between.  A value therefore depends only
// on where it sits, never on which thread drew what before it, so results
// are the same for any thread count, any schedule and in every process.
//
// Here the key is a hash of (seed, seed2, stream) and the counter is
// (position, run counter): `position` numbers the values of one run, the
// run counter makes each run of a node fresh, and `stream` gives values
// that need redrawing (TruncatedNormal, the rejection step of a bounded
// integer) an independent supply at the same position.
#ifndef WEFT_PLUGINS_COMMON_PHILOX_STREAM_H_
#define WEFT_PLUGINS_COMMON_PHILOX_STREAM_H_

#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define WEFT_PHILOX_HD __host__ __device__ inline
#else
#define WEFT_PHILOX_HD inline
#endif

namespace weft_philox {

struct RandomBits {
  uint32_t word[4];

  // Words 2i and 2i+1 as one 64-bit value (i is 0 or 1).
  WEFT_PHILOX_HD uint64_t Wide(int i) const {
    return static_cast<uint64_t>(word[2 * i]) << 32 | word[2 * i + 1];
  }
};

WEFT_PHILOX_HD RandomBits Philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                        uint32_t c3, uint32_t k0,
                                        uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32);
    c0 = hi1 ^ c1 ^ k0;
    c1 = static_cast<uint32_t>(p1);
    c2 = hi0 ^ c3 ^ k1;
    c3 = static_cast<uint32_t>(p0);
    k0 += 0x9E3779B9;  // the key schedule's Weyl increments
    k1 += 0xBB67AE85;
  }
  return {{c0, c1, c2, c3}};
}

// A bijective 64-bit mixer (the splitmix64 finalizer): nearby seeds give
// unrelated keys.
WEFT_PHILOX_HD uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class CounterRandom {
 public:
  WEFT_PHILOX_HD CounterRandom(uint64_t seed, uint64_t seed2, uint64_t run)
      : seed_(seed), seed2_(seed2), run_(run), key0_(Key(0)) {}

  WEFT_PHILOX_HD RandomBits operator()(uint64_t position,
                                       uint32_t stream = 0) const {
    const uint64_t key = stream == 0 ? key0_ : Key(stream);
    return Philox4x32_10(
        static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
        static_cast<uint32_t>(run_), static_cast<uint32_t>(run_ >> 32),
        static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  }

 private:
  WEFT_PHILOX_HD uint64_t Key(uint32_t stream) const {
    return MixBits(seed_ ^ MixBits(seed2_ ^ MixBits(stream + 1)));
  }

  uint64_t seed_, seed2_, run_, key0_;
};

// ---- Distributions ----
//
// Values per 128 random bits: a value of 8 bytes (float64) takes 64 bits
// (53 used), narrower types 32, so value i of a run comes from position
// i / lanes, lane i % lanes.
WEFT_PHILOX_HD constexpr int LanesFor(int element_size) {
  return element_size == 8 ? 2 : 4;
}

// A uniform in [0, 1) with exactly `kBits` random bits (the significand of
// the output type: 53, 24, 11 for float16, 8 for bfloat16), so that
// converting to that type never rounds up to 1.
template <int kBits>
WEFT_PHILOX_HD double UniformLane(const RandomBits& bits, int lane) {
  if constexpr (kBits == 53) {
    return static_cast<double>(bits.Wide(lane) >> 11) * 0x1p-53;
  } else {
    return (bits.word[lane] >> (32 - kBits)) * (1.0 / (1u << kBits));
  }
}

// Box-Muller: two uniforms give two independent standard normals.  u1 is
// kept inside (0, 1) so that log(u1) is finite.  `wide` (float64 output)
// takes its uniforms from Wide(0) and Wide(1) and computes in double; the
// narrower outputs take words 2 * pair and 2 * pair + 1 and compute in
// float, twice as fast: 23 bits of u1 still reach 5.7 standard deviations,
// beyond which a float32 sample falls once in 10^8.  (log, cos and sin
// are the platform's: glibc's on the CPU, CUDA's on the GPU, which may
// differ in the last bits.)
WEFT_PHILOX_HD void NormalPair(const RandomBits& bits, bool wide, int pair,
                               double* z0, double* z1) {
  if (wide) {
    const double u1 =
        (static_cast<double>(bits.Wide(0) >> 11) + 0.5) * 0x1p-53;
    const double u2 = static_cast<double>(bits.Wide(1) >> 11) * 0x1p-53;
    const double r = sqrt(-2.0 * log(u1));
    *z0 = r * cos(2.0 * M_PI * u2);
    *z1 = r * sin(2.0 * M_PI * u2);
  } else {
    const float u1 = (static_cast<float>(bits.word[2 * pair] >> 9) + 0.5f) *
                     0x1p-23f;
    const float u2 = static_cast<float>(bits.word[2 * pair + 1] >> 8) * 0x1p-24f;
    const float r = sqrtf(-2.0f * logf(u1));
    *z0 = r * cosf(static_cast<float>(2.0 * M_PI) * u2);
    *z1 = r * sinf(static_cast<float>(2.0 * M_PI) * u2);
  }
}

// Beyond this many standard deviations TruncatedNormal draws again.
constexpr double kTruncation = 2.0;

// The standard normal of lane `lane` at `position`, `z` its first draw
// (from NormalPair at stream 0).  With `truncated`, a value beyond
// kTruncation is drawn again from that lane's place in the next stream, so
// its neighbours keep their values.
WEFT_PHILOX_HD double RedrawNormal(const CounterRandom& random,
                                   uint64_t position, bool wide, int lane,
                                   bool truncated, double z) {
  for (uint32_t stream = 1; truncated && fabs(z) > kTruncation; ++stream) {
    double again[2];
    NormalPair(random(position, stream), wide, lane / 2, &again[0],
               &again[1]);
    z = again[lane % 2];
  }
  return z;
}

// A uniform integer in [0, bound) without modulo bias: draws below 2^64 mod
// bound are rejected, and replacements come from further streams at the
// same position.
WEFT_PHILOX_HD uint64_t UniformBelow(const CounterRandom& random,
                                     uint64_t position, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;
  for (uint32_t stream = 0;; ++stream) {
    const RandomBits bits = random(position, stream);
    for (int i = 0; i < 2; ++i) {
      const uint64_t r = bits.Wide(i);
      if (r >= reject_below) return r % bound;
    }
  }
}

// Dropout keeps element i when word i % 4 at position i / 4, times 2^-32,
// is at least `rate`; in integers, when the word is at least this (rate *
// 2^32 is exact in a double).  rate is in [0, 1).
inline uint64_t DropoutThreshold(double rate) {
  return static_cast<uint64_t>(ceil(rate * 0x1p32));
}

}  // namespace weft_philox

#endif  // WEFT_PLUGINS_COMMON_PHILOX_STREAM_H_
