// A 2-thread kernel's results do not depend on the machine's load: the CPU
// plugin splits a product or a batch of convolutions into blocks for its
// WorkPool, and where the pool would run every block on the caller (no CPU
// to spare) it runs a product as one whole primitive instead, but only
// where a probe showed that gives the blocks' bits (matmul_onednn.h, "One
// piece instead of blocks"), and a filter gradient adds its blocks in their
// reorders instead of in a pass of its own; the fused weight update (a
// product accumulated into the variable) likewise.  Each case computes the
// same operands with the pool sharing (IgnoreLoad) and running alone
// (AssumeBusy) and compares the bytes (pooling also against one thread);
// the matmul cases also check the
// plan (the orientation of the blocks, and whether one piece may stand
// for them) against a comparison of their own, on other operands.
// Plain C++ with TAP output, header-only kernels (no plugin), so it runs in
// the ASan+UBSan suite too.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tap.h"
#include "matmul_onednn.h"
#include "onednn_nn_backward.h"

using weft_cpu::WorkPool;

namespace {

using tap::Report;
using tap::Skip;

std::vector<float> Random(size_t count, uint64_t seed) {
  std::vector<float> v(count);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 7;
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Spread over a few binades, so that sums round often.
    const double u = static_cast<double>(state >> 40) / 16777216.0;
    x = static_cast<float>((u - 0.5) * (1 + (state >> 20 & 7)));
  }
  return v;
}

std::string FirstDifference(const std::vector<float>& a,
                            const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      char text[128];
      std::snprintf(text, sizeof text, "element %zu: %.9g against %.9g", i,
                    static_cast<double>(a[i]), static_cast<double>(b[i]));
      return text;
    }
  }
  return "";
}

// Runs `compute` with the 2-thread pool sharing its blocks, then with it
// running alone, and reports whether the outputs have the same bytes.
template <typename Compute>
void SameUnderLoad(const std::string& name, size_t outputs, Compute&& compute) {
  WorkPool* pool = WorkPool::For(2);
  std::vector<float> shared(outputs, -1.0f), alone(outputs, -2.0f);
  pool->IgnoreLoad(true);
  compute(shared.data());
  pool->AssumeBusy(true);
  compute(alone.data());
  // Twice: the first call alone probes, the second uses the verdict.
  std::vector<float> again(outputs, -3.0f);
  compute(again.data());
  pool->AssumeBusy(false);
  std::string why = FirstDifference(shared, alone);
  if (why.empty()) why = FirstDifference(shared, again);
  Report(why.empty(), name + ": the same bits alone as shared", why);
}

struct Product {
  int64_t m, k, n;
  bool transpose_a;
};

// "<what> MxK[ (transposed)] by KxN": a product case's name.
std::string Label(const char* what, const Product& p) {
  char label[112];
  std::snprintf(label, sizeof label, "%s %lldx%lld%s by %lldx%lld", what,
                static_cast<long long>(p.m), static_cast<long long>(p.k),
                p.transpose_a ? " (transposed)" : "",
                static_cast<long long>(p.k), static_cast<long long>(p.n));
  return label;
}

