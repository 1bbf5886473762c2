// Conv2D and pooling (float32, NHWC) through oneDNN, callable without the
// plugin: the kernels in nn_conv.cc and nn_pool.cc are thin shells around
// OnednnConv2D() and OnednnPool2D(), and bench/ may include this header to
// time the very same primitives against oneDNN called by hand.
//
// Activations are bound to oneDNN in place (format_tag::nhwc over the
// caller's buffers), never copied.  The filter is declared with
// format_tag::any so that oneDNN picks its fast blocked weights layout (with
// HWIO imposed it falls back to im2col + GEMM).  Reordering HWIO into that
// layout is a separate primitive that costs as much as a sizeable fraction
// of the convolution on a busy machine (its parallel region waits for every
// thread), so the packed filter is kept, per primitive and filter buffer,
// and reused for as long as the filter's bytes are unchanged: a memcmp
// against a saved copy, which also catches a variable updated in place.
//
// Header-only; needs WEFT_CPU_HAVE_ONEDNN.  Throws dnnl::error or
// std::bad_alloc on failure (the kernels turn either into a status).
#ifndef WEFT_PLUGINS_CPU_ONEDNN_NN_H_
#define WEFT_PLUGINS_CPU_ONEDNN_NN_H_

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "nn_common.h"
#include "onednn_engine.h"
#include "work_pool.h"

namespace weft_cpu {
namespace onednn_nn_detail {

using dnnl::memory;
using Tag = memory::format_tag;

inline memory::desc Nhwc(int64_t n, int64_t h, int64_t w, int64_t c) {
  // oneDNN names dims in NCHW order whatever the layout; the tag says how
  // they lie in memory.
  return memory::desc({n, c, h, w}, memory::data_type::f32, Tag::nhwc);
}

// What a primitive depends on: the window and the thread count it was
// tuned for (see onednn_engine.h).
struct Key {
  Window2D window;
  int64_t out_channels;  // Cout for Conv2D; 0 for pooling
  int64_t kind;  // 0 Conv2D, 1 MaxPool, 2 AvgPool, 3 FusedConv2D with the
                 // ReLU post-op, 4 FusedConv2D without (OnednnConv2D)
  int64_t threads;
  int64_t extra;  // what else a kind depends on (0 where nothing)
};

// A zero-filled Key (compared as bytes, padding included).
inline Key MakeKey(const Window2D& w, int64_t out_channels, int64_t kind,
                   int threads, int64_t extra = 0) {
  Key key{};
  key.window = w;
  key.out_channels = out_channels;
  key.kind = kind;
  key.threads = threads;
  key.extra = extra;
  return key;
}

// A 64-byte aligned heap block.
struct AlignedBlock {
  explicit AlignedBlock(size_t bytes)
      : data(std::aligned_alloc(64, (bytes + 63) / 64 * 64)) {
    if (data == nullptr) throw std::bad_alloc();
  }
  ~AlignedBlock() { std::free(data); }
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  void* data;
};

// A filter in oneDNN's layout, with the HWIO bytes it was made from.
struct PackedFilter {
  PackedFilter(const void* from, size_t hwio_bytes, size_t packed_bytes)
      : source(from), hwio(hwio_bytes), packed(packed_bytes) {}
  const void* source;  // the buffer it came from: a hint, never trusted
  AlignedBlock hwio;
  AlignedBlock packed;
};

// How a primitive that reads a filter (the forward convolution, and the
// backward one to the data) wants it: HWIO reordered into `weights`, with
// the packed filters kept per primitive, one per filter buffer seen lately.
// Layers of one shape share the primitive but not the weights, and deep
// networks repeat a shape a few dozen times; memory is only taken by slots
// in use.
struct FilterPacking {
  static constexpr int kFilterSlots = 32;

  memory::desc user_weights, weights;
  dnnl::reorder weights_reorder;  // empty when oneDNN takes HWIO as is
  size_t hwio_bytes = 0;

  mutable std::mutex filters_mutex;
  mutable std::shared_ptr<const PackedFilter> filters[kFilterSlots];
  mutable int next_slot = 0;

