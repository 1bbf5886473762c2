// The LibTorch twin of train_mlp.c: the same MLP, loss, batch and thread
// count, written the way a LibTorch user would (nn::Linear, cross_entropy,
// optim::SGD or optim::Adam at 0.001 with its default betas and epsilon;
// inference under c10::InferenceMode).  LibTorch's Adam adds epsilon to
// sqrt(v) / sqrt(1 - beta2^t) rather than to sqrt(v): the same work.
//   train_mlp_torch [THREADS [STEPS [sgd|adam|infer [BATCH]]]]
// prints lines in train_mlp's form.
#include <sys/resource.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "bench_util.h"

namespace {

constexpr int kPixels = 784, kHidden = 256, kClasses = 10, kWarmup = 20;

struct Mlp : torch::nn::Module {
  Mlp()
      : hidden(register_module("hidden", torch::nn::Linear(kPixels, kHidden))),
        out(register_module("out", torch::nn::Linear(kHidden, kClasses))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return out->forward(torch::relu(hidden->forward(x)));
  }
  torch::nn::Linear hidden, out;
};

template <typename F>
void Steps(const std::string& label, int threads, int steps, F& step) {
  bench_steps(label.c_str(), threads, steps, kWarmup,
              [](void* f) { (*static_cast<F*>(f))(); }, &step);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (threads < 1) threads = 1;
  const std::string mode = argc > 3 ? argv[3] : "sgd";
  const bool infer = mode == "infer";
  if (!infer && mode != "sgd" && mode != "adam") {
    std::fprintf(stderr, "usage: train_mlp_torch [THREADS [STEPS "
                         "[sgd|adam|infer [BATCH]]]]\n");
    return 2;
  }
  const int batch = infer ? (argc > 4 ? std::atoi(argv[4]) : 256) : 100;
  const int steps = argc > 2 ? std::atoi(argv[2]) : (infer ? 2000 : 700);
  torch::set_num_threads(threads);
  torch::set_num_interop_threads(threads);
  torch::manual_seed(42);
  Mlp model;
  torch::Tensor x = torch::rand({batch, kPixels});
  torch::Tensor y = torch::arange(batch, torch::kLong) % kClasses;
  const std::string name = std::string("LibTorch ") + TORCH_VERSION + " ";
  float final_loss = 0;
  if (infer) {
    c10::InferenceMode guard;
    auto step = [&] { model.forward(x); };
    Steps(name + "MLP inference batch " + std::to_string(batch), threads,
          steps, step);
  } else {
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    if (mode == "adam")
      optimizer = std::make_unique<torch::optim::Adam>(
          model.parameters(), torch::optim::AdamOptions(0.001));
    else
      optimizer = std::make_unique<torch::optim::SGD>(
          model.parameters(), torch::optim::SGDOptions(0.1));
    torch::Tensor loss;
    auto step = [&] {
      optimizer->zero_grad();
      loss = torch::nn::functional::cross_entropy(model.forward(x), y);
      loss.backward();
      optimizer->step();
    };
    Steps(name + (mode == "adam" ? "MLP Adam training" : "MLP SGD training"),
          threads, steps, step);
    final_loss = loss.item<float>();
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("  peak RSS %.1f MiB", ru.ru_maxrss / 1024.0);
  if (!infer) std::printf(", final loss %.4f", final_loss);
  std::printf("\n");
  return 0;
}
