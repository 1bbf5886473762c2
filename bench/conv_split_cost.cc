// What splitting a convolution costs in itself: the CPU plugin's oneDNN
// convolutions of the CNN training step (bench/train_cnn: 5x5 SAME, 1->32
// on 28x28 and 32->64 on 14x14, batch 64), each run two ways on one
// thread, alternately:
//   whole   the one-thread session's call (threads 1: one primitive over
//           the batch);
//   blocks  the two-thread session's call with its pool running alone
//           (WorkPool::AssumeBusy: a machine with no CPU to spare), i.e.
//           the batch's two blocks of images one after the other on the
//           caller, as a two-thread step runs under load (work_pool.h).
// The ratio blocks / whole is what issue 12's "two threads never slower
// than one under load" loses on these kernels: the same bits must come
// out whatever the load (tests/test_load_independent.cc), so under load
// the blocks run, not the whole.  Run it with DNNL_VERBOSE=1 to see how
// much of the difference is inside oneDNN's primitives.
//
// The two ways are timed in turn, one call each per repetition with the
// order alternating, so that load from other processes falls on both.
//
//   conv_split_cost [repetitions (default 300)]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_util.h"
#include "onednn_nn_backward.h"

namespace {

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace weft_cpu;
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 300;
  const int warmup = 20;
  if (repetitions <= 0) {
    std::fprintf(stderr, "usage: conv_split_cost [repetitions > 0]\n");
    return 2;
  }
  WorkPool* pool = WorkPool::For(2);
  if (pool == nullptr) return 1;
  pool->AssumeBusy(true);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::printf("CNN convolutions, two blocks on one thread (a two-thread "
              "session under load) against the whole batch (one thread); "
              "median and mean of %d calls each:\n", repetitions);
  double total_whole = 0, total_blocks = 0;
  for (int layer = 0; layer < 2; ++layer) {
    Window2D w;
    w.batch = 64;
    w.in_h = w.in_w = layer == 0 ? 28 : 14;
    w.channels = layer == 0 ? 1 : 32;
    w.k_h = w.k_w = 5;
    w.out_h = w.in_h;
    w.out_w = w.in_w;
    w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = 2;
    const int64_t oc = layer == 0 ? 32 : 64;
    std::vector<float> in(w.batch * w.in_h * w.in_w * w.channels);
    std::vector<float> filter(w.k_h * w.k_w * w.channels * oc), bias(oc);
    std::vector<float> out(w.batch * w.out_h * w.out_w * oc), dy(out.size());
    std::vector<float> din(in.size()), dfilter(filter.size());
    for (auto* v : {&in, &filter, &dy, &bias})
      for (float& x : *v) x = uniform(rng);
    static const char* const kNames[3] = {"forward (fused)", "input gradient",
                                          "filter gradient"};
    for (int family = 0; family < 3; ++family) {
      // The first layer's input gradient is never asked for (its input is
      // the fed images).
      if (layer == 0 && family == 1) continue;
      std::vector<double> times[2];
      for (int r = 0; r < warmup + repetitions; ++r) {
        for (int k = 0; k < 2; ++k) {
          const int threads = (r + k) % 2 == 0 ? 1 : 2;
          const double start = bench_now_seconds();
          if (family == 0) {
            // The ReLU as oneDNN's post-op, as FusedConv2D runs it on
            // finite operands.
            OnednnConv2D(w, oc, in.data(), filter.data(), out.data(), threads,
                         bias.data(), true);
          } else if (family == 1) {
            OnednnConv2DBackpropInput(w, oc, filter.data(), dy.data(),
                                      din.data(), threads);
          } else {
            OnednnConv2DBackpropFilter(w, oc, in.data(), dy.data(),
                                       dfilter.data(), threads);
          }
          const double took = bench_now_seconds() - start;
          if (r >= warmup) times[threads - 1].push_back(took);
        }
      }
      const double mean_whole = Mean(times[0]), mean_blocks = Mean(times[1]);
      const double whole = bench_median(times[0].data(), repetitions);
      const double blocks = bench_median(times[1].data(), repetitions);
      total_whole += whole;
      total_blocks += blocks;
      std::printf("  layer %d %-16s whole %8.1f us (mean %8.1f), blocks "
                  "%8.1f us (mean %8.1f): %+6.1f us, ratio %.4f\n",
                  layer + 1, kNames[family], whole * 1e6,
                  mean_whole * 1e6, blocks * 1e6, mean_blocks * 1e6,
                  (blocks - whole) * 1e6, blocks / whole);
    }
  }
  std::printf("  all five: whole %.1f us, blocks %.1f us: %+.1f us, ratio "
              "%.4f\n",
              total_whole * 1e6, total_blocks * 1e6,
              (total_blocks - total_whole) * 1e6, total_blocks / total_whole);
  return 0;
}
