// oneDNN's matmul primitive behind the MatMul and BatchMatMul kernels,
// callable without the plugin: bench/ includes this header to time the very
// code the kernels run against oneDNN called by hand.
//
// Why oneDNN for float32: the plugin is compiled for baseline x86-64, so
// Eigen's GEMM is limited to SSE2, while oneDNN picks AVX2/AVX-512 kernels
// at run time (see the figures in matmul.cc).  bfloat16 runs natively too
// where the CPU has an implementation of its own (AVX512-BF16, AMX).
//
// Operands are bound in place: transposes and broadcast batch dims are
// described to oneDNN through strides and size-1 dims, never copied.
// Primitives are cached per geometry and thread count (onednn_engine.h
// explains why the count matters); implementations named "ref" (oneDNN's
// naive loops) are refused, so that callers fall back to Eigen instead.
//
// Header-only; needs WEFT_CPU_HAVE_ONEDNN.  May throw std::bad_alloc.
#ifndef WEFT_PLUGINS_CPU_MATMUL_ONEDNN_H_
#define WEFT_PLUGINS_CPU_MATMUL_ONEDNN_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>

#include "host_memory.h"  // Scratch
#include "onednn_engine.h"
#include "work_pool.h"

namespace weft_cpu {

// oneDNN tensors have at most DNNL_MAX_NDIMS (12) dims, two of them the
// matrix.
constexpr int32_t kOnednnMaxBatchRank = DNNL_MAX_NDIMS - 2;

// c[batch..., M, N] = op(a)[batch..., M, K] · op(b)[batch..., K, N], dense
// and row-major; op transposes the last two dims when asked (a stored
// [..., K, M], b stored [..., N, K]).  a_batch and b_batch hold each
// operand's batch dims, aligned with the output's: equal to it, or 1 to
// broadcast.  Value-initialize (MatMulGeometry g{}) before filling: it is
// also the cache key, compared byte for byte.
struct MatMulGeometry {
  int64_t a_batch[kOnednnMaxBatchRank];
  int64_t b_batch[kOnednnMaxBatchRank];
  int64_t m, k, n;
  // Row strides of a's, b's and c's storage in elements; 0 for dense.  Only
  // without batch dims: they describe one block of a larger matrix (a
  // chunk of a split product).
  int64_t lda, ldb, ldc;
  int32_t batch_rank;
  int32_t transpose_a, transpose_b;
  int32_t data_type;  // dnnl_data_type_t: f32 or bf16
  int32_t threads;    // as OnednnThreads() returns it
  // 1: c = c + scale * product, with c read and scale a float32 scalar
  // given at each call (post-ops: no pass of their own, the product never
  // stored apart).  2-D float32 products only.  Also makes the struct's
  // padding explicit, hence zeroed by {}.
  int32_t accumulate;
};

// ---- One piece instead of blocks, where it gives the same bits ----------
//
// A product split into row blocks for the WorkPool runs every block on the
// caller when the pool runs alone (WorkPool::RunsAlone: the machine has no
// CPU to spare).  One primitive over the whole product then spares what the
// split costs in itself (the weights packed and read once per block), but
// a session's results must not depend on the load, and oneDNN does not
// promise that a one-piece primitive adds in its blocks' order (a 128x4096
// by 4096x64 product with a transposed a does not: its blocks run
// gemm:jit, the whole brgemm).  So the one piece runs only where a probe,
// once per geometry, showed it gives the blocks' bits on random operands:
// oneDNN's float kernels have no data-dependent branches (the same
// operations whatever the values), and two that add in different orders
// disagree on random operands in some element with overwhelming
// probability (SameBitsAsBlocks).

// The most bytes a probe's operands and two outputs may take: the probe's
// pages count in the process's peak memory.  Larger products keep their
// blocks, whose own cost is a smaller part of theirs (a block's second read
// of the weights against its rows' share of the work).  Convolutions keep
// theirs too: probes like these (6 - 13 MiB for the CNN) raised its
// 2-thread peak from 37 to 49 MiB, and even a probe with no copy of the
// activations (stop 38, branch stop38-conv-one-piece) cost 2 MB of peak
// memory for 0.2 % of the step under load (README, "Stop 38").
constexpr size_t kMaxProbeBytes = size_t{4} << 20;

// Fills `count` elements of `element` bytes (4: float32; 2: bfloat16, a
// float32's high half) with values uniform in [-1, 1) from *state.
inline void FillProbe(void* data, size_t count, size_t element,
                      uint64_t* state) {
  char* out = static_cast<char*>(data);
  for (size_t i = 0; i < count; ++i) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    const float x = static_cast<float>(static_cast<double>(*state >> 40) *
                                       (1.0 / 8388608.0)) - 1.0f;
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    if (element == 4) {
      std::memcpy(out + i * 4, &bits, 4);
    } else {
      const uint16_t high = static_cast<uint16_t>(bits >> 16);
      std::memcpy(out + i * 2, &high, 2);
    }
  }
}

