// The gradients of Conv2D (float32, NHWC) through oneDNN's backward
// primitives: Conv2DBackpropInput (backward data) and Conv2DBackpropFilter
// (backward weights).  (Pooling gradients stay on the plugin's loops,
// which measured 2 - 3.5x faster than oneDNN's pooling backward here: see
// gradient_helpers_reduce_nn.cc.)
// As onednn_nn.h: activations are bound in place (format_tag::nhwc), the
// filter that backward data reads is packed once per filter buffer and
// kept, primitives are cached per window, thread count and kind, and every
// scratchpad is the caller thread's Scratch, so steady-state steps allocate
// nothing.
//
// The filter gradient is computed in the layout oneDNN picks and reordered
// into the caller's HWIO buffer (one small reorder per call; imposing HWIO
// on the primitive makes oneDNN fall back to im2col + GEMM).
//
// Header-only; needs WEFT_CPU_HAVE_ONEDNN.  Throws dnnl::error or
// std::bad_alloc on failure.
#ifndef WEFT_PLUGINS_CPU_ONEDNN_NN_BACKWARD_H_
#define WEFT_PLUGINS_CPU_ONEDNN_NN_BACKWARD_H_

#include <memory>
#include <mutex>

#include "onednn_nn.h"

namespace weft_cpu {
namespace onednn_nn_detail {

enum BackwardKind : int64_t {
  kConvData = 10,
  kConvWeights = 11,
};

struct ConvData {
  dnnl::convolution_backward_data primitive;
  memory::desc diff_src, diff_dst, scratchpad;
  size_t scratchpad_bytes = 0;
  FilterPacking filter;
};

struct ConvWeights {
  dnnl::convolution_backward_weights primitive;
  memory::desc src, diff_dst, diff_weights, user_diff_weights, scratchpad;
  dnnl::reorder to_hwio;  // empty when the primitive writes HWIO itself
  // to_hwio adding to what the HWIO buffer holds (a sum post-op), made at
  // its first use (AddingToHwio): only split gradients need it.
  mutable std::once_flag adding_once;
  mutable dnnl::reorder add_to_hwio;
  size_t scratchpad_bytes = 0;
  size_t packed_bytes = 0;  // diff_weights in the chosen layout, if not HWIO
};

struct Backward {
  std::shared_ptr<const ConvData> data;
  std::shared_ptr<const ConvWeights> weights;
};

inline std::shared_ptr<const ConvData> MakeConvData(const Window2D& w,
                                                    int64_t out_channels) {
  const dnnl::engine& engine = OnednnEngine();
  auto conv = std::make_shared<ConvData>();
  conv->diff_src = Nhwc(w.batch, w.in_h, w.in_w, w.channels);
  conv->diff_dst = Nhwc(w.batch, w.out_h, w.out_w, out_channels);
  conv->filter.user_weights = HwioFilter(w, out_channels);
  dnnl::convolution_forward::primitive_desc hint(
      ForwardDesc(w, out_channels, dnnl::prop_kind::forward_training),
      engine);
  dnnl::convolution_backward_data::desc desc(
      dnnl::algorithm::convolution_direct, conv->diff_src,
      HwioFilter(w, out_channels, Tag::any), conv->diff_dst,
      {w.stride_h, w.stride_w}, {w.dilation_h - 1, w.dilation_w - 1},
      {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
  dnnl::convolution_backward_data::primitive_desc pd(desc, UserScratchpad(),
                                                     engine, hint);
  conv->primitive = dnnl::convolution_backward_data(pd);
  conv->scratchpad = pd.scratchpad_desc();
  conv->scratchpad_bytes = conv->scratchpad.get_size();
  conv->filter.Choose(pd.weights_desc());
  return conv;
}

inline std::shared_ptr<const ConvWeights> MakeConvWeights(
    const Window2D& w, int64_t out_channels) {
  const dnnl::engine& engine = OnednnEngine();
  auto conv = std::make_shared<ConvWeights>();
  conv->src = Nhwc(w.batch, w.in_h, w.in_w, w.channels);
  conv->diff_dst = Nhwc(w.batch, w.out_h, w.out_w, out_channels);
  conv->user_diff_weights = HwioFilter(w, out_channels);
  dnnl::convolution_forward::primitive_desc hint(
      ForwardDesc(w, out_channels, dnnl::prop_kind::forward_training),
      engine);
  dnnl::convolution_backward_weights::desc desc(
      dnnl::algorithm::convolution_direct, conv->src,
      HwioFilter(w, out_channels, Tag::any), conv->diff_dst,
      {w.stride_h, w.stride_w}, {w.dilation_h - 1, w.dilation_w - 1},
      {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
  dnnl::convolution_backward_weights::primitive_desc pd(
      desc, UserScratchpad(), engine, hint);
  conv->primitive = dnnl::convolution_backward_weights(pd);
  conv->scratchpad = pd.scratchpad_desc();
  conv->scratchpad_bytes = conv->scratchpad.get_size();
  conv->diff_weights = pd.diff_weights_desc();
  if (conv->diff_weights != conv->user_diff_weights) {
    conv->packed_bytes = conv->diff_weights.get_size();
    conv->to_hwio = dnnl::reorder(dnnl::reorder::primitive_desc(
        engine, conv->diff_weights, engine, conv->user_diff_weights));
  }
  return conv;
}

inline OnednnCache<Key, Backward>& BackwardCache() {
  static OnednnCache<Key, Backward> cache;
  return cache;
}

inline std::shared_ptr<const Backward> FindBackward(const Window2D& w,
                                                    int64_t out_channels,
                                                    BackwardKind kind,
                                                    int threads) {
  Key key{};
  key.window = w;
  key.out_channels = out_channels;
  key.kind = kind;
  key.threads = threads;
  return BackwardCache().Get(key, [&] {
    auto b = std::make_shared<Backward>();
    switch (kind) {
      case kConvData: b->data = MakeConvData(w, out_channels); break;
      case kConvWeights: b->weights = MakeConvWeights(w, out_channels); break;
    }
    return std::shared_ptr<const Backward>(std::move(b));
  });
}

// Offsets into one Scratch for several 64-byte aligned regions.
struct Regions {
  size_t total = 0;
  size_t Add(size_t bytes) {
    const size_t at = total;
    total += (bytes + 63) / 64 * 64;
    return at;
  }
};

}  // namespace onednn_nn_detail

namespace onednn_nn_detail {

// Backward data on one block.
inline void RunConvData(const ConvData& conv, void* weights_data,
                        const float* dy, float* din, dnnl::stream& stream) {
  const dnnl::engine& engine = OnednnEngine();
  Scratch scratch(conv.scratchpad_bytes);
  memory diff_dst(conv.diff_dst, engine, const_cast<float*>(dy));
  memory diff_src(conv.diff_src, engine, din);
  memory weights(conv.filter.weights, engine, weights_data);
  memory scratchpad(conv.scratchpad, engine, scratch.as<char>());
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_DIFF_DST, diff_dst.get()},
                                  {DNNL_ARG_WEIGHTS, weights.get()},
                                  {DNNL_ARG_DIFF_SRC, diff_src.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  Execute(conv.primitive, stream, args, 4);
}

// conv.to_hwio adding to its destination: one rounding per element, as
// `dfilter[j] += x` (conv.packed_bytes != 0).
inline const dnnl::reorder& AddingToHwio(const ConvWeights& conv) {
  std::call_once(conv.adding_once, [&conv] {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    dnnl::primitive_attr adding;
    adding.set_post_ops(sum);
    const dnnl::engine& engine = OnednnEngine();
    conv.add_to_hwio = dnnl::reorder(dnnl::reorder::primitive_desc(
        engine, conv.diff_weights, engine, conv.user_diff_weights, adding));
  });
  return conv.add_to_hwio;
}

// Backward weights on one block, into the HWIO buffer `dfilter`, or added
// to what it holds when `add` (only where conv.packed_bytes != 0).
inline void RunConvWeights(const ConvWeights& conv, const float* input,
                           const float* dy, float* dfilter,
                           dnnl::stream& stream, bool add = false) {
  const dnnl::engine& engine = OnednnEngine();
  Regions regions;
  const size_t pad_at = regions.Add(conv.scratchpad_bytes);
  const size_t packed_at = regions.Add(conv.packed_bytes);
  Scratch scratch(regions.total);
  char* base = scratch.as<char>();
  void* weights_data = conv.packed_bytes != 0 ? base + packed_at
                                              : static_cast<void*>(dfilter);
  memory src(conv.src, engine, const_cast<float*>(input));
  memory diff_dst(conv.diff_dst, engine, const_cast<float*>(dy));
  memory diff_weights(conv.diff_weights, engine, weights_data);
  memory scratchpad(conv.scratchpad, engine, base + pad_at);
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                  {DNNL_ARG_DIFF_DST, diff_dst.get()},
                                  {DNNL_ARG_DIFF_WEIGHTS, diff_weights.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  Execute(conv.primitive, stream, args, 4);
  if (conv.packed_bytes == 0) return;
  memory hwio(conv.user_diff_weights, engine, dfilter);
  const dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, diff_weights.get()},
                                          {DNNL_ARG_TO, hwio.get()}};
  Execute(add ? AddingToHwio(conv) : conv.to_hwio, stream, reorder_args, 2);
}

}  // namespace onednn_nn_detail

// din [N, H, W, Cin] = the gradient of Conv2D's input for the output
// gradient dy [N, OH, OW, Cout] and filter [KH, KW, Cin, Cout].  Threads as
// OnednnConv2D: blocks of images on the WorkPool.
inline void OnednnConv2DBackpropInput(const Window2D& w, int64_t out_channels,
                                      const float* filter, const float* dy,
                                      float* din, int threads) {
  namespace d = onednn_nn_detail;
  const d::BatchSplit split(w, out_channels, threads);
  dnnl::stream& stream = OnednnPrepareThread(split.threads);
  const auto blocks = split.Entries([&](const Window2D& block) {
    return d::FindBackward(block, out_channels, d::kConvData, split.threads);
  });
  std::shared_ptr<const d::PackedFilter> keep[2];
  void* weights[2];
  d::PackForBlocks(blocks[0]->data->filter, blocks[1]->data->filter, filter,
                   stream, keep, weights);
  const int64_t in_image = w.in_h * w.in_w * w.channels;
  const int64_t out_image = w.out_h * w.out_w * out_channels;
  split.Run([&](int64_t i) {
    const int b = split.Last(i);
    const int64_t first = split.First(i);
    d::RunConvData(*blocks[b]->data, weights[b], dy + first * out_image,
                   din + first * in_image, OnednnPrepareThread(split.threads));
  });
}

// dfilter [KH, KW, Cin, Cout] = the gradient of Conv2D's filter for input
// [N, H, W, Cin] and output gradient dy [N, OH, OW, Cout].  Threads as
// OnednnConv2D: each block of images computes its own filter gradient, and
// the blocks' gradients are summed in block order (a fixed order: the
// result does not depend on which thread ran which block, nor on whether
// the pool runs alone).
inline void OnednnConv2DBackpropFilter(const Window2D& w, int64_t out_channels,
                                       const float* input, const float* dy,
                                       float* dfilter, int threads) {
  namespace d = onednn_nn_detail;
  const d::BatchSplit split(w, out_channels, threads);
  OnednnPrepareThread(split.threads);
  const auto blocks = split.Entries([&](const Window2D& block) {
    return d::FindBackward(block, out_channels, d::kConvWeights,
                           split.threads);
  });
  const int64_t filter_size = w.k_h * w.k_w * w.channels * out_channels;
  const int64_t in_image = w.in_h * w.in_w * w.channels;
  const int64_t out_image = w.out_h * w.out_w * out_channels;
  // Where the pool would run every block on this thread anyway (WorkPool::
  // RunsAlone) and the gradient comes out of oneDNN's own layout, each
  // block after the first adds its gradient to dfilter in its reorder into
  // HWIO: the same sums in the same order as the loop below (block 0, then
  // + block 1, ...), hence the same bits, without the partial gradients'
  // buffer and their pass.
  if (split.pool != nullptr && split.chunks > 1 &&
      blocks[0]->weights->packed_bytes != 0 &&
      blocks[1]->weights->packed_bytes != 0 && split.pool->RunsAlone()) {
    for (int64_t i = 0; i < split.chunks; ++i) {
      const int64_t first = split.First(i);
      d::RunConvWeights(*blocks[split.Last(i)]->weights,
                        input + first * in_image, dy + first * out_image,
                        dfilter, OnednnPrepareThread(1), i > 0);
    }
    return;
  }
  // Block 0 writes dfilter itself; the others their own gradients here.
  std::unique_ptr<d::AlignedBlock> partial;
  if (split.chunks > 1) {
    partial.reset(new d::AlignedBlock(static_cast<size_t>(split.chunks - 1) *
                                      static_cast<size_t>(filter_size) *
                                      sizeof(float)));
  }
  float* partials = partial ? static_cast<float*>(partial->data) : nullptr;
  split.Run([&](int64_t i) {
    const int64_t first = split.First(i);
    float* out = i == 0 ? dfilter : partials + (i - 1) * filter_size;
    d::RunConvWeights(*blocks[split.Last(i)]->weights, input + first * in_image,
                      dy + first * out_image, out,
                      OnednnPrepareThread(split.threads));
  });
  for (int64_t i = 1; i < split.chunks; ++i) {
    const float* add = partials + (i - 1) * filter_size;
    for (int64_t j = 0; j < filter_size; ++j) dfilter[j] += add[j];
  }
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ONEDNN_NN_BACKWARD_H_
