// The window kernels: Conv2D and FusedConv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter as implicit GEMMs, MaxPool, MaxPoolWithWindowIndex
// and AvgPool with every gradient the CPU plugin has (MaxPoolGrad,
// MaxPoolReluGrad, AvgPoolGrad and the window-index forms), and
// BatchNormWithGlobalNormalization.  Window geometry and attribute checks
// are plugins/common's, shared with the CPU plugin's rules; the OpenCL C
// is sources_conv.cc.
#include <cstdint>
#include <cstring>

#include "kernel_call.h"
#include "window_attrs.h"

namespace weft_opencl {
namespace {

using weft_window::Window2D;

bool g_fp64 = false;

bool IsFloat(int32_t dtype) {
  return dtype == WEFT_FLOAT32 || (g_fp64 && dtype == WEFT_FLOAT64);
}

// The geometry arguments every window kernel takes (sources_conv.cc).
struct Geometry {
  cl_long8 g0, g1;
};

Geometry Pack(const Window2D& w, int64_t out_channels) {
  const cl_long g0[8] = {w.batch, w.in_h,  w.in_w, w.channels,
                         w.k_h,   w.k_w,   w.out_h, w.out_w};
  const cl_long g1[8] = {w.stride_h, w.stride_w, w.dilation_h, w.dilation_w,
                         w.pad_top,  w.pad_left, out_channels, 0};
  return Geometry{Long8(g0), Long8(g1)};
}

// An implicit GEMM's launch: 16 columns by 8 rows per item.
WorkSize Rows(int64_t rows, int64_t cols) {
  WorkSize work;
  work.dims = 2;
  work.global[0] = static_cast<size_t>((cols + 15) / 16);
  work.global[1] = static_cast<size_t>((rows + 7) / 8);
  return work;
}

const BufferArg kNoBuffer = {nullptr, 0};

using weft_plugin_kit::CheckRank4;
using weft_plugin_kit::CheckWindowIndexFits;
using weft_plugin_kit::PoolGradWindow;

// Inputs 0 and 1, both rank 4 floats of one dtype.
weft_status* ReadRank4Pair(KernelCall& call, const char* first,
                           const char* second, weft_kernel_tensor* a,
                           weft_kernel_tensor* b) {
  if (weft_status* s = call.Input(0, a)) return s;
  if (weft_status* s = call.Input(1, b)) return s;
  if (!IsFloat(a->dtype)) return call.UnsupportedDtype(a->dtype);
  if (a->dtype != b->dtype) {
    return call.Error(WEFT_INVALID_ARGUMENT, "%s is %s but %s is %s", first,
                      weft_dtype_name_of(a->dtype), second,
                      weft_dtype_name_of(b->dtype));
  }
  if (weft_status* s = CheckRank4(call, first, *a)) return s;
  return CheckRank4(call, second, *b);
}

weft_status* Zeros(KernelCall& call, const weft_kernel_tensor& t) {
  const unsigned char zeros[8] = {};
  return call.Fill(t, zeros, weft_dtype_size_of(t.dtype));
}

// Conv2D(input, filter) and, with `arg` set, FusedConv2D(input, filter,
// bias) = relu(Conv2D + bias).
weft_status* ConvKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool fused = arg != nullptr;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, filter, bias, out;
    if (weft_status* s =
            ReadRank4Pair(call, "input [N, H, W, C]",
                          "filter [KH, KW, Cin, Cout]", &in, &filter)) {
      return s;
    }
    if (fused) {
      if (weft_status* s = call.Input(2, &bias)) return s;
    }
    Window2D w;
    if (weft_status* s = weft_plugin_kit::ConvWindow(
            call, in, filter, fused ? &bias : nullptr, &w)) {
      return s;
    }
    const int64_t out_channels = filter.dims[3];
    const int64_t dims[4] = {w.batch, w.out_h, w.out_w, out_channels};
    if (weft_status* s = call.AllocateOutput(0, in.dtype, dims, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    const Geometry g = Pack(w, out_channels);
    char name[32];
    // With no input channels the sums are empty: the kernel adds nothing
    // and writes relu(bias) or 0.
    return call.Launch(Program::kConv,
                       KernelName(name, sizeof name, "conv2d", in.dtype),
                       Rows(w.batch * w.out_h * w.out_w, out_channels),
                       Buffer(in), Buffer(filter),
                       fused ? Buffer(bias) : kNoBuffer, Buffer(out), g.g0,
                       g.g1, static_cast<cl_int>(fused ? 1 : 0));
  });
}

weft_status* ConvBackpropInputKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor filter, dy, out;
    if (weft_status* s =
            ReadRank4Pair(call, "filter", "out_backprop", &filter, &dy)) {
      return s;
    }
    int64_t sizes[4];
    Window2D w;
    if (weft_status* s = weft_plugin_kit::ConvBackpropInputWindow(
            call, filter, dy, sizes, &w)) {
      return s;
    }
    const int64_t out_channels = filter.dims[3];
    if (weft_status* s = call.AllocateOutput(0, dy.dtype, sizes, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (filter.element_count == 0 || dy.element_count == 0) {
      return Zeros(call, out);
    }
    TempBuffer swapped;
    if (weft_status* s = swapped.Create(
            call, static_cast<size_t>(filter.element_count) *
                      weft_dtype_size_of(filter.dtype))) {
      return s;
    }
    char name[48];
    const cl_long taps = w.k_h * w.k_w;
    if (weft_status* s = call.Launch(
            Program::kConv,
            KernelName(name, sizeof name, "filter_swap", filter.dtype),
            Linear(filter.element_count), Buffer(filter), swapped.arg(),
            taps, static_cast<cl_long>(w.channels),
            static_cast<cl_long>(out_channels))) {
      return s;
    }
    const Geometry g = Pack(w, out_channels);
    return call.Launch(
        Program::kConv,
        KernelName(name, sizeof name, "conv2d_backprop_input", dy.dtype),
        Rows(w.batch * w.in_h * w.in_w, w.channels), swapped.arg(),
        Buffer(dy), Buffer(out), g.g0, g.g1);
  });
}

