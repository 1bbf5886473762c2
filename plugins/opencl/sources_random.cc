// OpenCL C of random.cc: the CPU plugin's counter-based stream
// (plugins/cpu/random_philox.h) and its distributions (plugins/cpu/
// random.cc), so that a seed gives the same values on both devices.
#include "program.h"

namespace weft_opencl {

const char* const kRandomSource = R"CLC(
/* The CPU computes mean + stddev * z and the products below unfused
 * (-ffp-contract=off); OpenCL C would otherwise allow contraction. */
#pragma OPENCL FP_CONTRACT OFF

/* Philox4x32-10 on the counter (position, run) and a 64-bit key: the same
 * rounds and constants as random_philox.h, so value i of a run is the same
 * bits as on the CPU whatever work item draws it. */
inline uint4 weft_philox(ulong position, ulong run, ulong key) {
  uint c0 = (uint)position, c1 = (uint)(position >> 32);
  uint c2 = (uint)run, c3 = (uint)(run >> 32);
  uint k0 = (uint)key, k1 = (uint)(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (uint4)(c0, c1, c2, c3);
}

/* The splitmix64 finalizer, and the key of `stream` (MixBits and
 * CounterRandom::Key). */
inline ulong weft_mix(ulong z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ul;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBul;
  return z ^ (z >> 31);
}
inline ulong weft_key(ulong seed, ulong seed2, uint stream) {
  return weft_mix(seed ^ weft_mix(seed2 ^ weft_mix((ulong)(stream + 1u))));
}

/* Words 2i and 2i + 1 as one 64-bit value (RandomBits::Wide). */
inline ulong weft_wide(uint4 bits, int i) {
  return i == 0 ? ((ulong)bits.s0 << 32 | bits.s1)
                : ((ulong)bits.s2 << 32 | bits.s3);
}

inline uint weft_word(uint4 bits, int lane) {
  return lane == 0 ? bits.s0 : lane == 1 ? bits.s1 : lane == 2 ? bits.s2
                                                                : bits.s3;
}

/* Work item g draws position g: its 128 bits, and how many of its `lanes`
 * values lie inside the n elements (0 past the end). */
inline int weft_draw(long n, int lanes, ulong seed, ulong seed2, ulong run,
                     uint4* bits) {
  const long g = get_global_id(0);
  if (g * lanes >= n) return 0;
  *bits = weft_philox(g, run, weft_key(seed, seed2, 0));
  return (int)min((long)lanes, n - g * lanes);
}

/* Box-Muller on words 2 pair and 2 pair + 1, in float as the CPU does for
 * every type narrower than float64. */
inline float2 weft_normal_pair_f(uint4 bits, int pair) {
  const uint w1 = pair == 0 ? bits.s0 : bits.s2;
  const uint w2 = pair == 0 ? bits.s1 : bits.s3;
  const float u1 = ((float)(w1 >> 9) + 0.5f) * 0x1p-23f;
  const float u2 = (float)(w2 >> 8) * 0x1p-24f;
  const float r = sqrt(-2.0f * log(u1));
  const float angle = (2.0f * M_PI_F) * u2;
  return (float2)(r * cos(angle), r * sin(angle));
}

/* float16 rounds to nearest even; NaN becomes the quiet NaN with its sign,
 * as Eigen's half conversion makes it. */
inline void weft_store_f16(float v, long i, __global half* p) {
  if (isnan(v)) ((__global ushort*)p)[i] = (as_uint(v) >> 31) ? 0xFE00 : 0x7E00;
  else vstore_half_rte(v, i, p);
}

#define WEFT_LOAD_f32(p, i) (p)[i]
#define WEFT_LOAD_f16(p, i) vload_half((i), (p))
#define WEFT_LOAD_bf16(p, i) weft_bf16_to_float((p)[i])
#define WEFT_PUT_f32(p, i, v) (p)[i] = (v)
#define WEFT_PUT_f16(p, i, v) weft_store_f16((v), (i), (p))
#define WEFT_PUT_bf16(p, i, v) (p)[i] = weft_float_to_bf16(v)

/* mean + stddev * z as the CPU rounds it: in double, then to float (and
 * from there to the 16-bit types); in float on a device without fp64. */
#ifdef WEFT_FP64
#define WEFT_PARAM double
#define WEFT_AFFINE(mean, stddev, z) ((float)((mean) + (stddev) * (double)(z)))
#else
#define WEFT_PARAM float
#define WEFT_AFFINE(mean, stddev, z) ((mean) + (stddev) * (z))
#endif

/* Four values per 128 bits for the types narrower than float64: value i
 * from word i % 4 at position i / 4.  `bits` is the mantissa width the
 * uniform keeps (24 for float32, 11 for float16, 8 for bfloat16), so that
 * it never rounds up to 1.  TruncatedNormal redraws a value beyond two
 * standard deviations from its own place in the next stream. */
#define WEFT_RANDOM_NARROW(T, S, BITS)                                      \
__kernel void random_uniform_##S(__global T* y, long y_off, long n,         \
                                 ulong seed, ulong seed2, ulong run) {      \
  uint4 bits;                                                               \
  const int count = weft_draw(n, 4, seed, seed2, run, &bits);               \
  const long at = y_off + get_global_id(0) * 4;                             \
  const float unit = 1.0f / (float)(1u << BITS);                            \
  for (int lane = 0; lane < count; ++lane) {                                \
    const float u = (float)(weft_word(bits, lane) >> (32 - BITS)) * unit;   \
    WEFT_PUT_##S(y, at + lane, u);                                          \
  }                                                                         \
}                                                                           \
__kernel void random_normal_##S(__global T* y, long y_off, long n,          \
                                ulong seed, ulong seed2, ulong run,         \
                                WEFT_PARAM mean, WEFT_PARAM stddev,         \
                                int truncated) {                            \
  uint4 bits;                                                               \
  const int count = weft_draw(n, 4, seed, seed2, run, &bits);               \
  if (count == 0) return;                                                   \
  const long g = get_global_id(0);                                          \
  const float2 z01 = weft_normal_pair_f(bits, 0);                           \
  const float2 z23 = weft_normal_pair_f(bits, 1);                           \
  float z[4] = {z01.s0, z01.s1, z23.s0, z23.s1};                            \
  for (int lane = 0; lane < count; ++lane) {                                \
    for (uint stream = 1; truncated && fabs(z[lane]) > 2.0f; ++stream) {    \
      const float2 again = weft_normal_pair_f(                              \
          weft_philox(g, run, weft_key(seed, seed2, stream)), lane / 2);    \
      z[lane] = lane % 2 == 0 ? again.s0 : again.s1;                        \
    }                                                                       \
    WEFT_PUT_##S(y, y_off + g * 4 + lane, WEFT_AFFINE(mean, stddev, z[lane]));\
  }                                                                         \
}                                                                           \
__kernel void dropout_##S(__global const T* x, long x_off, __global T* y,   \
                          long y_off, long n, ulong seed, ulong seed2,      \
                          ulong run, ulong threshold, float scale) {        \
  uint4 bits;                                                               \
  const int count = weft_draw(n, 4, seed, seed2, run, &bits);               \
  for (int lane = 0; lane < count; ++lane) {                                \
    const long i = get_global_id(0) * 4 + lane;                             \
    const float v = WEFT_LOAD_##S(x, x_off + i) * scale;                    \
    WEFT_PUT_##S(y, y_off + i,                                              \
                 (ulong)weft_word(bits, lane) >= threshold ? v : 0.0f);     \
  }                                                                         \
}

