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
// The filter gradient of a stride-1, undilated convolution is computed as
// a forward convolution over blocks of images (ConvWeightsAsForward: 25 -
// 30 % faster than the backward-weights primitive); other filter gradients
// by the backward-weights primitive.  Either computes in the layout oneDNN
// picks and reorders into the caller's HWIO buffer once per call (imposing
// HWIO on the primitive makes oneDNN fall back to im2col + GEMM).  The
// input gradient of a stride-1, undilated convolution runs as a forward
// convolution with the filter turned where oneDNN's forward kernel for it
// is brgemm and its backward-data kernel not (DataAsForward: AVX-512).
//
// Header-only; needs WEFT_CPU_HAVE_ONEDNN.  Throws dnnl::error or
// std::bad_alloc on failure.
#ifndef WEFT_PLUGINS_CPU_ONEDNN_NN_BACKWARD_H_
#define WEFT_PLUGINS_CPU_ONEDNN_NN_BACKWARD_H_

#include <cstring>
#include <memory>
#include <mutex>

#include "onednn_nn.h"

namespace weft_cpu {
namespace onednn_nn_detail {

enum BackwardKind : int64_t {
  kConvData = 10,
  kConvWeights = 11,
};
// The cache kind of FindConvWeightsAsForward's entries.
constexpr int64_t kConvWeightsAsForward = 12;

// The cache kind of DataAsForward's entries.
constexpr int64_t kConvDataAsForward = 13;

struct ConvData {
  dnnl::convolution_backward_data primitive;
  memory::desc diff_src, diff_dst, scratchpad;
  size_t scratchpad_bytes = 0;
  FilterPacking filter;
  bool brgemm = false;  // oneDNN chose one of its brgemm kernels
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

// The filter gradient of a stride-1, undilated convolution as a forward
// convolution, over a block of images:
//   dfilter[kh, kw, ci, co] = sum over n, oh, ow of
//       input[n, oh + kh - pad_top, ow + kw - pad_left, ci] * dy[n, oh, ow, co]
// is a convolution whose batch is ci, whose input channels are the images n,
// whose filter is dy (co filters of n channels and OH x OW taps) and whose
// output is OC x KH x KW per ci.  Both operands are reordered from NHWC
// (described in place with strides, no copy of ours) into the layouts the
// forward primitive picks, block by block of images, and the primitive adds
// each block's sum to its output (a sum post-op), reordered into the HWIO
// gradient once at the end.
// Why: oneDNN 2.6's backward-weights primitive (jit:avx2) ran the CNN's
// second layer (64 x 14 x 14, 32 -> 64, 5x5) in 34.5 ms at one thread on a
// Zen 1 core; this form in blocks of 8 images, reorders included, in
// 26.1 ms (the blocks' operands stay in cache: all 64 images in one block
// took 30.4).  Across shapes measured there (3x3 layers of 7 x 7 to 56 x 56
// images and 64 to 256 channels, the CNN's first layer) it was 25 - 30 %
// faster; see ImagesPerBlock for the block size.
struct ConvWeightsAsForward {
  dnnl::convolution_forward primitive;  // with a sum post-op
  // The NHWC input and dy of one block, and the HWIO gradient, as strided
  // views in the forward convolution's terms.
  memory::desc user_src, user_weights, user_dst;
  memory::desc src, weights, dst, scratchpad;
  dnnl::reorder to_src, to_weights, to_hwio;
  // to_hwio adding to what the HWIO buffer holds (a sum post-op), made at
  // its first use: only a split gradient under load needs it.
  mutable std::once_flag adding_once;
  mutable dnnl::reorder add_to_hwio;
  size_t scratchpad_bytes = 0;
};

struct Backward {
  std::shared_ptr<const ConvData> data;
  std::shared_ptr<const ConvWeights> weights;
  std::shared_ptr<const ConvWeightsAsForward> as_forward;
  // kConvDataAsForward: whether the input gradient runs as the forward
  // convolution of `forward_window` (DataAsForward).
  bool data_as_forward = false;
  Window2D forward_window;
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
  conv->brgemm = std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
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

// `w` is the block's geometry (w.batch images); `dst` (if not null) imposes
// the output layout, so that a last, shorter block of images adds into the
// same buffer as the full blocks.
inline std::shared_ptr<const ConvWeightsAsForward> MakeConvWeightsAsForward(
    const Window2D& w, int64_t out_channels, const memory::desc* dst) {
  const dnnl::engine& engine = OnednnEngine();
  auto conv = std::make_shared<ConvWeightsAsForward>();
  const auto f32 = memory::data_type::f32;
  const int64_t c = w.channels;
  conv->user_src = memory::desc({c, w.batch, w.in_h, w.in_w}, f32,
                                {1, w.in_h * w.in_w * c, w.in_w * c, c});
  conv->user_weights = memory::desc(
      {out_channels, w.batch, w.out_h, w.out_w}, f32,
      {1, w.out_h * w.out_w * out_channels, w.out_w * out_channels,
       out_channels});
  conv->user_dst =
      memory::desc({c, out_channels, w.k_h, w.k_w}, f32,
                   {out_channels, 1, w.k_w * c * out_channels,
                    c * out_channels});
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      memory::desc({c, w.batch, w.in_h, w.in_w}, f32, Tag::any),
      memory::desc({out_channels, w.batch, w.out_h, w.out_w}, f32,
                   Tag::any),
      dst != nullptr ? *dst
                     : memory::desc({c, out_channels, w.k_h, w.k_w}, f32,
                                    Tag::any),
      {1, 1}, {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
  dnnl::post_ops sum;
  sum.append_sum(1.0f);
  dnnl::primitive_attr attr = UserScratchpad();
  attr.set_post_ops(sum);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  conv->primitive = dnnl::convolution_forward(pd);
  conv->src = pd.src_desc();
  conv->weights = pd.weights_desc();
  conv->dst = pd.dst_desc();
  conv->scratchpad = pd.scratchpad_desc();
  conv->scratchpad_bytes = conv->scratchpad.get_size();
  conv->to_src = dnnl::reorder(
      dnnl::reorder::primitive_desc(engine, conv->user_src, engine, conv->src));
  conv->to_weights = dnnl::reorder(dnnl::reorder::primitive_desc(
      engine, conv->user_weights, engine, conv->weights));
  conv->to_hwio = dnnl::reorder(dnnl::reorder::primitive_desc(
      engine, conv->dst, engine, conv->user_dst));
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
  return BackwardCache().Get(MakeKey(w, out_channels, kind, threads), [&] {
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

// A reorder from `from` to `to` adding to its destination (a sum post-op):
// one rounding per element, as `dfilter[j] += x`; made once, into `made`.
inline const dnnl::reorder& AddingReorder(std::once_flag& once,
                                          dnnl::reorder& made,
                                          const memory::desc& from,
                                          const memory::desc& to) {
  std::call_once(once, [&] {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    dnnl::primitive_attr adding;
    adding.set_post_ops(sum);
    const dnnl::engine& engine = OnednnEngine();
    made = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine, from, engine, to, adding));
  });
  return made;
}

// conv.to_hwio adding to its destination (conv.packed_bytes != 0).
inline const dnnl::reorder& AddingToHwio(const ConvWeights& conv) {
  return AddingReorder(conv.adding_once, conv.add_to_hwio, conv.diff_weights,
                       conv.user_diff_weights);
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

// Images per block of ConvWeightsAsForward: 8 (the input-channel block of
// the AVX2 layouts), fewer where 8 images' input and output gradient pass
// 4 MiB.  Measured at one thread on a Zen 1 core (512 KiB L2, 8 MiB L3
// shared by two): 64 x 14 x 14, 32 -> 64, 5x5: 29.6 / 26.1 / 26.1 /
// 30.5 ms in blocks of 4 / 8 / 16 / 32 images; 16 x 56 x 56, 64 -> 64,
// 3x3: 97.6 / 98.6 / 111.9 ms in blocks of 2 / 4 / 8 (1.6 MB an image; 2
// here); 32 x 14 x 14, 256 -> 256: 190.2 / 183.9 / 181.6 in 2 / 4 / 8.
inline int64_t ImagesPerBlock(const Window2D& w, int64_t out_channels) {
  const int64_t image_bytes =
      (w.in_h * w.in_w * w.channels + w.out_h * w.out_w * out_channels) *
      static_cast<int64_t>(sizeof(float));
  int64_t images = 8;
  while (images > 1 && images * image_bytes > (int64_t{4} << 20)) images /= 2;
  return images < w.batch ? images : w.batch;
}

// The ConvWeightsAsForward for `images` images of `w`, where full blocks
// hold `full_images` images; a last, shorter block (images < full_images)
// writes in the full blocks' output layout `full_dst`.
inline std::shared_ptr<const Backward> FindConvWeightsAsForward(
    const Window2D& w, int64_t images, int64_t full_images,
    int64_t out_channels, int threads, const memory::desc* full_dst) {
  Window2D block = w;
  block.batch = images;
  const Key key = MakeKey(block, out_channels, kConvWeightsAsForward, threads,
                          full_images);
  return BackwardCache().Get(key, [&] {
    auto b = std::make_shared<Backward>();
    b->as_forward = MakeConvWeightsAsForward(
        block, out_channels, images < full_images ? full_dst : nullptr);
    return std::shared_ptr<const Backward>(std::move(b));
  });
}

// The images of a filter gradient split over threads: chunks of whole
// blocks of `images`, one per thread, each summing its own gradient; only
// the last block of the last chunk can be short.  One chunk (no pool) as
// BatchSplit.
struct ImageSplit {
  WorkPool* pool = nullptr;
  int64_t per = 0, chunks = 1;
  int threads = 1;

  ImageSplit(const Window2D& w, int64_t out_channels, int64_t images,
             int requested)
      : per(w.batch) {
    const int wanted = ConvThreads(w, out_channels, requested);
    if (wanted <= 1) return;
    threads = wanted;
    const int64_t blocks = (w.batch + images - 1) / images;
    if (blocks < 2) return;
    pool = WorkPool::For(wanted);
    if (pool == nullptr) return;
    threads = 1;
    per = (blocks + wanted - 1) / wanted * images;
    chunks = (w.batch + per - 1) / per;
  }
};

// Images [first, end) of a filter gradient, block by block, each block's
// sum added in image order into one output in the primitive's layout,
// then reordered into the HWIO `dfilter`, or added to what it holds when
// `add`.
inline void RunConvWeightsAsForward(const Backward* const entries[2],
                                    const Window2D& w, int64_t images,
                                    int64_t out_channels, int64_t first,
                                    int64_t end, const float* input,
                                    const float* dy, float* dfilter, bool add,
                                    dnnl::stream& stream) {
  const dnnl::engine& engine = OnednnEngine();
  const ConvWeightsAsForward& full = *entries[0]->as_forward;
  const ConvWeightsAsForward* tail =
      entries[1] != nullptr ? entries[1]->as_forward.get() : nullptr;
  auto larger = [tail](size_t a, size_t b) {
    return tail != nullptr && b > a ? b : a;
  };
  Regions regions;
  const size_t pad_at = regions.Add(larger(
      full.scratchpad_bytes, tail ? tail->scratchpad_bytes : 0));
  const size_t src_at = regions.Add(
      larger(full.src.get_size(), tail ? tail->src.get_size() : 0));
  const size_t weights_at = regions.Add(
      larger(full.weights.get_size(), tail ? tail->weights.get_size() : 0));
  const size_t dst_bytes = full.dst.get_size();
  const size_t dst_at = regions.Add(dst_bytes);
  Scratch scratch(regions.total);
  char* base = scratch.as<char>();
  std::memset(base + dst_at, 0, dst_bytes);
  memory dst(full.dst, engine, base + dst_at);
  const int64_t in_image = w.in_h * w.in_w * w.channels;
  const int64_t out_image = w.out_h * w.out_w * out_channels;
  for (int64_t n = first; n < end; n += images) {
    const ConvWeightsAsForward& e = n + images <= end ? full : *tail;
    memory user_src(e.user_src, engine,
                    const_cast<float*>(input + n * in_image));
    memory src(e.src, engine, base + src_at);
    memory user_weights(e.user_weights, engine,
                        const_cast<float*>(dy + n * out_image));
    memory weights(e.weights, engine, base + weights_at);
    memory scratchpad(e.scratchpad, engine, base + pad_at);
    const dnnl_exec_arg_t to_src[] = {{DNNL_ARG_FROM, user_src.get()},
                                      {DNNL_ARG_TO, src.get()}};
    Execute(e.to_src, stream, to_src, 2);
    const dnnl_exec_arg_t to_weights[] = {{DNNL_ARG_FROM, user_weights.get()},
                                          {DNNL_ARG_TO, weights.get()}};
    Execute(e.to_weights, stream, to_weights, 2);
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                    {DNNL_ARG_WEIGHTS, weights.get()},
                                    {DNNL_ARG_DST, dst.get()},
                                    {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
    Execute(e.primitive, stream, args, 4);
  }
  memory hwio(full.user_dst, engine, dfilter);
  const dnnl_exec_arg_t to_hwio[] = {{DNNL_ARG_FROM, dst.get()},
                                     {DNNL_ARG_TO, hwio.get()}};
  Execute(add ? AddingReorder(full.adding_once, full.add_to_hwio, full.dst,
                              full.user_dst)
              : full.to_hwio,
          stream, to_hwio, 2);
}

// The filter gradient as ConvWeightsAsForward where the convolution has
// stride 1 and no dilation; false (nothing written) elsewhere, or where
// oneDNN declines the primitives.  On several threads each chunk of
// images sums its own gradient and the chunks' gradients are added in
// chunk order; where the pool would run every chunk on this thread anyway
// (WorkPool::RunsAlone), each chunk after the first adds its gradient to
// dfilter in its reorder into HWIO instead: the same sums in the same
// order, hence the same bits, whatever the load.
inline bool ConvWeightsByForward(const Window2D& w, int64_t out_channels,
                                 const float* input, const float* dy,
                                 float* dfilter, int threads) {
  if (w.stride_h != 1 || w.stride_w != 1 || w.dilation_h != 1 ||
      w.dilation_w != 1)
    return false;
  const int64_t images = ImagesPerBlock(w, out_channels);
  const ImageSplit split(w, out_channels, images, threads);
  OnednnPrepareThread(split.threads);
  // The full blocks' entry and the short last block's, if any.
  std::shared_ptr<const Backward> entries[2];
  try {
    entries[0] = FindConvWeightsAsForward(w, images, images, out_channels,
                                          split.threads, nullptr);
    if (w.batch % images != 0) {
      entries[1] = FindConvWeightsAsForward(
          w, w.batch % images, images, out_channels, split.threads,
          &entries[0]->as_forward->dst);
      if (entries[1]->as_forward->dst != entries[0]->as_forward->dst)
        return false;
    }
  } catch (const dnnl::error&) {
    return false;
  }
  const Backward* const chosen[2] = {entries[0].get(), entries[1].get()};
  auto chunk = [&](int64_t i, float* out, bool add) {
    const int64_t first = i * split.per;
    const int64_t end = first + split.per < w.batch ? first + split.per
                                                    : w.batch;
    RunConvWeightsAsForward(chosen, w, images, out_channels, first, end,
                            input, dy, out, add,
                            OnednnPrepareThread(split.threads));
  };
  if (split.pool == nullptr || split.pool->RunsAlone()) {
    for (int64_t i = 0; i < split.chunks; ++i) chunk(i, dfilter, i > 0);
    return true;
  }
  const int64_t filter_size = w.k_h * w.k_w * w.channels * out_channels;
  AlignedBlock partial(static_cast<size_t>(split.chunks - 1) *
                       static_cast<size_t>(filter_size) * sizeof(float));
  float* partials = static_cast<float*>(partial.data);
  split.pool->Run(split.chunks, [&](int64_t i) {
    chunk(i, i == 0 ? dfilter : partials + (i - 1) * filter_size, false);
  });
  for (int64_t i = 1; i < split.chunks; ++i) {
    const float* add = partials + (i - 1) * filter_size;
    for (int64_t j = 0; j < filter_size; ++j) dfilter[j] += add[j];
  }
  return true;
}

// The input gradient of a stride-1, undilated convolution is itself a
// forward convolution: of dy [N, OH, OW, Cout] with the filter turned
// half a turn and its channels swapped (w'[kh][kw][co][ci] =
// w[KH-1-kh][KW-1-kw][ci][co]), padded by K - 1 - pad on each side, which
// gives back [N, H, W, Cin].  Where oneDNN 2.6 runs that forward
// convolution in a brgemm kernel and the backward-data primitive not (on
// AVX-512: brgconv against jit:avx512_core), the forward one is faster:
// the CNN's second layer (64 images 14x14, 5x5, 32 -> 64) 12.4 ms in the
// backward-data primitive against 7.4 for its forward convolution, one
// thread on an Ice Lake Xeon (bench/onednn_floor).  Elsewhere (AVX2: no
// brgemm convolutions in 2.6) the primitive stays.  Decided once per
// window from the kernels oneDNN picks, never from timings, so a
// machine's results do not depend on a measurement.
inline std::shared_ptr<const Backward> DataAsForward(const Window2D& w,
                                                     int64_t out_channels) {
  return BackwardCache().Get(
      MakeKey(w, out_channels, kConvDataAsForward, 1), [&] {
        auto b = std::make_shared<Backward>();
        if (w.stride_h == 1 && w.stride_w == 1 && w.dilation_h == 1 &&
            w.dilation_w == 1 && w.pad_top < w.k_h && w.pad_bottom < w.k_h &&
            w.pad_left < w.k_w && w.pad_right < w.k_w) {
          Window2D f;
          f.batch = w.batch;
          f.in_h = w.out_h;
          f.in_w = w.out_w;
          f.channels = out_channels;
          f.k_h = w.k_h;
          f.k_w = w.k_w;
          f.out_h = w.in_h;
          f.out_w = w.in_w;
          f.pad_top = w.k_h - 1 - w.pad_top;
          f.pad_bottom = w.k_h - 1 - w.pad_bottom;
          f.pad_left = w.k_w - 1 - w.pad_left;
          f.pad_right = w.k_w - 1 - w.pad_right;
          b->forward_window = f;
          b->data_as_forward =
              f.in_h + f.pad_top + f.pad_bottom - f.k_h + 1 == f.out_h &&
              f.in_w + f.pad_left + f.pad_right - f.k_w + 1 == f.out_w &&
              Find(f, w.channels, 0, 1)->conv->brgemm &&
              !FindBackward(w, out_channels, kConvData, 1)->data->brgemm;
        }
        return std::shared_ptr<const Backward>(std::move(b));
      });
}

}  // namespace onednn_nn_detail

// din [N, H, W, Cin] = the gradient of Conv2D's input for the output
// gradient dy [N, OH, OW, Cout] and filter [KH, KW, Cin, Cout].  Threads as
// OnednnConv2D: blocks of images on the WorkPool.  A forward convolution
// where DataAsForward says so (the same blocks: an image's gradient
// depends on its own dy alone, so the bits do not depend on the split).
inline void OnednnConv2DBackpropInput(const Window2D& w, int64_t out_channels,
                                      const float* filter, const float* dy,
                                      float* din, int threads) {
  namespace d = onednn_nn_detail;
  const std::shared_ptr<const d::Backward> as_forward =
      d::DataAsForward(w, out_channels);
  if (as_forward->data_as_forward) {
    const int64_t kh = w.k_h, kw = w.k_w, cin = w.channels,
                  cout = out_channels;
    // The product slot: matmuls use it, convolutions do not (their own
    // scratchpads are the kernel slot), so it stays ours through the call.
    Scratch turned(static_cast<size_t>(kh * kw * cin * cout) * sizeof(float),
                   Scratch::kProduct);
    float* t = turned.as<float>();
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x) {
        const float* from =
            filter + ((kh - 1 - y) * kw + (kw - 1 - x)) * cin * cout;
        float* to = t + (y * kw + x) * cout * cin;
        for (int64_t i = 0; i < cin; ++i)
          for (int64_t o = 0; o < cout; ++o)
            to[o * cin + i] = from[i * cout + o];
      }
    OnednnConv2D(as_forward->forward_window, cin, dy, t, din, threads);
    return;
  }
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
  if (d::ConvWeightsByForward(w, out_channels, input, dy, dfilter, threads))
    return;
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
