// LibTorch's eager cost per op: the peer of bench/executor_overhead.
//
// The same chain as there: starting from a scalar float32 tensor, 1,000
// torch::add calls, each adding a scalar tensor holding 1 to the previous
// result.  The arithmetic is nothing, so the time per op is what eager
// LibTorch spends around a kernel: dispatch, autograd bookkeeping, output
// allocation.  Two modes: plain (what a C++ user gets by default; the
// dispatcher still passes through the autograd layer, though no input
// needs a gradient) and under c10::InferenceMode (LibTorch's fastest eager
// path, which skips it).
//
//   torch_eager_add [--ops=1000] [--runs=200] [--repetitions=9]
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/types.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_util.h"

namespace {

float RunChain(const torch::Tensor& start, const torch::Tensor& one,
               int ops) {
  torch::Tensor current = start;
  for (int i = 0; i < ops; ++i) current = torch::add(current, one);
  return current.item<float>();
}

// Median microseconds per op over `repetitions` batches of `runs` chains.
double MedianOpUs(int ops, int runs, int repetitions) {
  const torch::Tensor start = torch::zeros({}, torch::kFloat32);
  const torch::Tensor one = torch::ones({}, torch::kFloat32);
  // Warm-up: the dispatcher's caches and the allocator's free lists.
  for (int i = 0; i < runs / 4 + 10; ++i) {
    const float value = RunChain(start, one, ops);
    if (value != static_cast<float>(ops)) {
      std::fprintf(stderr, "torch_eager_add: chain of %d gave %g\n", ops,
                   static_cast<double>(value));
      std::exit(1);
    }
  }
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) {
    const double begin = bench_now_seconds();
    for (int i = 0; i < runs; ++i) RunChain(start, one, ops);
    samples.push_back((bench_now_seconds() - begin) * 1e6 / runs / ops);
  }
  return bench_median(samples.data(), repetitions);
}

}  // namespace

int main(int argc, char** argv) {
  int ops = 1000;
  int runs = 200;
  int repetitions = 9;
  for (int i = 1; i < argc; ++i) {
    if (bench_int_flag(argv[i], "--ops", &ops) ||
        bench_int_flag(argv[i], "--runs", &runs) ||
        bench_int_flag(argv[i], "--repetitions", &repetitions)) {
      continue;
    }
    std::fprintf(stderr, "usage: torch_eager_add [--ops=N] [--runs=N] "
                         "[--repetitions=N]\n");
    return 2;
  }
  if (ops < 1 || runs < 1 || repetitions < 1) {
    std::fprintf(stderr, "torch_eager_add: ops, runs and repetitions must "
                         "be >= 1\n");
    return 2;
  }
  // A scalar add never splits across threads; one thread also keeps
  // OpenMP's idle workers from spinning beside the measurement.
  torch::set_num_threads(1);

  const double plain_us = MedianOpUs(ops, runs, repetitions);
  double inference_us = 0.0;
  {
    c10::InferenceMode guard;
    inference_us = MedianOpUs(ops, runs, repetitions);
  }
  std::printf("LibTorch %s eager add: chain of %d torch::add on float32 "
              "scalars, median of %d × %d chains\n",
              TORCH_VERSION, ops, repetitions, runs);
  std::printf("  per op (default mode):        %10.3f µs\n", plain_us);
  std::printf("  per op (c10::InferenceMode):  %10.3f µs\n", inference_us);
  return 0;
}