void MatMulCases() {
  // The MLP's forward product and weight gradient (transposed a), products
  // split by columns (m < 32), one with K long enough that oneDNN's blocks
  // and whole product may add in different orders, a tail block, one too
  // large to probe.
  const Product products[] = {{100, 784, 256, false},  {784, 100, 256, true},
                              {20, 600, 400, false},   {128, 4096, 64, true},
                              {200, 1000, 300, false}, {33, 517, 770, false},
                              {1000, 64, 128, true},   {300, 1200, 900, false}};
  for (const Product& p : products) {
    const std::string label = Label("matmul", p);
    const std::vector<float> a = Random(static_cast<size_t>(p.m * p.k), 1);
    const std::vector<float> b = Random(static_cast<size_t>(p.k * p.n), 2);
    const size_t outputs = static_cast<size_t>(p.m * p.n);
    auto product = [&](float* c, int threads) {
      return weft_cpu::MatMulOnednn(a.data(), b.data(), c, p.m, p.k, p.n,
                                    p.transpose_a, false, threads);
    };
    std::vector<float> probe(outputs);
    if (!product(probe.data(), 1)) {
      Skip(label, "oneDNN has no fast float32 product on this CPU");
      continue;
    }
    SameUnderLoad(label, outputs, [&](float* c) { product(c, 2); });

    // The plan against this case's own comparison of the whole one-thread
    // product with the blocks of each orientation (other operands than the
    // probe's): one piece exactly where the plan's blocks give its bits,
    // and columns only where the default orientation's do not.
    weft_cpu::MatMulGeometry g{};
    g.m = p.m;
    g.k = p.k;
    g.n = p.n;
    g.transpose_a = p.transpose_a;
    g.data_type = dnnl_f32;
    g.threads = 2;
    namespace d = weft_cpu::matmul_onednn_detail;
    WorkPool* pool = WorkPool::For(2);
    const int threads = pool->threads();
    auto same_in = [&](bool by_columns, int64_t* chunks) {
      const d::Blocks blocks(g, threads, by_columns);
      std::vector<float> split(outputs);
      for (int64_t i = 0; i < blocks.chunks(); ++i)
        blocks.Run(i, a.data(), b.data(), split.data());
      *chunks = blocks.chunks();
      return blocks.available() && FirstDifference(probe, split).empty();
    };
    const bool default_columns = d::Blocks::DefaultColumns(g, threads);
    int64_t chunks = 0, column_chunks = 0;
    const bool same = same_in(default_columns, &chunks);
    const bool same_columns =
        !default_columns && same_in(true, &column_chunks) && column_chunks > 1;
    const bool fits = (a.size() + b.size() + 2 * outputs) * sizeof(float) <=
                      weft_cpu::kMaxProbeBytes;
    const std::shared_ptr<const d::SplitPlan> plan = d::PlanSplit(g, threads);
    const bool allowed = plan->whole != nullptr;
    const bool expected = fits && (same || same_columns);
    const bool columns_ok =
        !allowed || plan->by_columns == (same ? default_columns : true);
    Report(chunks > 1 && allowed == expected && columns_ok,
           label + ": the plan allows one piece exactly when " +
               "its blocks give the whole's bits" + (fits ? "" : " (too large)"),
           std::to_string(chunks) + " blocks; one piece " +
               (same ? "gives" : "does not give") + " their bits here" +
               (default_columns ? "" : (same_columns ? ", gives the column "
                                        "blocks' bits" : ", not the column "
                                        "blocks' either")) + ", " +
               (fits ? "fits" : "exceeds") + " the probe's bytes; the " +
               "plan " + (allowed ? "allows" : "refuses") + " it, by " +
               (plan->by_columns ? "columns" : "rows"));
  }
}

