// Conv2D and pooling (float32, NHWC) through oneDNN, callable without the
// plugin: the kernels in nn_conv.cc and nn_pool.cc are thin shells around
// OnednnConv2D() and OnednnPool2D(), and bench/ may include this header to
// time the very same primitives against oneDNN called by hand.
//
// Activations are bound to oneDNN in place (format_tag::nhwc over the
// caller's buffers), never copied.  The filter is declared with
// format_tag::any so that oneDNN may pick its fastest (blocked) weights
// layout; the HWIO filter is then reordered into per-thread scratch on each
// run.  That copy is KH*KW*Cin*Cout elements, tiny next to the convolution
// itself, and it keeps the kernel correct when the filter is a variable
// that changes between runs.
//
// Header-only; needs WEFT_CPU_HAVE_ONEDNN.  Throws dnnl::error or
// std::bad_alloc on failure (the kernels turn either into a status).
#ifndef WEFT_PLUGINS_CPU_ONEDNN_NN_H_
#define WEFT_PLUGINS_CPU_ONEDNN_NN_H_

#include <cstdint>
#include <memory>

#include "nn_common.h"
#include "onednn_engine.h"

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
  int64_t kind;          // 0 Conv2D, 1 MaxPool, 2 AvgPool
  int64_t threads;
};

struct Conv {
  dnnl::convolution_forward primitive;
  memory::desc src, dst, user_weights, weights;
  dnnl::reorder weights_reorder;  // empty when oneDNN takes HWIO as is
  memory::desc scratchpad;
  size_t weights_bytes = 0;
  size_t scratchpad_bytes = 0;
};

struct Pool {
  dnnl::pooling_forward primitive;
  memory::desc src, dst, scratchpad;
  size_t scratchpad_bytes = 0;
};

inline std::shared_ptr<const Conv> MakeConv(const Window2D& w,
                                            int64_t out_channels) {
  const dnnl::engine& engine = OnednnEngine();
  auto conv = std::make_shared<Conv>();
  conv->src = Nhwc(w.batch, w.in_h, w.in_w, w.channels);
  conv->dst = Nhwc(w.batch, w.out_h, w.out_w, out_channels);
  const memory::dims weight_dims = {out_channels, w.channels, w.k_h, w.k_w};
  conv->user_weights =
      memory::desc(weight_dims, memory::data_type::f32, Tag::hwio);
  const memory::desc any_weights(weight_dims, memory::data_type::f32,
                                 Tag::any);
  // oneDNN counts dilation from 0 (no gap); TensorFlow from 1.
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      conv->src, any_weights, conv->dst, {w.stride_h, w.stride_w},
      {w.dilation_h - 1, w.dilation_w - 1}, {w.pad_top, w.pad_left},
      {w.pad_bottom, w.pad_right});
  // A user scratchpad makes execution safe from several threads at once
  // (the library's own is shared per primitive) and lives in our per-thread
  // scratch, so steady-state runs allocate nothing.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  conv->weights = pd.weights_desc();
  conv->primitive = dnnl::convolution_forward(pd);
  conv->scratchpad = pd.scratchpad_desc();
  conv->scratchpad_bytes = conv->scratchpad.get_size();
  if (conv->weights != conv->user_weights) {
    conv->weights_bytes = conv->weights.get_size();
    conv->weights_reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine, conv->user_weights, engine,
                                      conv->weights));
  }
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
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::pooling_forward::primitive_desc pd(desc, attr, OnednnEngine());
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
  Key key{};
  key.window = w;
  key.out_channels = out_channels;
  key.kind = kind;
  key.threads = threads;
  return Cache().Get(key, [&] {
    auto p = std::make_shared<Primitive>();
    if (kind == 0) {
      p->conv = MakeConv(w, out_channels);
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

}  // namespace onednn_nn_detail

// output [N, OH, OW, Cout] = input [N, H, W, Cin] (*) filter [KH, KW, Cin,
// Cout], all float32 and dense, with the geometry of `w` (from
// ComputeWindow2D).  Every dim must be positive.  Runs on `threads` threads
// of oneDNN's runtime.  Thread-safe.
inline void OnednnConv2D(const Window2D& w, int64_t out_channels,
                         const float* input, const float* filter,
                         float* output, int threads) {
  namespace d = onednn_nn_detail;
  threads = OnednnThreads(threads);
  dnnl::stream& stream = OnednnPrepareThread(threads);
  const auto entry = d::Find(w, out_channels, 0, threads);
  const d::Conv& conv = *entry->conv;
  const dnnl::engine& engine = OnednnEngine();
  // One scratch holds the reordered filter and then oneDNN's scratchpad,
  // each 64-byte aligned.
  const size_t weights_bytes = (conv.weights_bytes + 63) / 64 * 64;
  Scratch scratch(weights_bytes + conv.scratchpad_bytes);
  d::memory src(conv.src, engine, const_cast<float*>(input));
  d::memory dst(conv.dst, engine, output);
  d::memory user_weights(conv.user_weights, engine,
                         const_cast<float*>(filter));
  d::memory weights = user_weights;
  if (conv.weights_bytes != 0) {
    weights = d::memory(conv.weights, engine, scratch.as<char>());
    const dnnl_exec_arg_t reorder_args[] = {
        {DNNL_ARG_FROM, user_weights.get()}, {DNNL_ARG_TO, weights.get()}};
    d::Execute(conv.weights_reorder, stream, reorder_args, 2);
  }
  d::memory scratchpad(conv.scratchpad, engine,
                       scratch.as<char>() + weights_bytes);
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                  {DNNL_ARG_WEIGHTS, weights.get()},
                                  {DNNL_ARG_DST, dst.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  d::Execute(conv.primitive, stream, args, 4);
}

// output [N, OH, OW, C] = max or mean (over valid elements) of input
// [N, H, W, C] over the windows of `w`.  Every dim must be positive.
// Thread-safe.
inline void OnednnPool2D(const Window2D& w, bool max, const float* input,
                         float* output, int threads) {
  namespace d = onednn_nn_detail;
  threads = OnednnThreads(threads);
  dnnl::stream& stream = OnednnPrepareThread(threads);
  const auto entry = d::Find(w, 0, max ? 1 : 2, threads);
  const d::Pool& pool = *entry->pool;
  const dnnl::engine& engine = OnednnEngine();
  Scratch scratch(pool.scratchpad_bytes);
  d::memory src(pool.src, engine, const_cast<float*>(input));
  d::memory dst(pool.dst, engine, output);
  d::memory scratchpad(pool.scratchpad, engine, scratch.as<char>());
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src.get()},
                                  {DNNL_ARG_DST, dst.get()},
                                  {DNNL_ARG_SCRATCHPAD, scratchpad.get()}};
  d::Execute(pool.primitive, stream, args, 3);
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ONEDNN_NN_H_