namespace matmul_onednn_detail {

using dnnl::memory;

struct Primitive {
  bool available = false;  // false: oneDNN has no fast implementation
  dnnl::matmul matmul;
  memory::desc a, b, c, scratchpad;
  memory::desc scale;  // accumulate's scalar, a [1, 1] float32
  size_t scratchpad_bytes = 0;

  // Memory objects over the arguments, made on first use and pointed at
  // each call's buffers (set_data_handle), for one caller at a time
  // (`in_use`); a concurrent caller (another block of the same split
  // product) makes its own.  Creating four dnnl::memory per call cost
  // ~0.8 us, a fifth of the MLP's small products (100x256 by 256x10:
  // 4.6 against 3.7 us).
  struct Arguments {
    memory a, b, c, scratchpad, scale;
  };
  mutable std::atomic<bool> in_use{false};
  mutable Arguments reused;
};

// A [batch..., rows, cols] operand stored [batch..., cols, rows] when
// `transposed`, with `ld` elements between the starts of stored rows (0:
// dense).
inline memory::desc Operand(const int64_t* batch, int32_t batch_rank,
                            int64_t rows, int64_t cols, bool transposed,
                            memory::data_type type, int64_t ld) {
  memory::dims dims(batch, batch + batch_rank);
  dims.push_back(rows);
  dims.push_back(cols);
  memory::dims strides(dims.size());
  strides[batch_rank] = transposed ? 1 : (ld != 0 ? ld : cols);
  strides[batch_rank + 1] = transposed ? (ld != 0 ? ld : rows) : 1;
  int64_t stride = rows * cols;
  for (int32_t i = batch_rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= batch[i];
  }
  return memory::desc(dims, type, strides);
}

inline std::shared_ptr<const Primitive> Make(const MatMulGeometry& g) {
  auto p = std::make_shared<Primitive>();
  const auto type = static_cast<memory::data_type>(g.data_type);
  int64_t out_batch[kOnednnMaxBatchRank];
  for (int32_t i = 0; i < g.batch_rank; ++i) {
    out_batch[i] = g.a_batch[i] == 1 ? g.b_batch[i] : g.a_batch[i];
  }
  p->a = Operand(g.a_batch, g.batch_rank, g.m, g.k, g.transpose_a != 0, type,
                 g.lda);
  p->b = Operand(g.b_batch, g.batch_rank, g.k, g.n, g.transpose_b != 0, type,
                 g.ldb);
  p->c = Operand(out_batch, g.batch_rank, g.m, g.n, false, type, g.ldc);
  // A user scratchpad lets several threads execute one cached primitive at
  // once (the library's own would be shared by them).
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  try {
    if (g.accumulate) {
      // A binary multiply by a [1, 1] tensor, not output scales: oneDNN
      // 2.6 runs runtime output scales only in gemm:jit, post-ops in the
      // same brgemm kernels as the plain product.  The sum adds c's old
      // value with scale 1, i.e. one rounded addition.
      p->scale = memory::desc({1, 1}, memory::data_type::f32,
                              memory::format_tag::ab);
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_mul, p->scale);
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->a, p->b, p->c),
                                    attr, OnednnEngine());
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return p;
    p->matmul = dnnl::matmul(pd);
    p->scratchpad = pd.scratchpad_desc();
    p->scratchpad_bytes = p->scratchpad.get_size();
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
    return p;  // unimplemented for this type or ISA: remembered as such
  }
  p->available = true;
  return p;
}