// The fused weight update (MatMulApplyGradientDescent's kernel,
// plugins/cpu/train.cc): var - alpha * op(a) op(b) in one accumulating
// primitive, its blocks of a transposed a compacted first, or, where oneDNN
// cannot run the blocks with the post-ops (split by columns; a transposed
// a's row blocks left strided because N < 16 or because they exceed
// kMaxCompactBytes), the plain product's blocks into scratch and then the
// update; alone, one piece only where it gives those bits.
void AccumulatingCases() {
  const Product products[] = {
      {784, 100, 256, true},  {256, 100, 10, true},    {100, 784, 256, false},
      {1000, 64, 128, true},  {300, 1200, 900, false}, {20, 600, 400, false},
      {1200, 400, 8, true},   {2048, 1100, 64, true}};
  const float alpha = 0.1f;
  for (const Product& p : products) {
    const std::string label = Label("fused update by", p);
    const std::vector<float> a = Random(static_cast<size_t>(p.m * p.k), 3);
    const std::vector<float> b = Random(static_cast<size_t>(p.k * p.n), 4);
    const size_t outputs = static_cast<size_t>(p.m * p.n);
    const std::vector<float> var = Random(outputs, 5);
    std::vector<float> delta(outputs);
    bool ran = true;
    auto update = [&](float* c) {
      std::memcpy(c, var.data(), outputs * sizeof(float));
      if (weft_cpu::MatMulSubtractScaledOnednn(a.data(), b.data(), c, p.m,
                                               p.k, p.n, p.transpose_a,
                                               false, alpha, 2))
        return;
      ran = weft_cpu::MatMulOnednn(a.data(), b.data(), delta.data(), p.m,
                                   p.k, p.n, p.transpose_a, false, 2);
      for (size_t i = 0; i < outputs; ++i) c[i] = c[i] - alpha * delta[i];
    };
    std::vector<float> probe(outputs);
    update(probe.data());
    if (!ran) {
      Skip(label, "oneDNN has no fast float32 product on this CPU");
      continue;
    }
    SameUnderLoad(label, outputs, update);
  }
}

weft_cpu::Window2D Window(int64_t batch, int64_t size, int64_t channels,
                          int64_t kernel) {
  weft_cpu::Window2D w;
  w.batch = batch;
  w.in_h = w.in_w = size;
  w.channels = channels;
  w.k_h = w.k_w = kernel;
  weft_cpu::ComputeWindow2D(true, &w);
  return w;
}

void ConvCases() {
  struct Conv {
    int64_t batch, size, channels, kernel, out_channels;
  };
  // The CNN's two layers (batch 64), an odd batch (a shorter last block),
  // blocks of one image.  Forward and input-gradient convolutions keep
  // their blocks whatever the load (matmul_onednn.h says why); the filter
  // gradient adds them differently when the pool runs alone.
  const Conv convs[] = {{64, 28, 1, 5, 32},
                        {64, 14, 32, 5, 64},
                        {37, 12, 8, 3, 24},
                        {2, 16, 128, 3, 64}};
  for (const Conv& c : convs) {
    const weft_cpu::Window2D w = Window(c.batch, c.size, c.channels, c.kernel);
    char label[96];
    std::snprintf(
        label, sizeof label, "conv %lldx%lldx%lldx%lld, %lldx%lld to %lld",
        static_cast<long long>(c.batch), static_cast<long long>(c.size),
        static_cast<long long>(c.size), static_cast<long long>(c.channels),
        static_cast<long long>(c.kernel), static_cast<long long>(c.kernel),
        static_cast<long long>(c.out_channels));
    const size_t in =
        static_cast<size_t>(w.batch * w.in_h * w.in_w * w.channels);
    const size_t out =
        static_cast<size_t>(w.batch * w.out_h * w.out_w * c.out_channels);
    const std::vector<float> input = Random(in, 3);
    const std::vector<float> filter = Random(
        static_cast<size_t>(w.k_h * w.k_w * w.channels * c.out_channels), 4);
    const std::vector<float> bias =
        Random(static_cast<size_t>(c.out_channels), 5);
    const std::vector<float> dy = Random(out, 6);
    SameUnderLoad(std::string(label) + ", forward", out, [&](float* y) {
      weft_cpu::OnednnConv2D(w, c.out_channels, input.data(), filter.data(), y,
                             2);
    });
    // FusedConv2D both ways: the ReLU as a pass over each block, and as
    // oneDNN's post-op (finite operands: the two agree).
    std::vector<float> relu_pass(out), relu_post_op(out);
    for (int post_op = 0; post_op < 2; ++post_op) {
      SameUnderLoad(std::string(label) + ", fused with bias and relu" +
                        (post_op ? " (post-op)" : " (pass)"),
                    out, [&](float* y) {
                      weft_cpu::OnednnConv2D(w, c.out_channels, input.data(),
                                             filter.data(), y, 2, bias.data(),
                                             post_op != 0);
                      std::copy(y, y + out, post_op ? relu_post_op.data()
                                                    : relu_pass.data());
                    });
    }
    const bool none_negative =
        std::none_of(relu_pass.begin(), relu_pass.end(),
                     [](float v) { return !(v >= 0.0f); });
    Report(relu_pass == relu_post_op && none_negative,
           std::string(label) + ", the ReLU pass gives the post-op's values",
           none_negative ? "they differ" : "a negative or NaN output");
    SameUnderLoad(std::string(label) + ", input gradient", in, [&](float* din) {
      weft_cpu::OnednnConv2DBackpropInput(w, c.out_channels, filter.data(),
                                          dy.data(), din, 2);
    });
    SameUnderLoad(std::string(label) + ", filter gradient", filter.size(),
                  [&](float* df) {
                    weft_cpu::OnednnConv2DBackpropFilter(
                        w, c.out_channels, input.data(), dy.data(), df, 2);
                  });
  }
}

