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

// din [N, H, W, Cin] = the gradient of Conv2D's input for the output
// gradient dy [N, OH, OW, Cout] and filter [KH, KW, Cin, Cout].
inline void OnednnConv2DBackpropInput(const Window2D& w, int64_t out_channels,
                                      const float* filter, const float* dy,
                                      float* din, int threads) {
  namespace d = onednn_nn_detail;
  threads = OnednnThreads(threads);
  dnnl::stream& stream = OnednnPrepareThread(threads);
  const auto entry = d::FindBackward(w, out_channels, d::kConvData, threads);
  const d::ConvData& conv = *entry->data;
  const dnnl::engine& engine = OnednnEngine();
  std::shared_ptr<const d::PackedFilter> packed;
  void* weights_data = d::FilterData(conv.filter, filter, stream, &packed);
  Scratch scratch(conv.scratchpad_bytes);
  d::memory diff_dst(conv.diff_dst, engine, const_cast<float*>(dy));
  d::memory diff_src(conv.diff_src, engine, din);
  d::memory weights(conv.filter.weights, engine, weights_data);
  d::memory scratchpad(conv.scratchpad, engine, scratch.as<char>());
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_DIFF_DST, diff_dst.get()},
                                  {DNNL_ARG_WEIGHTS, weights.get()},
                                  {DNNL_ARG_DIFF_SRC, diff_src.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  d::Execute(conv.primitive, stream, args, 4);
}

// dfilter [KH, KW, Cin, Cout] = the gradient of Conv2D's filter for input
// [N, H, W, Cin] and output gradient dy [N, OH, OW, Cout].
inline void OnednnConv2DBackpropFilter(const Window2D& w, int64_t out_channels,
                                       const float* input, const float* dy,
                                       float* dfilter, int threads) {
  namespace d = onednn_nn_detail;
  threads = OnednnThreads(threads);
  dnnl::stream& stream = OnednnPrepareThread(threads);
  const auto entry =
      d::FindBackward(w, out_channels, d::kConvWeights, threads);
  const d::ConvWeights& conv = *entry->weights;
  const dnnl::engine& engine = OnednnEngine();
  d::Regions regions;
  const size_t pad_at = regions.Add(conv.scratchpad_bytes);
  const size_t packed_at = regions.Add(conv.packed_bytes);
  Scratch scratch(regions.total);
  char* base = scratch.as<char>();
  void* weights_data = conv.packed_bytes != 0 ? base + packed_at
                                              : static_cast<void*>(dfilter);
  d::memory src(conv.src, engine, const_cast<float*>(input));
  d::memory diff_dst(conv.diff_dst, engine, const_cast<float*>(dy));
  d::memory diff_weights(conv.diff_weights, engine, weights_data);
  d::memory scratchpad(conv.scratchpad, engine, base + pad_at);
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                  {DNNL_ARG_DIFF_DST, diff_dst.get()},
                                  {DNNL_ARG_DIFF_WEIGHTS, diff_weights.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  d::Execute(conv.primitive, stream, args, 4);
  if (conv.packed_bytes == 0) return;
  d::memory hwio(conv.user_diff_weights, engine, dfilter);
  const dnnl_exec_arg_t reorder_args[] = {{DNNL_ARG_FROM, diff_weights.get()},
                                          {DNNL_ARG_TO, hwio.get()}};
  d::Execute(conv.to_hwio, stream, reorder_args, 2);
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ONEDNN_NN_BACKWARD_H_
