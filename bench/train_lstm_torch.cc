// LibTorch peer of bench/train_lstm.c: the same LSTM (128 units, 28 steps of
// 28 inputs, batch 64, dense to 10, softmax cross-entropy, SGD 0.1) as an
// explicit C++ loop over the cell with autograd.  Usage: train_lstm_torch
// [threads] [steps]
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  const int64_t B = 64, T = 28, D = 28, H = 128, C = 10;
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  double lim = std::sqrt(6.0 / (D + H + 4 * H));
  auto w = (torch::rand({D + H, 4 * H}) * 2 - 1).mul_(lim).requires_grad_();
  auto b = torch::zeros({4 * H}).requires_grad_();
  auto wo = (torch::rand({H, C}) * 2 - 1).mul_(0.2).requires_grad_();
  auto bo = torch::zeros({C}).requires_grad_();
  torch::optim::SGD opt({w, b, wo, bo}, torch::optim::SGDOptions(0.1));
  auto x = torch::rand({T, B, D});
  auto labels = torch::randint(0, C, {B}, torch::kLong);
  auto train_step = [&] {
    auto h = torch::zeros({B, H}), c = torch::zeros({B, H});
    for (int64_t t = 0; t < T; ++t) {
      auto gates = torch::addmm(b, torch::cat({x[t], h}, 1), w);
      auto parts = gates.chunk(4, 1);
      c = torch::sigmoid(parts[1] + 1.0) * c +
          torch::sigmoid(parts[0]) * torch::tanh(parts[2]);
      h = torch::sigmoid(parts[3]) * torch::tanh(c);
    }
    auto loss = torch::nn::functional::cross_entropy(torch::addmm(bo, h, wo),
                                                     labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  bench_steps("LibTorch LSTM training", threads, steps, 10,
              [](void* f) { (*static_cast<decltype(train_step)*>(f))(); },
              &train_step);
  return 0;
}
