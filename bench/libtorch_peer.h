// LibTorch as a peer in bench/conv_matmul.
//
// Its headers take longer to compile than the rest of bench/ together, and
// LibTorch is optional, so they stay in libtorch_peer.cc; this interface
// shows nothing of them.  The benchmark hands over the data it gives the
// session (NHWC input, HWIO filter, row-major matrices) and each peer lays
// it out the way LibTorch's users would, once, before any timing.
#ifndef WEFT_BENCH_LIBTORCH_PEER_H_
#define WEFT_BENCH_LIBTORCH_PEER_H_

#include <cstdint>
#include <memory>
#include <string>

namespace bench_libtorch {

// torch::set_num_threads: OpenMP's count for the calling thread, which
// Debian's LibTorch also hands to OpenBLAS and oneDNN.
void SetThreads(int threads);

// "LibTorch 1.13.1, OpenMP, oneDNN 2.6.3" or similar.
std::string Describe();

struct ConvShape {
  int64_t batch, height, width, in_channels;
  int64_t kernel_h, kernel_w, out_channels;
  int64_t pad_h, pad_w;  // symmetric: what torch::conv2d can express
};

class Conv2D {
 public:
  // channels_last: keep the activations in NHWC (MemoryFormat::
  // ChannelsLast) instead of LibTorch's native NCHW.
  Conv2D(const ConvShape& shape, const float* input_nhwc,
         const float* filter_hwio, bool channels_last);
  ~Conv2D();
  // One torch::conv2d; the result is kept until the next call.
  void Run();
  // The last result, written in NHWC so it compares with the session's.
  void OutputNhwc(float* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class MatMul {
 public:
  MatMul(const float* a, const float* b, int64_t m, int64_t k, int64_t n);
  ~MatMul();
  void Run();  // one torch::mm
  const float* Output() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench_libtorch

#endif  // WEFT_BENCH_LIBTORCH_PEER_H_