inline OnednnCache<MatMulGeometry, Primitive>& Cache() {
  static OnednnCache<MatMulGeometry, Primitive> cache;
  return cache;
}

// Executes `p` on the calling thread's stream (prepared by the caller) and
// waits for it.  `scale`: accumulate's scalar (ignored otherwise).
inline void Execute(const Primitive& p, const void* a, const void* b,
                    void* c, dnnl::stream& stream,
                    const float* scale = nullptr) {
  const dnnl::engine& engine = OnednnEngine();
  Scratch scratch(p.scratchpad_bytes, Scratch::kPrimitive);
  void* const handles[] = {const_cast<void*>(a), const_cast<void*>(b), c,
                           scratch.data(), const_cast<float*>(scale)};
  const bool accumulating = p.scale.get_size() != 0;
  // Released however this returns (set_data_handle and memory() throw).
  struct Claim {
    const Primitive& p;
    const bool held = !p.in_use.exchange(true, std::memory_order_acquire);
    ~Claim() {
      if (held) p.in_use.store(false, std::memory_order_release);
    }
  } claim{p};
  Primitive::Arguments own;
  Primitive::Arguments& m = claim.held ? p.reused : own;
  if (!m.a) {
    m.a = memory(p.a, engine, handles[0]);
    m.b = memory(p.b, engine, handles[1]);
    m.c = memory(p.c, engine, handles[2]);
    m.scratchpad = memory(p.scratchpad, engine, handles[3]);
    if (accumulating) m.scale = memory(p.scale, engine, handles[4]);
  } else {
    m.a.set_data_handle(handles[0]);
    m.b.set_data_handle(handles[1]);
    m.c.set_data_handle(handles[2]);
    m.scratchpad.set_data_handle(handles[3]);
    if (accumulating) m.scale.set_data_handle(handles[4]);
  }
  // The C API takes the arguments as an array: no map built per call.
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, m.a.get()},
                            {DNNL_ARG_WEIGHTS, m.b.get()},
                            {DNNL_ARG_DST, m.c.get()},
                            {DNNL_ARG_SCRATCHPAD, m.scratchpad.get()},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) |
                                 DNNL_ARG_SRC_1,
                             accumulating ? m.scale.get() : nullptr}};
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(p.matmul.get(), stream.get(),
                             accumulating ? 5 : 4, args),
      "could not execute a matmul primitive");
  stream.wait();
}

// Rows or columns per chunk of a split product: one chunk per thread, with
// enough work in each (2^21 multiply-adds, some 50 microseconds on one
// core) to pay for handing it out; columns in multiples of 16 (a cache line
// of floats, an AVX-512 register).  With 2^18 the CNN's three dense
// products (2M multiply-adds each) were split too, for no measurable gain
// (129 against 130 steps/s at 2 threads), and their transposed-input row
// blocks, which oneDNN runs only through its gemm:jit kernels, cost the
// 2-thread process 6 MiB of peak memory (47 against 41.5 MiB).
inline int64_t ChunkSize(int64_t dim, int64_t per_unit, int threads,
                         int64_t multiple) {
  int64_t size = (dim + threads - 1) / threads;
  const int64_t min_size = (int64_t{1} << 21) / (per_unit > 0 ? per_unit : 1);
  if (size < min_size) size = min_size;
  size = (size + multiple - 1) / multiple * multiple;
  return size < dim ? size : dim;
}