weft_status* ConvBackpropFilterKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, dy, out;
    if (weft_status* s = ReadRank4Pair(call, "input", "out_backprop", &in,
                                       &dy)) {
      return s;
    }
    int64_t sizes[4];
    Window2D w;
    if (weft_status* s = weft_plugin_kit::ConvBackpropFilterWindow(
            call, in, dy, sizes, &w)) {
      return s;
    }
    if (weft_status* s = call.AllocateOutput(0, in.dtype, sizes, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    if (in.element_count == 0 || dy.element_count == 0) {
      return Zeros(call, out);
    }
    const Geometry g = Pack(w, sizes[3]);
    char name[48];
    return call.Launch(
        Program::kConv,
        KernelName(name, sizeof name, "conv2d_backprop_filter", in.dtype),
        Rows(w.k_h * w.k_w * w.channels, sizes[3]), Buffer(in), Buffer(dy),
        Buffer(out), g.g0, g.g1);
  });
}

// ---- Pooling ---------------------------------------------------------------


enum class Pool { kMax, kMaxWithIndex, kAvg };
int g_pool_tags[3];

Pool PoolOf(void* arg) {
  return static_cast<Pool>(static_cast<int*>(arg) - g_pool_tags);
}

weft_status* PoolKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const Pool pool = PoolOf(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, out, index;
    if (weft_status* s = call.Input(0, &in)) return s;
    if (!IsFloat(in.dtype)) return call.UnsupportedDtype(in.dtype);
    if (weft_status* s = CheckRank4(call, "value [N, H, W, C]", in)) return s;
    Window2D w = weft_plugin_kit::NhwcWindow(in.dims);
    if (weft_status* s = weft_plugin_kit::ReadWindowAttrs(call, true, &w)) {
      return s;
    }
    if (pool == Pool::kMaxWithIndex) {
      if (weft_status* s = CheckWindowIndexFits(call, w)) return s;
    }
    const int64_t dims[4] = {w.batch, w.out_h, w.out_w, w.channels};
    if (weft_status* s = call.AllocateOutput(0, in.dtype, dims, 4, &out)) {
      return s;
    }
    if (pool == Pool::kMaxWithIndex) {
      if (weft_status* s =
              call.AllocateOutput(1, WEFT_UINT8, dims, 4, &index)) {
        return s;
      }
    }
    if (out.element_count == 0) return nullptr;
    const Geometry g = Pack(w, w.channels);
    char name[32];
    if (pool == Pool::kAvg) {
      return call.Launch(Program::kConv,
                         KernelName(name, sizeof name, "avg_pool", in.dtype),
                         Linear(out.element_count), Buffer(in), Buffer(out),
                         g.g0, g.g1);
    }
    const bool with_index = pool == Pool::kMaxWithIndex;
    return call.Launch(Program::kConv,
                       KernelName(name, sizeof name, "max_pool", in.dtype),
                       Linear(out.element_count), Buffer(in), Buffer(out),
                       with_index ? Buffer(index) : kNoBuffer, g.g0, g.g1,
                       static_cast<cl_int>(with_index ? 1 : 0));
  });
}

