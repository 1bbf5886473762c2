// LibTorch peer of bench/while_loop.c: a C++ loop over a tensor counter,
// i = i + 1 while i < 100000, the condition read back each iteration (what
// a data-dependent loop costs eagerly).  Usage: while_loop_torch [threads]
// [reps]
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  const int kIterations = 100000;
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  int reps = argc > 2 ? std::atoi(argv[2]) : 21;
  torch::set_num_threads(threads > 0 ? threads : 1);
  torch::NoGradGuard no_grad;
  torch::Tensor limit = torch::tensor(kIterations, torch::kInt32);
  torch::Tensor one = torch::tensor(1, torch::kInt32);
  std::vector<double> wall, cpu;
  for (int r = -2; r < reps; ++r) {
    double w0 = bench_now_seconds(), c0 = bench_process_cpu_seconds();
    torch::Tensor i = torch::tensor(0, torch::kInt32);
    while (torch::lt(i, limit).item<bool>()) i = torch::add(i, one);
    double w1 = bench_now_seconds(), c1 = bench_process_cpu_seconds();
    if (i.item<int32_t>() != kIterations) return 1;
    if (r >= 0) {
      wall.push_back((w1 - w0) / kIterations * 1e6);
      cpu.push_back((c1 - c0) / kIterations * 1e6);
    }
  }
  std::printf("LibTorch loop, %d thread(s): %.3f us/iteration (CPU %.3f us), "
              "median of %d runs of %d iterations\n", threads,
              bench_median(wall.data(), reps), bench_median(cpu.data(), reps),
              reps, kIterations);
  return 0;
}