// The most bytes of a transposed a's row block copied into a dense buffer
// per call (Blocks): 4 MiB, a block of 1,024 columns by 1,024 rows.
constexpr size_t kMaxCompactBytes = size_t{4} << 20;

// A 2-D product as blocks of whole rows of c (columns when there are fewer
// than 16 rows a thread), each a one-thread product.  Rows first: a block of
// rows reads b whole, as the unsplit product does, while a block of columns
// reads b through a row stride, which made the MLP's forward product
// (100x784 by 784x256) 7 % slower in two column blocks than in one piece,
// and no slower in two row blocks.  Blocks are described to oneDNN in place
// through row strides, except a row block of a transposed a (a stored
// [K, M]: the block is `extent` columns of every stored row), which each
// call first copies into a dense [K, extent] buffer: oneDNN 2.6 runs the
// strided block only in gemm:jit (and with an accumulating post-op only
// in its reference kernel), the dense one in brgemm like the whole
// product.  The copy is 1/N of the block's multiply-adds, hence only for
// N >= 16 (below, the strided block runs).  Measured on the MLP's weight
// update (W1 -= lr * x^T · dh, 784x100 by 100x256) at 2 threads, header
// microbenchmark on a 2-core AMD EPYC: 128 us strided (plain blocks into
// scratch, then the subtraction) against 95 us compacted (the subtraction
// as post-ops), 173 us at 1 thread.
class Blocks {
 public:
  // Rows unless there are fewer than 16 a thread.
  static bool DefaultColumns(const MatMulGeometry& g, int threads) {
    return g.m < 16 * static_cast<int64_t>(threads);
  }
  Blocks(const MatMulGeometry& g, int threads)
      : Blocks(g, threads, DefaultColumns(g, threads)) {}
  // Blocks of columns when `by_columns`, else of rows (a SplitPlan's
  // choice).
  Blocks(const MatMulGeometry& g, int threads, bool by_columns)
      : g_(g),
        element_(g.data_type == dnnl_f32 ? 4 : 2),
        by_columns_(by_columns) {
    const int64_t dim = by_columns_ ? g.n : g.m;
    size_ = ChunkSize(dim, (by_columns_ ? g.m : g.n) * g.k, threads,
                      by_columns_ ? 16 : 1);
    chunks_ = (dim + size_ - 1) / size_;
    MatMulGeometry block = g;
    block.threads = 1;
    if (by_columns_) {
      // b [K, N] keeps its row stride; b stored [N, K] has whole rows.
      block.ldb = g.transpose_b ? 0 : g.n;
      block.ldc = g.n;
    } else if (g.transpose_a) {
      // a stored [K, M]: compacted, or kept in place with its row stride.
      compact_a_ = chunks_ > 1 && g.n >= 16 &&
                   static_cast<size_t>(g.k * size_) * element_ <=
                       kMaxCompactBytes;
      block.lda = compact_a_ ? 0 : g.m;
    }
    // Full blocks share one primitive, a shorter last block has its own.
    auto primitive = [&block, this](int64_t extent) {
      MatMulGeometry key = block;
      (by_columns_ ? key.n : key.m) = extent;
      return Cache().Get(key, [&key] { return Make(key); });
    };
    const int64_t last = dim - (chunks_ - 1) * size_;
    full_ = primitive(size_);
    tail_ = last == size_ ? full_ : primitive(last);
  }

  // False when oneDNN has no fast implementation for a block.
  bool available() const { return full_->available && tail_->available; }
  bool by_columns() const { return by_columns_; }
  // Block i's first row (column when by_columns) and how many it has.
  int64_t Start(int64_t i) const { return i * size_; }
  int64_t Extent(int64_t i) const {
    const int64_t dim = by_columns_ ? g_.n : g_.m;
    return (i + 1 < chunks_ ? size_ : dim - i * size_);
  }
  int64_t chunks() const { return chunks_; }