WEFT_RANDOM_NARROW(float, f32, 24)
WEFT_RANDOM_NARROW(half, f16, 11)
WEFT_RANDOM_NARROW(ushort, bf16, 8)

#ifdef WEFT_FP64
/* float64: two values per 128 bits, 53 random bits each; one Box-Muller
 * pair per position, in double. */
inline double2 weft_normal_pair_d(uint4 bits) {
  const double u1 = ((double)(weft_wide(bits, 0) >> 11) + 0.5) * 0x1p-53;
  const double u2 = (double)(weft_wide(bits, 1) >> 11) * 0x1p-53;
  const double r = sqrt(-2.0 * log(u1));
  return (double2)(r * cos(2.0 * M_PI * u2), r * sin(2.0 * M_PI * u2));
}

__kernel void random_uniform_f64(__global double* y, long y_off, long n,
                                 ulong seed, ulong seed2, ulong run) {
  uint4 bits;
  const int count = weft_draw(n, 2, seed, seed2, run, &bits);
  for (int lane = 0; lane < count; ++lane) {
    y[y_off + get_global_id(0) * 2 + lane] =
        (double)(weft_wide(bits, lane) >> 11) * 0x1p-53;
  }
}

__kernel void random_normal_f64(__global double* y, long y_off, long n,
                                ulong seed, ulong seed2, ulong run,
                                double mean, double stddev, int truncated) {
  uint4 bits;
  const int count = weft_draw(n, 2, seed, seed2, run, &bits);
  if (count == 0) return;
  const long g = get_global_id(0);
  const double2 pair = weft_normal_pair_d(bits);
  double z[2] = {pair.s0, pair.s1};
  for (int lane = 0; lane < count; ++lane) {
    for (uint stream = 1; truncated && fabs(z[lane]) > 2.0; ++stream) {
      const double2 again = weft_normal_pair_d(
          weft_philox(g, run, weft_key(seed, seed2, stream)));
      z[lane] = lane == 0 ? again.s0 : again.s1;
    }
    y[y_off + g * 2 + lane] = mean + stddev * z[lane];
  }
}