// Pooling: a batch split into blocks of images on the pool (OnednnPool2D)
// gives the same bits shared, alone, and as one whole one-thread
// primitive.  The CNN's two max-pooling layers, an odd batch of padded
// 3x3 averages (blocks 19 + 18), and one image alone (oneDNN's threads).
void PoolCases() {
  struct Pool {
    int64_t batch, size, channels, kernel, stride;
    bool max;
  };
  const Pool pools[] = {{64, 28, 32, 2, 2, true},
                        {64, 14, 64, 2, 2, true},
                        {37, 15, 40, 3, 1, false},
                        {37, 15, 40, 3, 2, true},
                        {1, 96, 32, 3, 2, false}};
  for (const Pool& c : pools) {
    weft_cpu::Window2D w;
    w.batch = c.batch;
    w.in_h = w.in_w = c.size;
    w.channels = c.channels;
    w.k_h = w.k_w = c.kernel;
    w.stride_h = w.stride_w = c.stride;
    weft_cpu::ComputeWindow2D(true, &w);
    char label[96];
    std::snprintf(
        label, sizeof label,
        "%s pool %lldx%lldx%lldx%lld, %lldx%lld stride %lld",
        c.max ? "max" : "average", static_cast<long long>(c.batch),
        static_cast<long long>(c.size), static_cast<long long>(c.size),
        static_cast<long long>(c.channels), static_cast<long long>(c.kernel),
        static_cast<long long>(c.kernel), static_cast<long long>(c.stride));
    const std::vector<float> input = Random(
        static_cast<size_t>(w.batch * w.in_h * w.in_w * w.channels), 7);
    const size_t out =
        static_cast<size_t>(w.batch * w.out_h * w.out_w * w.channels);
    std::vector<float> whole(out, -4.0f), split(out, -5.0f);
    weft_cpu::OnednnPool2D(w, c.max, input.data(), whole.data(), 1);
    WorkPool::For(2)->IgnoreLoad(true);
    weft_cpu::OnednnPool2D(w, c.max, input.data(), split.data(), 2);
    WorkPool::For(2)->IgnoreLoad(false);
    const std::string why = FirstDifference(whole, split);
    Report(why.empty(), std::string(label) + ": two threads give one's bits",
           why);
    SameUnderLoad(label, out, [&](float* y) {
      weft_cpu::OnednnPool2D(w, c.max, input.data(), y, 2);
    });
  }
}

}  // namespace

int main() {
  if (weft_cpu::OnednnThreads(2) < 2) {
    std::printf(
        "1..1\nok 1 - load-independent results # SKIP OpenMP allows "
        "oneDNN one thread here (OMP_THREAD_LIMIT), so no kernel "
        "splits\n");
    return 0;
  }
  MatMulCases();
  AccumulatingCases();
  ConvCases();
  PoolCases();
  std::printf("1..%d\n", tap::g_case);
  return tap::g_failed == 0 ? 0 : 1;
}
