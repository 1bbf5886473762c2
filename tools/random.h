/* Seeded random numbers for the tool's commands (splitmix64): the same
 * sequence on every machine and libc, so runs and checks repeat. */
#ifndef WEFT_TOOLS_RANDOM_H_
#define WEFT_TOOLS_RANDOM_H_

#include <stdint.h>

static inline uint64_t weft_tool_random(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static inline double weft_tool_uniform(uint64_t* state) {
  return (double)(weft_tool_random(state) >> 11) * (1.0 / 9007199254740992.0);
}

#endif /* WEFT_TOOLS_RANDOM_H_ */
