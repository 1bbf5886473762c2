// LibTorch peer of bench/train_cnn.c: the same CNN (conv 5x5 1->32 SAME,
// ReLU, max-pool 2, conv 5x5 32->64 SAME, ReLU, max-pool 2, dense 3136->10,
// softmax cross-entropy, SGD 0.01, batch 64) in LibTorch's own NCHW layout,
// eager with autograd.  Usage: train_cnn_torch [threads] [steps]
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  const int64_t B = 64, S = 28, C = 10;
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  int steps = argc > 2 ? std::atoi(argv[2]) : 100;
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  auto uniform = [](std::vector<int64_t> shape, double lim) {
    return (torch::rand(shape) * 2 - 1).mul_(lim).requires_grad_();
  };
  auto f1 = uniform({32, 1, 5, 5}, 0.2), f2 = uniform({64, 32, 5, 5}, 0.05);
  auto b1 = torch::zeros({32}).requires_grad_();
  auto b2 = torch::zeros({64}).requires_grad_();
  auto wd = uniform({7 * 7 * 64, C}, 0.03);
  auto bd = torch::zeros({C}).requires_grad_();
  torch::optim::SGD opt({f1, b1, f2, b2, wd, bd},
                        torch::optim::SGDOptions(0.01));
  auto x = torch::rand({B, 1, S, S});
  auto labels = torch::randint(0, C, {B}, torch::kLong);
  namespace F = torch::nn::functional;
  auto train_step = [&] {
    auto h = torch::max_pool2d(torch::relu(torch::conv2d(x, f1, b1, 1, 2)), 2);
    h = torch::max_pool2d(torch::relu(torch::conv2d(h, f2, b2, 1, 2)), 2);
    auto loss = F::cross_entropy(torch::addmm(bd, h.reshape({B, -1}), wd),
                                 labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  bench_steps("LibTorch CNN training", threads, steps, 5,
              [](void* f) { (*static_cast<decltype(train_step)*>(f))(); },
              &train_step);
  return 0;
}