  // Sets weights to `chosen`, and the reorder when it is not HWIO.
  void Choose(const memory::desc& chosen) {
    weights = chosen;
    if (weights != user_weights) {
      hwio_bytes = user_weights.get_size();
      const dnnl::engine& engine = OnednnEngine();
      weights_reorder = dnnl::reorder(
          dnnl::reorder::primitive_desc(engine, user_weights, engine,
                                        weights));
    }
  }
};

// The filter [Cout, Cin, KH, KW] in oneDNN's names, laid out HWIO.
inline memory::desc HwioFilter(const Window2D& w, int64_t out_channels,
                               Tag tag = Tag::hwio) {
  return memory::desc({out_channels, w.channels, w.k_h, w.k_w},
                      memory::data_type::f32, tag);
}

// The forward convolution's description (oneDNN counts dilation from 0,
// no gap; TensorFlow from 1).
inline dnnl::convolution_forward::desc ForwardDesc(const Window2D& w,
                                                   int64_t out_channels,
                                                   dnnl::prop_kind kind) {
  return dnnl::convolution_forward::desc(
      kind, dnnl::algorithm::convolution_direct,
      Nhwc(w.batch, w.in_h, w.in_w, w.channels),
      HwioFilter(w, out_channels, Tag::any),
      Nhwc(w.batch, w.out_h, w.out_w, out_channels), {w.stride_h, w.stride_w},
      {w.dilation_h - 1, w.dilation_w - 1}, {w.pad_top, w.pad_left},
      {w.pad_bottom, w.pad_right});
}

// A user scratchpad makes execution safe from several threads at once (the
// library's own is shared per primitive) and lives in our per-thread
// scratch, so steady-state runs allocate nothing.
inline dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

struct Conv {
  dnnl::convolution_forward primitive;
  memory::desc src, dst, scratchpad;
  memory::desc bias;  // FusedConv2D only
  size_t scratchpad_bytes = 0;
  FilterPacking filter;
  bool brgemm = false;  // oneDNN chose one of its brgemm kernels
};

struct Pool {
  dnnl::pooling_forward primitive;
  memory::desc src, dst, scratchpad;
  size_t scratchpad_bytes = 0;
};

// `fused`: with a bias [Cout] added in the same pass (FusedConv2D), and
// with `relu` oneDNN's ReLU post-op too (OnednnConv2D says when).
inline std::shared_ptr<const Conv> MakeConv(const Window2D& w,
                                            int64_t out_channels,
                                            bool fused = false,
                                            bool relu = false) {
  auto conv = std::make_shared<Conv>();
  conv->src = Nhwc(w.batch, w.in_h, w.in_w, w.channels);
  conv->dst = Nhwc(w.batch, w.out_h, w.out_w, out_channels);
  conv->filter.user_weights = HwioFilter(w, out_channels);
  dnnl::primitive_attr attr = UserScratchpad();
  dnnl::convolution_forward::desc desc =
      ForwardDesc(w, out_channels, dnnl::prop_kind::forward_inference);
  if (fused) {
    conv->bias = memory::desc({out_channels}, memory::data_type::f32,
                              Tag::x);
    desc = dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_inference,
        dnnl::algorithm::convolution_direct, conv->src,
        HwioFilter(w, out_channels, Tag::any), conv->bias, conv->dst,
        {w.stride_h, w.stride_w}, {w.dilation_h - 1, w.dilation_w - 1},
        {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
  }
  dnnl::convolution_forward::primitive_desc pd(desc, attr, OnednnEngine());
  conv->primitive = dnnl::convolution_forward(pd);
  conv->brgemm = std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
  conv->scratchpad = pd.scratchpad_desc();
  conv->scratchpad_bytes = conv->scratchpad.get_size();
  conv->filter.Choose(pd.weights_desc());
  return conv;
}

inline std::shared_ptr<const Pool> MakePool(const Window2D& w, bool max) {
  auto pool = std::make_shared<Pool>();
  pool->src = Nhwc(w.batch, w.in_h, w.in_w, w.channels);
  pool->dst = Nhwc(w.batch, w.out_h, w.out_w, w.channels);
  // exclude_padding is TensorFlow's SAME average: padded positions count
  // neither in the sum nor in the divisor.  Max pooling ignores them.
  dnnl::pooling_forward::desc desc(
      dnnl::prop_kind::forward_inference,
      max ? dnnl::algorithm::pooling_max
          : dnnl::algorithm::pooling_avg_exclude_padding,
      pool->src, pool->dst, {w.stride_h, w.stride_w}, {w.k_h, w.k_w},
      {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
  dnnl::pooling_forward::primitive_desc pd(desc, UserScratchpad(),
                                           OnednnEngine());
  pool->primitive = dnnl::pooling_forward(pd);
  pool->scratchpad = pd.scratchpad_desc();
  pool->scratchpad_bytes = pool->scratchpad.get_size();
  return pool;
}

struct Primitive {
  std::shared_ptr<const Conv> conv;
  std::shared_ptr<const Pool> pool;
};

inline OnednnCache<Key, Primitive>& Cache() {
  static OnednnCache<Key, Primitive> cache;
  return cache;
}

inline std::shared_ptr<const Primitive> Find(const Window2D& w,
                                             int64_t out_channels,
                                             int64_t kind, int threads) {
  return Cache().Get(MakeKey(w, out_channels, kind, threads), [&] {
    auto p = std::make_shared<Primitive>();
    if (kind == 0 || kind == 3 || kind == 4) {
      p->conv = MakeConv(w, out_channels, kind != 0, kind == 3);
    } else {
      p->pool = MakePool(w, kind == 1);
    }
    return std::shared_ptr<const Primitive>(std::move(p));
  });
}

// Executes through the C API, whose argument array needs no heap (the C++
// execute() takes an unordered_map), and waits for the work to finish.
inline void Execute(const dnnl::primitive& p, dnnl::stream& stream,
                    const dnnl_exec_arg_t* args, int count) {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(p.get(), stream.get(), count, args),
      "could not execute a primitive");
  stream.wait();
}

// The packed form of `filter` for `conv`: a kept one whose HWIO bytes match,
// or a fresh reorder, kept in place of the least recently added.
inline std::shared_ptr<const PackedFilter> PackFilter(
    const FilterPacking& conv, const float* filter, dnnl::stream& stream) {
  std::shared_ptr<const PackedFilter> kept;
  {
    std::lock_guard<std::mutex> lock(conv.filters_mutex);
    for (const auto& slot : conv.filters)
      if (slot && slot->source == filter) kept = slot;
  }
  if (kept && std::memcmp(kept->hwio.data, filter, conv.hwio_bytes) == 0)
    return kept;
  // A filter updated in place (every training step) is packed again into
  // the buffers of its kept copy where nothing else holds that copy (the
  // slot and `kept` are its only owners, and owners are only added under
  // the lock): a fresh copy each step would keep two of them alive in
  // turn (the CNN's two 5x5x32x64 packings: 0.8 MB more resident).
  std::shared_ptr<PackedFilter> fresh;
  int reused_slot = -1;
  if (kept) {
    std::lock_guard<std::mutex> lock(conv.filters_mutex);
    for (int i = 0; i < FilterPacking::kFilterSlots; ++i)
      if (conv.filters[i] == kept && kept.use_count() == 2) {
        conv.filters[i].reset();
        fresh = std::const_pointer_cast<PackedFilter>(std::move(kept));
        reused_slot = i;
        break;
      }
  }
  if (!fresh)
    fresh = std::make_shared<PackedFilter>(filter, conv.hwio_bytes,
                                           conv.weights.get_size());
  std::memcpy(fresh->hwio.data, filter, conv.hwio_bytes);
  const dnnl::engine& engine = OnednnEngine();
  memory from(conv.user_weights, engine, fresh->hwio.data);
  memory to(conv.weights, engine, fresh->packed.data);
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from.get()},
                                  {DNNL_ARG_TO, to.get()}};
  Execute(conv.weights_reorder, stream, args, 2);
  std::lock_guard<std::mutex> lock(conv.filters_mutex);
  int slot = -1;
  for (int i = 0; i < FilterPacking::kFilterSlots; ++i)
    if (conv.filters[i] && conv.filters[i]->source == filter) slot = i;
  if (slot < 0 && reused_slot >= 0 && !conv.filters[reused_slot])
    slot = reused_slot;
  if (slot < 0) {
    slot = conv.next_slot;
    conv.next_slot = (conv.next_slot + 1) % FilterPacking::kFilterSlots;
  }
  conv.filters[slot] = fresh;
  return fresh;
}

// The filter as `packing` wants it: the caller's HWIO buffer itself, or a
// kept packed copy (which *keep holds while the primitive runs).
inline void* FilterData(const FilterPacking& packing, const float* filter,
                        dnnl::stream& stream,
                        std::shared_ptr<const PackedFilter>* keep) {
  if (packing.hwio_bytes == 0) return const_cast<float*>(filter);
  *keep = PackFilter(packing, filter, stream);
  return (*keep)->packed.data;
}

// A convolution over a batch split into blocks of whole images, one per
// thread, run as chunks on the plugin's WorkPool with one-thread
// primitives (why not oneDNN's own OpenMP threads: work_pool.h).  `full`
// is the block geometry, `tail` the last (shorter) block's.  No pool (one
// block) when there is one thread, one image, or too little work to share
// (below 2^22 multiply-adds, about 40 us).  The blocks depend only on the
// geometry and the thread count, never on the load, so neither do the
// results.
// The threads a convolution's work is worth: `requested` as oneDNN can
// have them, or 1 below 2^22 multiply-adds (about 40 us).
inline int ConvThreads(const Window2D& w, int64_t out_channels,
                       int requested) {
  const int wanted = OnednnThreads(requested);
  const double macs = static_cast<double>(w.batch) *
                      static_cast<double>(w.out_h * w.out_w) *
                      static_cast<double>(w.k_h * w.k_w) *
                      static_cast<double>(w.channels * out_channels);
  return macs < 4194304.0 ? 1 : wanted;
}

struct BatchSplit {
  WorkPool* pool = nullptr;
  // Blocks of `per` images, the last one `tail`; one block (the whole batch,
  // no pool) when the batch is not split.
  int64_t per = 0, chunks = 1;
  Window2D full, tail;
  // The threads each block's primitive runs on: 1 when split; otherwise
  // oneDNN's (OpenMP), one when the work is too small to share.
  int threads = 1;