  // Computes block i of c = a · b (c += scale * a · b when accumulating) on
  // the calling thread.
  void Run(int64_t i, const void* a, const void* b, void* c,
           const float* scale = nullptr) const {
    const int64_t start = Start(i);
    dnnl::stream& stream = OnednnPrepareThread(1);
    const Primitive& p = i + 1 < chunks_ ? *full_ : *tail_;
    const char* ab = static_cast<const char*>(a);
    const char* bb = static_cast<const char*>(b);
    char* cb = static_cast<char*>(c);
    if (by_columns_) {
      const int64_t b_offset = g_.transpose_b ? start * g_.k : start;
      Execute(p, ab, bb + b_offset * element_, cb + start * element_, stream,
              scale);
    } else if (compact_a_) {
      const int64_t extent = Extent(i);
      const size_t row = static_cast<size_t>(extent) * element_;
      Scratch dense(static_cast<size_t>(g_.k) * row,
                    Scratch::kCompactOperand);
      char* out = static_cast<char*>(dense.data());
      for (int64_t r = 0; r < g_.k; ++r) {
        std::memcpy(out + r * row, ab + (r * g_.m + start) * element_, row);
      }
      Execute(p, out, bb, cb + start * g_.n * element_, stream, scale);
    } else {
      const int64_t a_offset = g_.transpose_a ? start : start * g_.k;
      Execute(p, ab + a_offset * element_, bb, cb + start * g_.n * element_,
              stream, scale);
    }
  }

 private:
  MatMulGeometry g_;
  size_t element_;
  bool by_columns_;
  bool compact_a_ = false;
  int64_t size_ = 0, chunks_ = 0;
  std::shared_ptr<const Primitive> full_, tail_;
};

// c[i] - alpha * p[i] into c[i]: an accumulating product computed by parts
// (below), in the arithmetic of the update it replaces, and the probe that
// checks a one-piece primitive against it.
inline void SubtractScaled(float* c, const float* p, int64_t count,
                           float alpha) {
  for (int64_t i = 0; i < count; ++i) c[i] = c[i] - alpha * p[i];
}

// How a product of geometry `g` splits for a pool of `threads`, decided
// once per geometry whatever the load (the blocks' bits are a session's
// results): the orientation of its blocks, and the whole product as one
// one-thread primitive for a pool that would run every block on this
// thread anyway (WorkPool::RunsAlone), where it gives the blocks' bits
// ("One piece instead of blocks" above).  One cache lookup per call: a
// step's products should cost what one thread's do.  Measured paired on a
// 2-core AMD EPYC (AVX-512), the pool forced to run alone: the MLP step at
// 2 threads 0.989 - 0.995x one thread in blocks (its forward product's
// two row blocks pack and read the weights once each), 1.002 - 1.005x in
// one piece.
//
// Rows first (Blocks explains why).  Where row blocks do not give the
// whole product's bits but column blocks do, the product splits by
// columns: on a 2-core AMD EPYC of family 23 (AVX2, oneDNN 2.6's gemm:jit
// only) the MLP's forward product and weight gradient differ from their
// row blocks in 930 of 25,600 and 836 of 200,704 elements and equal their
// column halves bit for bit, which also run as fast (the two halves 1.078
// ms against the whole's 1.063, and 1.092 against 1.103, one thread).  In
// row blocks, with a busy process on one core a 2-thread session ran the
// MLP step at 0.965 - 0.972x one thread (paired), the blocks' own cost; in
// column halves, whole under load, 0.993 - 1.000x (1 against 1: 0.997),
// and 1.676x idle (rows: 1.660).  No whole when neither gives its bits, or
// when the product is too large to probe (kMaxProbeBytes: the default
// orientation).  The probes now run at a product's first use, idle or not
// (the orientation must not depend on the load).
//
// An accumulating product whose blocks oneDNN cannot run with the post-ops
// (a block of columns, or of rows of a transposed a too large to compact,
// is strided, and 2.6 then offers only its reference kernel for the sum;
// on AVX2 gemm:jit has no post-ops at all) is computed as the plain
// product's blocks into scratch, each then subtracted from its part of c
// (MatMulSubtractScaledOnednn); the one piece is checked against exactly
// that, and is the accumulating primitive where oneDNN has one, else the
// plain product subtracted after (whole_plain).  Without it, under load a
// 2-thread session ran the MLP's fused weight update unfused while a
// 1-thread session ran it fused: 0.966 - 0.974x one thread, paired,
// against parity unfused.
struct SplitPlan {
  bool by_columns = false;
  std::shared_ptr<const Primitive> whole;  // null: run the blocks
  bool whole_plain = false;  // whole: the plain product, then SubtractScaled
};

