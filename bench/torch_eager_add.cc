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
// Timing is bench_util.h's: 10 blocks of RUNS / 10 chains, wall-clock and
// process CPU time.
//
//   torch_eager_add [THREADS [RUNS]] [--ops=1000] [--runs=2000]
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/types.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_util.h"

namespace {

float RunChain(const torch::Tensor& start, const torch::Tensor& one,
               int ops) {
  torch::Tensor current = start;
  for (int i = 0; i < ops; ++i) current = torch::add(current, one);
  return current.item<float>();
}

struct Chain {
  torch::Tensor start, one;
  int ops;
};

void RunChainStep(void* arg) {
  const Chain* c = static_cast<const Chain*>(arg);
  RunChain(c->start, c->one, c->ops);
}

// Median wall-clock and process CPU microseconds per op, over 10 blocks of
// runs / 10 chains (bench_util.h's timing).
void MedianOpUs(int ops, int runs, double* wall, double* cpu) {
  Chain chain = {torch::zeros({}, torch::kFloat32),
                 torch::ones({}, torch::kFloat32), ops};
  const float value = RunChain(chain.start, chain.one, ops);
  if (value != static_cast<float>(ops)) {
    std::fprintf(stderr, "torch_eager_add: chain of %d gave %g\n", ops,
                 static_cast<double>(value));
    std::exit(1);
  }
  double walls[10], cpus[10];
  // Warm-up: the dispatcher's caches and the allocator's free lists.
  bench_time_blocks(RunChainStep, &chain, runs / 4 + 10,
                    std::max(runs / 10, 1), walls, cpus);
  *wall = bench_median(walls, 10) * 1e6 / ops;
  *cpu = bench_median(cpus, 10) * 1e6 / ops;
}

}  // namespace

int main(int argc, char** argv) {
  int ops = 1000;
  int runs = 2000;
  int threads = 1;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (bench_int_flag(argv[i], "--ops", &ops) ||
        bench_int_flag(argv[i], "--runs", &runs)) {
      continue;
    }
    if (argv[i][0] != '-' && positional < 2) {
      *(positional++ == 0 ? &threads : &runs) = std::atoi(argv[i]);
      continue;
    }
    std::fprintf(stderr, "usage: torch_eager_add [THREADS [RUNS]] "
                         "[--ops=N] [--runs=N]\n");
    return 2;
  }
  if (ops < 1 || runs < 1 || threads < 1) {
    std::fprintf(stderr, "torch_eager_add: ops, runs and threads must be "
                         ">= 1\n");
    return 2;
  }
  // A scalar add never splits across threads; the count is set as the
  // other peers set theirs.
  torch::set_num_threads(threads);

  double plain_us = 0, plain_cpu = 0, inference_us = 0, inference_cpu = 0;
  MedianOpUs(ops, runs, &plain_us, &plain_cpu);
  {
    c10::InferenceMode guard;
    MedianOpUs(ops, runs, &inference_us, &inference_cpu);
  }
  // The first line is the one scripts/bench_peers.sh reads: the default
  // mode, what a C++ user gets.
  const std::string label = std::string("LibTorch ") + TORCH_VERSION +
                            " executor per node (eager torch::add, chain of " +
                            std::to_string(ops) + ")";
  bench_print_per_unit(label.c_str(), threads, plain_us * 1e-6 * ops,
                       plain_cpu * 1e-6 * ops, std::max(runs / 10, 1), ops,
                       "node");
  std::printf("  per op (default mode):        %10.3f µs\n", plain_us);
  std::printf("  per op (c10::InferenceMode):  %10.3f µs (CPU %.3f µs)\n",
              inference_us, inference_cpu);
  return 0;
}