  BatchSplit(const Window2D& w, int64_t out_channels, int requested)
      : BatchSplit(w, ConvThreads(w, out_channels, requested)) {}
  // Blocks for `wanted` threads (as OnednnThreads gives them).
  explicit BatchSplit(const Window2D& w, int wanted)
      : per(w.batch), full(w), tail(w) {
    if (wanted <= 1) return;
    threads = wanted;
    if (w.batch < 2) return;
    pool = WorkPool::For(wanted);
    if (pool == nullptr) return;
    threads = 1;
    per = (w.batch + wanted - 1) / wanted;
    chunks = (w.batch + per - 1) / per;
    full.batch = per;
    tail.batch = w.batch - (chunks - 1) * per;
  }
  // Runs fn(i) for every block: on the pool, or on the caller.
  template <typename Fn>
  void Run(Fn&& fn) const {
    if (pool != nullptr) {
      pool->Run(chunks, fn);
    } else {
      fn(int64_t{0});
    }
  }
  // Block i's first image, and which of Entries() it runs (0 or 1).
  int64_t First(int64_t i) const { return i * per; }
  int Last(int64_t i) const { return i + 1 == chunks ? 1 : 0; }
  // find(geometry) for the full blocks and for the last one: the same
  // entry when every block is full.
  template <typename Find>
  auto Entries(Find&& find) const -> std::array<decltype(find(full)), 2> {
    auto first = find(full);
    return {first, tail.batch == per ? first : find(tail)};
  }
};

// The filter packed for the full blocks' primitive and the last block's,
// once here rather than by every block; keep[] holds the packed copies
// while the blocks run.
inline void PackForBlocks(const FilterPacking& full,
                          const FilterPacking& tail, const float* filter,
                          dnnl::stream& stream,
                          std::shared_ptr<const PackedFilter> keep[2],
                          void* data[2]) {
  data[0] = FilterData(full, filter, stream, &keep[0]);
  data[1] = &tail == &full ? data[0] : FilterData(tail, filter, stream, &keep[1]);
}

// FusedConv2D's ReLU over a block's output, as Weft's Relu computes it:
// NaN stays NaN.  oneDNN's ReLU post-op is a max instruction whose result
// for a NaN is its other operand, 0 (so are its clip and binary-max
// post-ops, checked on oneDNN 2.6 brgemm): a fused convolution gave 0
// where the unfused graph gave NaN.  So the post-op runs only where no NaN
// can reach it (OnednnConv2D's `relu_post_op`), and this pass otherwise.
inline void ReluBlock(float* data, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = data[i];
    data[i] = v < 0.0f ? 0.0f : v;
  }
}

// Runs `conv` on one block (scratchpad: the calling thread's).
inline void RunConv(const Conv& conv, void* weights_data, const float* input,
                    float* output, const float* bias, dnnl::stream& stream) {
  const dnnl::engine& engine = OnednnEngine();
  Scratch scratch(conv.scratchpad_bytes);
  memory src(conv.src, engine, const_cast<float*>(input));
  memory dst(conv.dst, engine, output);
  memory weights(conv.filter.weights, engine, weights_data);
  memory scratchpad(conv.scratchpad, engine, scratch.as<char>());
  if (bias != nullptr) {
    memory b(conv.bias, engine, const_cast<float*>(bias));
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                    {DNNL_ARG_WEIGHTS, weights.get()},
                                    {DNNL_ARG_BIAS, b.get()},
                                    {DNNL_ARG_DST, dst.get()},
                                    {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
    Execute(conv.primitive, stream, args, 5);
    return;
  }
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                  {DNNL_ARG_WEIGHTS, weights.get()},
                                  {DNNL_ARG_DST, dst.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  Execute(conv.primitive, stream, args, 4);
}

// The threads a pooling's work is worth: `requested` as oneDNN can have
// them, or 1 below 2^17 input elements (about 50 us; the pooling passes
// are memory-bound).
inline int PoolThreads(const Window2D& w, int requested) {
  const double elements = static_cast<double>(w.batch) *
                          static_cast<double>(w.in_h * w.in_w) *
                          static_cast<double>(w.channels);
  return elements < 131072.0 ? 1 : OnednnThreads(requested);
}

}  // namespace onednn_nn_detail

// output [N, OH, OW, Cout] = input [N, H, W, Cin] (*) filter [KH, KW, Cin,
// Cout], all float32 and dense, with the geometry of `w` (from
// ComputeWindow2D); with `bias` [Cout], relu(that + bias) (FusedConv2D):
// through oneDNN's ReLU post-op when `relu_post_op` (the caller's promise
// that no pre-activation is NaN: the post-op would give 0 for it), else as
// a pass over each block's output (ReluBlock).
// Every dim must be positive.  Runs on `threads` threads: a batch split
// into blocks on the WorkPool (BatchSplit).  Thread-safe.
inline void OnednnConv2D(const Window2D& w, int64_t out_channels,
                         const float* input, const float* filter,
                         float* output, int threads,
                         const float* bias = nullptr,
                         bool relu_post_op = false) {
  namespace d = onednn_nn_detail;
  const int64_t kind = bias == nullptr ? 0 : relu_post_op ? 3 : 4;
  const d::BatchSplit split(w, out_channels, threads);
  dnnl::stream& stream = OnednnPrepareThread(split.threads);
  const auto blocks = split.Entries([&](const Window2D& block) {
    return d::Find(block, out_channels, kind, split.threads);
  });
  std::shared_ptr<const d::PackedFilter> keep[2];
  void* weights[2];
  d::PackForBlocks(blocks[0]->conv->filter, blocks[1]->conv->filter, filter,
                   stream, keep, weights);
  const int64_t in_image = w.in_h * w.in_w * w.channels;
  const int64_t out_image = w.out_h * w.out_w * out_channels;
  split.Run([&](int64_t i) {
    const int b = split.Last(i);
    const int64_t first = split.First(i);
    d::RunConv(*blocks[b]->conv, weights[b], input + first * in_image,
               output + first * out_image, bias,
               OnednnPrepareThread(split.threads));
    if (kind == 4) {
      const int64_t images = b == 1 ? split.tail.batch : split.full.batch;
      d::ReluBlock(output + first * out_image, images * out_image);
    }
  });
}

// output [N, OH, OW, C] = max or mean (over valid elements) of input
// [N, H, W, C] over the windows of `w`.  Every dim must be positive.  On
// several threads a batch of images runs as blocks on the WorkPool with
// one-thread primitives, like the convolutions (BatchSplit; why not
// oneDNN's OpenMP: work_pool.h — a pooling region's static split waited
// for a worker that shared its core with another process); one image
// alone runs on oneDNN's threads.  An image's outputs depend on its own
// windows alone, so the blocks give the whole's bits.  Thread-safe.
inline void OnednnPool2D(const Window2D& w, bool max, const float* input,
                         float* output, int threads) {
  namespace d = onednn_nn_detail;
  const d::BatchSplit split(w, d::PoolThreads(w, threads));
  OnednnPrepareThread(split.threads);
  const auto blocks = split.Entries([&](const Window2D& block) {
    return d::Find(block, 0, max ? 1 : 2, split.threads);
  });
  const int64_t in_image = w.in_h * w.in_w * w.channels;
  const int64_t out_image = w.out_h * w.out_w * w.channels;
  split.Run([&](int64_t i) {
    const d::Pool& pool = *blocks[split.Last(i)]->pool;
    const int64_t first = split.First(i);
    dnnl::stream& stream = OnednnPrepareThread(split.threads);
    const dnnl::engine& engine = OnednnEngine();
    Scratch scratch(pool.scratchpad_bytes);
    d::memory src(pool.src, engine,
                  const_cast<float*>(input + first * in_image));
    d::memory dst(pool.dst, engine, output + first * out_image);
    d::memory scratchpad(pool.scratchpad, engine, scratch.as<char>());
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                    {DNNL_ARG_DST, dst.get()},
                                    {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
    d::Execute(pool.primitive, stream, args, 3);
  });
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ONEDNN_NN_H_