// Whether `whole` gives the bits of `blocks` (for an accumulating g by
// parts: of `blocks` of the plain product, each subtracted) on random
// operands.  oneDNN's float kernels have no data-dependent branches (the
// same operations whatever the values), and two that add in different
// orders disagree on random operands in some element with overwhelming
// probability.
inline bool SameBitsAsBlocks(const MatMulGeometry& g, const Blocks& blocks,
                             bool by_parts, const Primitive& whole,
                             bool whole_plain) {
  const size_t element = g.data_type == dnnl_f32 ? 4 : 2;
  const size_t a_count = static_cast<size_t>(g.m * g.k);
  const size_t b_count = static_cast<size_t>(g.k * g.n);
  const size_t c_bytes = static_cast<size_t>(g.m * g.n) * element;
  std::unique_ptr<char[]> a(new char[a_count * element]),
      b(new char[b_count * element]), split(new char[c_bytes]),
      single(new char[c_bytes]);
  uint64_t state = 1;
  FillProbe(a.get(), a_count, element, &state);
  FillProbe(b.get(), b_count, element, &state);
  // Accumulating: both start from the same c, and a scale that rounds.
  const float scale = -0.3f;
  if (g.accumulate) {
    FillProbe(split.get(), c_bytes / element, element, &state);
    std::memcpy(single.get(), split.get(), c_bytes);
  }
  std::unique_ptr<float[]> product;
  if (by_parts || whole_plain) product.reset(new float[c_bytes / 4]);
  if (by_parts) {
    for (int64_t i = 0; i < blocks.chunks(); ++i)
      blocks.Run(i, a.get(), b.get(), product.get());
    SubtractScaled(reinterpret_cast<float*>(split.get()), product.get(),
                   static_cast<int64_t>(c_bytes / 4), -scale);
  } else {
    for (int64_t i = 0; i < blocks.chunks(); ++i)
      blocks.Run(i, a.get(), b.get(), split.get(), &scale);
  }
  if (whole_plain) {
    Execute(whole, a.get(), b.get(), product.get(), OnednnPrepareThread(1));
    SubtractScaled(reinterpret_cast<float*>(single.get()), product.get(),
                   static_cast<int64_t>(c_bytes / 4), -scale);
  } else {
    Execute(whole, a.get(), b.get(), single.get(), OnednnPrepareThread(1),
            &scale);
  }
  return std::memcmp(split.get(), single.get(), c_bytes) == 0;
}

