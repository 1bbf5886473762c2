// The counter-based generator behind every random kernel.
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
#ifndef WEFT_PLUGINS_CPU_RANDOM_PHILOX_H_
#define WEFT_PLUGINS_CPU_RANDOM_PHILOX_H_

#include <cstdint>

namespace weft_cpu {

struct RandomBits {
  uint32_t word[4];

  // Words 2i and 2i+1 as one 64-bit value (i is 0 or 1).
  uint64_t Wide(int i) const {
    return static_cast<uint64_t>(word[2 * i]) << 32 | word[2 * i + 1];
  }
};

inline RandomBits Philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                uint32_t c3, uint32_t k0, uint32_t k1) {
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
inline uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class CounterRandom {
 public:
  CounterRandom(uint64_t seed, uint64_t seed2, uint64_t run)
      : seed_(seed), seed2_(seed2), run_(run), key0_(Key(0)) {}

  RandomBits operator()(uint64_t position, uint32_t stream = 0) const {
    const uint64_t key = stream == 0 ? key0_ : Key(stream);
    return Philox4x32_10(
        static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
        static_cast<uint32_t>(run_), static_cast<uint32_t>(run_ >> 32),
        static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  }

 private:
  uint64_t Key(uint32_t stream) const {
    return MixBits(seed_ ^ MixBits(seed2_ ^ MixBits(stream + 1)));
  }

  uint64_t seed_, seed2_, run_, key0_;
};

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_RANDOM_PHILOX_H_