__kernel void dropout_f64(__global const double* x, long x_off,
                          __global double* y, long y_off, long n, ulong seed,
                          ulong seed2, ulong run, ulong threshold,
                          double scale) {
  uint4 bits;
  const int count = weft_draw(n, 4, seed, seed2, run, &bits);
  for (int lane = 0; lane < count; ++lane) {
    const long i = get_global_id(0) * 4 + lane;
    const double v = x[x_off + i] * scale;
    y[y_off + i] = (ulong)weft_word(bits, lane) >= threshold ? v : 0.0;
  }
}
#endif

/* RandomShuffle's permutation: Fisher-Yates is sequential (step i swaps
 * with a position the earlier steps chose), so one work item walks it, as
 * the CPU does, with the same unbiased draw of j in [0, i] at position i
 * (UniformBelow: 64-bit draws below 2^64 mod bound are rejected and
 * replaced from further streams).  The rows then move in parallel. */
inline ulong weft_uniform_below(ulong position, ulong bound, ulong seed,
                                ulong seed2, ulong run) {
  const ulong reject_below = (0ul - bound) % bound;
  for (uint stream = 0;; ++stream) {
    const uint4 bits =
        weft_philox(position, run, weft_key(seed, seed2, stream));
    for (int i = 0; i < 2; ++i) {
      const ulong r = weft_wide(bits, i);
      if (r >= reject_below) return r % bound;
    }
  }
}

__kernel void shuffle_order(__global long* order, long order_off, long rows,
                            ulong seed, ulong seed2, ulong run) {
  if (get_global_id(0) != 0) return;
  order += order_off;
  for (long i = 0; i < rows; ++i) order[i] = i;
  for (long i = rows - 1; i > 0; --i) {
    const long j = (long)weft_uniform_below(i, (ulong)i + 1, seed, seed2, run);
    const long t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}
)CLC";

}  // namespace weft_opencl
