// The LibTorch twin of train_mlp.c: the same MLP, loss, SGD step, batch
// and thread count, written the way a LibTorch user would (nn::Linear,
// cross_entropy, optim::SGD).  Prints a line in the same form.
#include <sys/resource.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "bench_util.h"

namespace {

constexpr int kBatch = 100, kPixels = 784, kHidden = 256, kClasses = 10;
constexpr int kWarmup = 20, kSteps = 100, kRepeats = 7;

struct Mlp : torch::nn::Module {
  Mlp()
      : hidden(register_module("hidden", torch::nn::Linear(kPixels, kHidden))),
        out(register_module("out", torch::nn::Linear(kHidden, kClasses))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return out->forward(torch::relu(hidden->forward(x)));
  }
  torch::nn::Linear hidden, out;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (threads < 1) threads = 1;
  torch::set_num_threads(threads);
  torch::set_num_interop_threads(threads);
  torch::manual_seed(42);
  Mlp model;
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor x = torch::rand({kBatch, kPixels});
  torch::Tensor y = torch::arange(kBatch, torch::kLong) % kClasses;
  auto step = [&] {
    sgd.zero_grad();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model.forward(x), y);
    loss.backward();
    sgd.step();
    return loss;
  };
  double samples[kRepeats];
  for (int rep = -1; rep < kRepeats; ++rep) {
    int n = rep < 0 ? kWarmup : kSteps;
    double t0 = bench_now_seconds();
    for (int i = 0; i < n; ++i) step();
    if (rep >= 0) samples[rep] = n / (bench_now_seconds() - t0);
  }
  float loss = step().item<float>();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("libtorch mlp training: %d thread%s: %.1f steps/s (median of "
              "%d x %d steps), peak RSS %.1f MiB, final loss %.4f\n",
              threads, threads == 1 ? "" : "s",
              bench_median(samples, kRepeats), kRepeats, kSteps,
              ru.ru_maxrss / 1024.0, loss);
  return 0;
}
