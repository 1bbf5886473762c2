// LibTorch side of bench/conv_matmul (see libtorch_peer.h).
#include "libtorch_peer.h"

#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/version.h>

#include <cstring>

namespace bench_libtorch {

void SetThreads(int threads) { torch::set_num_threads(threads); }

std::string Describe() {
  std::string text = "LibTorch " TORCH_VERSION;
  text += torch::hasOpenMP() ? ", OpenMP" : ", no OpenMP";
  text += torch::hasMKLDNN() ? ", oneDNN (mkldnn) enabled" : ", no oneDNN";
  return text;
}

namespace {

// A tensor over caller memory, without copying; the caller's buffer must
// outlive it, so the peers copy out of these straight away.
torch::Tensor Borrow(const float* data, torch::IntArrayRef dims) {
  return torch::from_blob(const_cast<float*>(data), dims,
                          torch::TensorOptions().dtype(torch::kFloat32));
}

}  // namespace

struct Conv2D::Impl {
  torch::Tensor input, filter, output;
  ConvShape shape;
};

Conv2D::Conv2D(const ConvShape& shape, const float* input_nhwc,
               const float* filter_hwio, bool channels_last)
    : impl_(new Impl) {
  impl_->shape = shape;
  // Viewed as NCHW, an NHWC buffer already has channels-last strides:
  // permute() is free and only the copy below decides the layout.
  const torch::Tensor input =
      Borrow(input_nhwc, {shape.batch, shape.height, shape.width,
                          shape.in_channels})
          .permute({0, 3, 1, 2});
  const torch::Tensor filter =
      Borrow(filter_hwio, {shape.kernel_h, shape.kernel_w, shape.in_channels,
                           shape.out_channels})
          .permute({3, 2, 0, 1});  // HWIO -> OIHW
  // A channels-last model converts its weights too
  // (module.to(memory_format=channels_last)), so both follow the flag.
  const auto format = channels_last ? torch::MemoryFormat::ChannelsLast
                                    : torch::MemoryFormat::Contiguous;
  impl_->input = input.clone(format);
  impl_->filter = filter.clone(format);
}

Conv2D::~Conv2D() = default;

void Conv2D::Run() {
  const ConvShape& s = impl_->shape;
  impl_->output = torch::conv2d(impl_->input, impl_->filter, {}, {1, 1},
                                {s.pad_h, s.pad_w});
}

void Conv2D::OutputNhwc(float* out) const {
  const torch::Tensor nhwc =
      impl_->output.permute({0, 2, 3, 1}).contiguous();
  std::memcpy(out, nhwc.data_ptr<float>(), nhwc.numel() * sizeof(float));
}

struct MatMul::Impl {
  torch::Tensor a, b, c;
};

MatMul::MatMul(const float* a, const float* b, int64_t m, int64_t k,
               int64_t n)
    : impl_(new Impl) {
  impl_->a = Borrow(a, {m, k}).clone();
  impl_->b = Borrow(b, {k, n}).clone();
}

MatMul::~MatMul() = default;

void MatMul::Run() { impl_->c = torch::mm(impl_->a, impl_->b); }

const float* MatMul::Output() const { return impl_->c.data_ptr<float>(); }

}  // namespace bench_libtorch