inline std::shared_ptr<const SplitPlan> PlanSplit(const MatMulGeometry& g,
                                                  int threads) {
  static OnednnCache<MatMulGeometry, SplitPlan> plans;
  return plans.Get(g, [&] {
    auto plan = std::make_shared<SplitPlan>();
    plan->by_columns = Blocks::DefaultColumns(g, threads);
    const size_t element = g.data_type == dnnl_f32 ? 4 : 2;
    MatMulGeometry one = g;
    one.threads = 1;
    std::shared_ptr<const Primitive> whole =
        Cache().Get(one, [&one] { return Make(one); });
    bool whole_plain = false;
    if (!whole->available && g.accumulate != 0 && element == 4) {
      one.accumulate = 0;
      whole = Cache().Get(one, [&one] { return Make(one); });
      whole_plain = true;
    }
    MatMulGeometry plain = g;
    plain.accumulate = 0;
    const size_t a_count = static_cast<size_t>(g.m * g.k);
    const size_t b_count = static_cast<size_t>(g.k * g.n);
    const size_t c_bytes = static_cast<size_t>(g.m * g.n) * element;
    const bool accumulating = g.accumulate != 0;
    if (!whole->available ||
        (a_count + b_count) * element + (accumulating ? 3 : 2) * c_bytes >
            kMaxProbeBytes) {
      return std::shared_ptr<const SplitPlan>(std::move(plan));
    }
    // The default orientation, then columns where that is rows.
    const bool orientations[2] = {plan->by_columns, true};
    for (int o = 0; o < (plan->by_columns ? 1 : 2); ++o) {
      const Blocks blocks(g, threads, orientations[o]);
      // Accumulating by parts: the plain blocks, then the subtraction.
      const bool by_parts = accumulating && !blocks.available();
      if (by_parts && element != 4) continue;
      std::optional<Blocks> plain_blocks;
      if (by_parts) plain_blocks.emplace(plain, threads, orientations[o]);
      const Blocks& parts = by_parts ? *plain_blocks : blocks;
      if (!parts.available() || parts.chunks() < 2) continue;
      if (SameBitsAsBlocks(g, parts, by_parts, *whole, whole_plain)) {
        plan->by_columns = orientations[o];
        plan->whole = whole;
        plan->whole_plain = whole_plain;
        break;
      }
    }
    return std::shared_ptr<const SplitPlan>(std::move(plan));
  });
}

// The product split into Blocks run as chunks on the plugin's WorkPool, or
// whole where its SplitPlan allows and the pool would run alone.
// Why not oneDNN's own threads: they are OpenMP's, whose static split waits
// for every thread at the join and whose waiting policy is set once per
// process (work_pool.h has the measurements).  Returns false, having done
// nothing, when oneDNN has no fast implementation (an accumulating
// product's blocks by parts included: MatMulSubtractScaledOnednn).
inline bool SplitMatMul(const MatMulGeometry& g, const void* a, const void* b,
                        void* c, WorkPool& pool, const float* scale) {
  dnnl::stream& stream = OnednnPrepareThread(1);
  const std::shared_ptr<const SplitPlan> plan = PlanSplit(g, pool.threads());
  if (plan->whole != nullptr && !plan->whole_plain && pool.RunsAlone()) {
    Execute(*plan->whole, a, b, c, stream, scale);
    return true;
  }
  const Blocks blocks(g, pool.threads(), plan->by_columns);
  if (!blocks.available()) return false;
  pool.Run(blocks.chunks(),
           [&](int64_t i) { blocks.Run(i, a, b, c, scale); });
  return true;
}

}  // namespace matmul_onednn_detail

// Runs the products of `g` (every one of M, K, N positive; g.threads from
// OnednnThreads) and waits for them.  Returns false, having done nothing,
// when oneDNN has no fast implementation for the type and this CPU; the
// caller then computes the product itself.  Thread-safe.  One product of
// two dense matrices on several threads runs split on the WorkPool
// (SplitMatMul); batches run on oneDNN's threads.  `scale`: g.accumulate's
// scalar.
inline bool OnednnMatMul(const MatMulGeometry& g, const void* a,
                         const void* b, void* c,
                         const float* scale = nullptr) {
  namespace d = matmul_onednn_detail;
  if (g.threads > 1 && g.batch_rank == 0 && g.lda == 0 && g.ldb == 0 &&
      g.ldc == 0) {
    if (WorkPool* pool = WorkPool::For(g.threads)) {
      return d::SplitMatMul(g, a, b, c, *pool, scale);
    }
  }
  dnnl::stream& stream = OnednnPrepareThread(g.threads);
  const std::shared_ptr<const d::Primitive> p =
      d::Cache().Get(g, [&g] { return d::Make(g); });
  if (!p->available) return false;
  d::Execute(*p, a, b, c, stream, scale);
  return true;
}