// MaxPoolGrad (kind 0), MaxPoolReluGrad (1), AvgPoolGrad (2): the kind is
// the tag's index, as pool_grad takes it.
int g_pool_grad_tags[3];

weft_status* PoolGradKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const int kind = static_cast<int>(static_cast<int*>(arg) -
                                      g_pool_grad_tags);
    const bool max = kind != 2;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in, dy, out;
    int64_t sizes[4];
    if (max) {
      if (weft_status* s =
              ReadRank4Pair(call, "orig_input", "grad", &in, &dy)) {
        return s;
      }
      std::memcpy(sizes, in.dims, sizeof sizes);
    } else {
      if (weft_status* s = call.Input(0, &dy)) return s;
      if (!IsFloat(dy.dtype)) return call.UnsupportedDtype(dy.dtype);
      if (weft_status* s = CheckRank4(call, "grad", dy)) return s;
    }
    Window2D w;
    if (weft_status* s = PoolGradWindow(call, dy, !max, sizes, &w)) return s;
    if (weft_status* s = call.AllocateOutput(0, dy.dtype, sizes, 4, &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    const Geometry g = Pack(w, w.channels);
    char name[32];
    return call.Launch(Program::kConv,
                       KernelName(name, sizeof name, "pool_grad", dy.dtype),
                       Linear(out.element_count),
                       max ? Buffer(in) : kNoBuffer, Buffer(dy), Buffer(out),
                       g.g0, g.g1, static_cast<cl_int>(kind));
  });
}

// MaxPoolGradFromWindowIndex(window_index, grad) and, with `arg` set,
// MaxPoolReluGradFromWindowIndex(orig_output, window_index, grad) ->
// (backprop, bias_backprop).
weft_status* PoolGradFromIndexKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const bool relu = arg != nullptr;
    const int32_t first = relu ? 1 : 0;
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor orig, index, dy, out, bias;
    if (relu) {
      if (weft_status* s = call.Input(0, &orig)) return s;
    }
    if (weft_status* s = call.Input(first, &index)) return s;
    if (weft_status* s = call.Input(first + 1, &dy)) return s;
    if (!IsFloat(dy.dtype)) return call.UnsupportedDtype(dy.dtype);
    if (index.dtype != WEFT_UINT8) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "window_index is %s, not uint8",
                        weft_dtype_name_of(index.dtype));
    }
    if (relu && orig.dtype != dy.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "orig_output is %s but grad is %s",
                        weft_dtype_name_of(orig.dtype),
                        weft_dtype_name_of(dy.dtype));
    }
    if (weft_status* s = CheckRank4(call, "grad", dy)) return s;
    int64_t sizes[4];
    Window2D w;
    if (weft_status* s = PoolGradWindow(call, dy, true, sizes, &w)) return s;
    if (weft_status* s = CheckWindowIndexFits(call, w)) return s;
    if (!SameDims(index, dy) || (relu && !SameDims(orig, dy))) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "%s is not grad's shape",
                        SameDims(index, dy) ? "orig_output" : "window_index");
    }
    if (weft_status* s = call.AllocateOutput(0, dy.dtype, sizes, 4, &out)) {
      return s;
    }
    if (relu) {
      if (weft_status* s =
              call.AllocateOutput(1, dy.dtype, &w.channels, 1, &bias)) {
        return s;
      }
    }
    const Geometry g = Pack(w, w.channels);
    char name[48];
    if (dy.element_count != 0) {
      const ErrorArg errors = call.Checked(DeviceError::kBadWindowIndex,
                                           WEFT_UINT8, w.k_h * w.k_w);
      if (weft_status* s = call.Launch(
              Program::kConv, "check_window_index",
              Linear(dy.element_count), Buffer(index), g.g0, g.g1, errors)) {
        return s;
      }
    }
    if (out.element_count != 0) {
      if (weft_status* s = call.Launch(
              Program::kConv,
              KernelName(name, sizeof name, "pool_grad_from_index",
                         dy.dtype),
              Linear(out.element_count), relu ? Buffer(orig) : kNoBuffer,
              Buffer(index), Buffer(dy), Buffer(out), g.g0, g.g1,
              static_cast<cl_int>(relu ? 1 : 0))) {
        return s;
      }
    }
    if (!relu || bias.element_count == 0) return nullptr;
    return call.Launch(
        Program::kConv,
        KernelName(name, sizeof name, "pool_relu_bias_grad", dy.dtype),
        Linear(w.channels, 64), Buffer(orig), Buffer(dy), Buffer(bias),
        static_cast<cl_long>(w.batch * w.out_h * w.out_w),
        static_cast<cl_long>(w.channels));
  });
}

