// Helpers shared by the benchmarks that call oneDNN directly
// (conv_matmul.cc, onednn_floor.cc): aligned buffers of fixed random
// values, a matrix product as one oneDNN matmul primitive, and timing of
// several contenders in one rotating loop.
#ifndef WEFT_BENCH_ONEDNN_BENCH_H_
#define WEFT_BENCH_ONEDNN_BENCH_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_util.h"
#include "host_memory.h"

namespace bench_onednn {

// 64-byte aligned and never reallocated: every contender reads the same
// buffers, so none gains from a luckier alignment, and a session's
// zero-copy feeds may point into them.  From the CPU plugin's own host
// memory (huge pages for 64 KiB .. 1 MiB where the kernel offers them):
// the primitives are timed on the pages Weft's tensors of those sizes get,
// so that the floor stays a floor (in Weft, gemm:jit on a family-23 EPYC
// ran the MLP's two large products 9 and 21 % faster on huge pages; the
// floor's own figure did not move).
struct Buffer {
  explicit Buffer(size_t count)
      : data(static_cast<float*>(weft_cpu::AllocateHost(count * sizeof(float)))),
        size(count) {
    if (data == nullptr) {
      std::fprintf(stderr, "bench: out of memory\n");
      std::exit(1);
    }
  }
  ~Buffer() { weft_cpu::FreeHost(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* data;
  size_t size;
};

// Values in [-1, 1) from a fixed LCG: denormals and huge values would time
// something other than the common case.
inline void Fill(Buffer& b, uint32_t seed) {
  uint32_t state = seed;
  for (size_t i = 0; i < b.size; ++i) {
    state = state * 1664525u + 1013904223u;
    b.data[i] = static_cast<float>(state >> 8) /
                    static_cast<float>(1u << 23) -
                1.0f;
  }
}

// One oneDNN primitive created once, with its arguments bound: Run()
// executes it and waits.
class OnednnPrimitive {
 public:
  OnednnPrimitive() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}
  void Run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  // oneDNN's name for the implementation it picked ("brg:avx512_core").
  const std::string& implementation() const { return implementation_; }

 protected:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive primitive_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string implementation_;
};

// C[m x n] = op(A) op(B), float32, row-major, one oneDNN matmul primitive.
// op(A) is [m x k]: with transpose_a, A is stored [k x m] (and likewise B,
// stored [n x k] when transposed), as a gradient's product reads a forward
// value.  Plain layouts on every side: in a graph both operands are values
// computed at run time, so there is no constant to pre-pack.
class OnednnMatMul : public OnednnPrimitive {
 public:
  OnednnMatMul(const float* a, const float* b, float* c, int64_t m, int64_t k,
               int64_t n, bool transpose_a = false, bool transpose_b = false) {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    const auto ab = memory::format_tag::ab, ba = memory::format_tag::ba;
    const memory::desc a_desc({m, k}, f32, transpose_a ? ba : ab),
        b_desc({k, n}, f32, transpose_b ? ba : ab), c_desc({m, n}, f32, ab);
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(a_desc, b_desc, c_desc), engine_);
    implementation_ = pd.impl_info_str();
    primitive_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, memory(a_desc, engine_, const_cast<float*>(a))},
             {DNNL_ARG_WEIGHTS,
              memory(b_desc, engine_, const_cast<float*>(b))},
             {DNNL_ARG_DST, memory(c_desc, engine_, c)}};
  }
};

struct Contender {
  std::string name;
  std::string note;
  std::function<void()> run;
  std::vector<double> wall, cpu;
  double wall_s = 0, cpu_s = 0;  // medians
};

// Times every contender `repetitions` times in one loop, one run each per
// repetition with the order rotating, so that load from other processes
// on a shared machine falls on all of them alike; sets each one's median
// wall-clock and process CPU seconds.
inline void TimeTogether(std::vector<Contender>& contenders,
                         int repetitions) {
  const size_t count = contenders.size();
  // Warm-up: plans, thread pools, primitive caches, first-touch pages.
  for (int i = 0; i < 3; ++i)
    for (Contender& c : contenders) c.run();
  for (int r = 0; r < repetitions; ++r) {
    // Rotate who goes first so no one always inherits the caches or the
    // clock frequency another left behind.
    for (size_t i = 0; i < count; ++i) {
      Contender& c = contenders[(i + static_cast<size_t>(r)) % count];
      const double start = bench_now_seconds();
      const double cpu_start = bench_process_cpu_seconds();
      c.run();
      c.wall.push_back(bench_now_seconds() - start);
      c.cpu.push_back(bench_process_cpu_seconds() - cpu_start);
    }
  }
  for (Contender& c : contenders) {
    c.wall_s = bench_median(c.wall.data(), repetitions);
    c.cpu_s = bench_median(c.cpu.data(), repetitions);
  }
}

}  // namespace bench_onednn

#endif  // WEFT_BENCH_ONEDNN_BENCH_H_
