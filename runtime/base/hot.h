// WEFT_HOT marks the functions every run() and every node of a run goes
// through.  GCC puts them in .text.hot, which the linker places together:
// the hot path then sits in a few adjacent pages whatever else the library
// holds, and its speed does not move with unrelated code (on the AMD EPYC
// family 23 machines a relink that shifted it read 0.10 vs 0.115 us per
// node at equal instructions).
#pragma once

#define WEFT_HOT __attribute__((hot))