// BatchNormWithGlobalNormalization(t, m, v, beta, gamma).
weft_status* BatchNormKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor in[5], out;
    for (int i = 0; i < 5; ++i) {
      if (weft_status* s = call.Input(i, &in[i])) return s;
    }
    const weft_kernel_tensor& t = in[0];
    if (!IsFloat(t.dtype)) return call.UnsupportedDtype(t.dtype);
    double epsilon = 0;
    bool scale = false;
    if (weft_status* s = weft_plugin_kit::ReadBatchNormArgs(call, in,
                                                            &epsilon, &scale)) {
      return s;
    }
    const int64_t channels = t.dims[t.rank - 1];
    if (weft_status* s = call.AllocateOutput(0, t.dtype, t.dims, t.rank,
                                             &out)) {
      return s;
    }
    if (out.element_count == 0) return nullptr;
    char name[32];
    const char* kernel = KernelName(name, sizeof name, "batch_norm", t.dtype);
    const WorkSize work = Linear(out.element_count);
    const cl_long n = out.element_count, c = channels;
    const cl_int scaled = scale ? 1 : 0;
    if (t.dtype == WEFT_FLOAT32) {
      return call.Launch(Program::kConv, kernel, work, Buffer(in[0]),
                         Buffer(in[1]), Buffer(in[2]), Buffer(in[3]),
                         Buffer(in[4]), Buffer(out), n, c,
                         static_cast<cl_float>(epsilon), scaled);
    }
    return call.Launch(Program::kConv, kernel, work, Buffer(in[0]),
                       Buffer(in[1]), Buffer(in[2]), Buffer(in[3]),
                       Buffer(in[4]), Buffer(out), n, c,
                       static_cast<cl_double>(epsilon), scaled);
  });
}

int g_fused_tag;
int g_relu_tag;

}  // namespace

weft_status* RegisterConvKernels(weft_kernel_registrar* registrar,
                                 bool fp64) {
  g_fp64 = fp64;
  const int32_t floats[] = {WEFT_FLOAT32, WEFT_FLOAT64};
  const int32_t count = fp64 ? 2 : 1;
  struct Entry {
    const char* op;
    weft_kernel_compute_fn compute;
    void* arg;
  };
  const Entry kernels[] = {
      {"Conv2D", ConvKernel, nullptr},
      {"FusedConv2D", ConvKernel, &g_fused_tag},
      {"Conv2DBackpropInput", ConvBackpropInputKernel, nullptr},
      {"Conv2DBackpropFilter", ConvBackpropFilterKernel, nullptr},
      {"MaxPool", PoolKernel, &g_pool_tags[0]},
      {"MaxPoolWithWindowIndex", PoolKernel, &g_pool_tags[1]},
      {"AvgPool", PoolKernel, &g_pool_tags[2]},
      {"MaxPoolGrad", PoolGradKernel, &g_pool_grad_tags[0]},
      {"MaxPoolReluGrad", PoolGradKernel, &g_pool_grad_tags[1]},
      {"AvgPoolGrad", PoolGradKernel, &g_pool_grad_tags[2]},
      {"MaxPoolGradFromWindowIndex", PoolGradFromIndexKernel, nullptr},
      {"MaxPoolReluGradFromWindowIndex", PoolGradFromIndexKernel,
       &g_relu_tag},
      {"BatchNormWithGlobalNormalization", BatchNormKernel, nullptr},
  };
  for (const Entry& e : kernels) {
    if (weft_status* s = RegisterKernel(registrar, e.op, "T", floats, count,
                                        e.compute, e.arg)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_opencl