// The geometry of one dense 2-D product of `data_type` on `threads`
// threads (before OnednnThreads).
inline MatMulGeometry MatMul2D(int64_t m, int64_t k, int64_t n,
                               bool transpose_a, bool transpose_b,
                               dnnl_data_type_t data_type, int threads) {
  MatMulGeometry g{};
  g.m = m;
  g.k = k;
  g.n = n;
  g.transpose_a = transpose_a;
  g.transpose_b = transpose_b;
  g.data_type = data_type;
  g.threads = OnednnThreads(threads);
  return g;
}

// One float32 product, with MatMulEigen's signature (matmul_eigen.h), M, K
// and N positive.  Returns false when oneDNN cannot run it.
inline bool MatMulOnednn(const float* a, const float* b, float* c, int64_t m,
                         int64_t k, int64_t n, bool transpose_a,
                         bool transpose_b, int threads) {
  return OnednnMatMul(
      MatMul2D(m, k, n, transpose_a, transpose_b, dnnl_f32, threads), a, b,
      c);
}

// c[M,N] -= alpha * op(a) · op(b) in one primitive (the product's scaling
// and the subtraction as post-ops), with MatMulOnednn's other arguments; c
// must not overlap a or b.  Gives the bits of c - alpha * (the product
// MatMulOnednn computes) where oneDNN accumulates both the same way:
// (-alpha) * p rounds to -(alpha * p), and c + (-x) is c - x.  Returns
// false, having done nothing, when oneDNN cannot run it.  May throw
// std::bad_alloc.
inline bool MatMulSubtractScaledOnednn(const float* a, const float* b,
                                       float* c, int64_t m, int64_t k,
                                       int64_t n, bool transpose_a,
                                       bool transpose_b, float alpha,
                                       int threads) {
  namespace d = matmul_onednn_detail;
  MatMulGeometry g =
      MatMul2D(m, k, n, transpose_a, transpose_b, dnnl_f32, threads);
  g.accumulate = 1;
  const float scale = -alpha;
  if (OnednnMatMul(g, a, b, c, &scale)) return true;
  // Blocks oneDNN cannot accumulate (SplitPlan): each chunk computes
  // its block of the plain product into scratch and subtracts it from its
  // rows of c at once, while they are in its cache (the same bits as the
  // product and then the update, which a separate pass over the whole
  // matrix cost ~5 us more in the MLP's 2-thread step).
  WorkPool* pool = g.threads > 1 ? WorkPool::For(g.threads) : nullptr;
  if (pool == nullptr) return false;
  const std::shared_ptr<const d::SplitPlan> plan =
      d::PlanSplit(g, pool->threads());
  std::unique_ptr<float[]> product(new float[static_cast<size_t>(m * n)]);
  if (plan->whole != nullptr && plan->whole_plain && pool->RunsAlone()) {
    d::Execute(*plan->whole, a, b, product.get(), OnednnPrepareThread(1));
    d::SubtractScaled(c, product.get(), m * n, alpha);
    return true;
  }
  MatMulGeometry plain = g;
  plain.accumulate = 0;
  const d::Blocks blocks(plain, pool->threads(), plan->by_columns);
  if (!blocks.available()) return false;
  pool->Run(blocks.chunks(), [&](int64_t i) {
    blocks.Run(i, a, b, product.get());
    const int64_t start = blocks.Start(i), extent = blocks.Extent(i);
    const int64_t rows = blocks.by_columns() ? m : extent;
    const int64_t cols = blocks.by_columns() ? extent : n;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t first =
          blocks.by_columns() ? r * n + start : (start + r) * n;
      d::SubtractScaled(c + first, product.get() + first, cols, alpha);
    }
  });
  return true;
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_MATMUL_ONEDNN_H_
