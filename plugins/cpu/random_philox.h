// The counter-based generator behind every random kernel: the stream and
// the distributions are plugins/common/philox_stream.h, shared with the
// CUDA plugin so that a seed draws the same values on both devices.
#ifndef WEFT_PLUGINS_CPU_RANDOM_PHILOX_H_
#define WEFT_PLUGINS_CPU_RANDOM_PHILOX_H_

#include "philox_stream.h"

namespace weft_cpu {

using weft_philox::CounterRandom;
using weft_philox::MixBits;
using weft_philox::Philox4x32_10;
using weft_philox::RandomBits;

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_RANDOM_PHILOX_H_
