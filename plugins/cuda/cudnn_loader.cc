#include "cudnn_loader.h"

#include <dlfcn.h>

#include <string>

namespace weft_cuda {
namespace {

#define WEFT_CUDNN_QUOTE(x) #x
#define WEFT_CUDNN_SONAME_OF(major) "libcudnn.so." WEFT_CUDNN_QUOTE(major)
#define WEFT_CUDNN_SONAME WEFT_CUDNN_SONAME_OF(CUDNN_MAJOR)

struct Loaded {
  DnnApi api{};
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool Bind(void* lib, const char* name, Fn* out, std::string* why) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    *why = std::string(WEFT_CUDNN_SONAME " has no ") + name;
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

// The version checks of the sub-libraries the plugin needs: each loads its
// library (libcudnn_ops.so.9, libcudnn_cnn.so.9) and compares versions.
using VersionCheck = cudnnStatus_t (*)();

bool SubLibrary(void* lib, const char* check_name, const char* what,
                const DnnApi& api, std::string* why) {
  VersionCheck check = nullptr;
  if (!Bind(lib, check_name, &check, why)) return false;
  const cudnnStatus_t status = check();
  if (status == CUDNN_STATUS_SUCCESS) return true;
  *why = std::string("cuDNN's ") + what + " sub-library is unusable: " +
         api.error_string(status);
  return false;
}

Loaded Load() {
  Loaded l;
  // RTLD_LOCAL: nothing else in the process sees cuDNN's symbols.
  void* lib = dlopen(WEFT_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    l.why = std::string("cannot load " WEFT_CUDNN_SONAME ": ") +
            (e != nullptr ? e : "unknown error");
    return l;
  }
  DnnApi& a = l.api;
  std::string* w = &l.why;
  l.ok = Bind(lib, "cudnnGetVersion", &a.get_version, w) &&
         Bind(lib, "cudnnGetErrorString", &a.error_string, w) &&
         Bind(lib, "cudnnCreate", &a.create, w) &&
         Bind(lib, "cudnnDestroy", &a.destroy, w) &&
         Bind(lib, "cudnnSetStream", &a.set_stream, w) &&
         Bind(lib, "cudnnCreateTensorDescriptor", &a.create_tensor, w) &&
         Bind(lib, "cudnnDestroyTensorDescriptor", &a.destroy_tensor, w) &&
         Bind(lib, "cudnnSetTensor4dDescriptor", &a.set_tensor_4d, w) &&
         Bind(lib, "cudnnCreateFilterDescriptor", &a.create_filter, w) &&
         Bind(lib, "cudnnDestroyFilterDescriptor", &a.destroy_filter, w) &&
         Bind(lib, "cudnnSetFilter4dDescriptor", &a.set_filter_4d, w) &&
         Bind(lib, "cudnnCreateConvolutionDescriptor", &a.create_conv, w) &&
         Bind(lib, "cudnnDestroyConvolutionDescriptor", &a.destroy_conv,
              w) &&
         Bind(lib, "cudnnSetConvolution2dDescriptor", &a.set_conv_2d, w) &&
         Bind(lib, "cudnnSetConvolutionMathType", &a.set_conv_math, w) &&
         Bind(lib, "cudnnGetConvolution2dForwardOutputDim",
              &a.conv_output_dim, w) &&
         Bind(lib, "cudnnGetConvolutionForwardAlgorithm_v7",
              &a.forward_algorithms, w) &&
         Bind(lib, "cudnnGetConvolutionForwardWorkspaceSize",
              &a.forward_workspace, w) &&
         Bind(lib, "cudnnConvolutionForward", &a.forward, w) &&
         Bind(lib, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
              &a.data_algorithms, w) &&
         Bind(lib, "cudnnGetConvolutionBackwardDataWorkspaceSize",
              &a.data_workspace, w) &&
         Bind(lib, "cudnnConvolutionBackwardData", &a.backward_data, w) &&
         Bind(lib, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
              &a.filter_algorithms, w) &&
         Bind(lib, "cudnnGetConvolutionBackwardFilterWorkspaceSize",
              &a.filter_workspace, w) &&
         Bind(lib, "cudnnConvolutionBackwardFilter", &a.backward_filter, w) &&
         Bind(lib, "cudnnFindConvolutionForwardAlgorithmEx", &a.find_forward,
              w) &&
         Bind(lib, "cudnnFindConvolutionBackwardDataAlgorithmEx",
              &a.find_data, w) &&
         Bind(lib, "cudnnFindConvolutionBackwardFilterAlgorithmEx",
              &a.find_filter, w);
  if (!l.ok) return l;  // stays open: see cublas_loader.cc
  const size_t version = a.get_version();
  if (version / 10000 != CUDNN_MAJOR) {
    l.ok = false;
    l.why = WEFT_CUDNN_SONAME " reports version " + std::to_string(version) +
            ", not " + std::to_string(CUDNN_MAJOR) + ".x";
    return l;
  }
  l.ok = SubLibrary(lib, "cudnnOpsVersionCheck", "ops", a, w) &&
         SubLibrary(lib, "cudnnCnnVersionCheck", "cnn", a, w);
  return l;
}

}  // namespace

const DnnApi* Dnn(std::string* why) {
  static const Loaded loaded = Load();  // once, thread-safe
  if (loaded.ok) return &loaded.api;
  if (why != nullptr) *why = loaded.why;
  return nullptr;
}

cudnnStatus_t DescribeConv(const DnnApi& api, const ConvPlan& p,
                           cudnnDataType_t type, int64_t images,
                           ConvDescriptors* d, const char** what) {
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  *what = "cudnnCreateTensorDescriptor";
  if (d->x == nullptr &&
      (s = api.create_tensor(&d->x)) != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  if (d->y == nullptr &&
      (s = api.create_tensor(&d->y)) != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  *what = "cudnnCreateFilterDescriptor";
  if (d->w == nullptr &&
      (s = api.create_filter(&d->w)) != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  *what = "cudnnCreateConvolutionDescriptor";
  if (d->conv == nullptr &&
      (s = api.create_conv(&d->conv)) != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  // The plan keeps images * image <= 2^31 - 1.
  const int n = static_cast<int>(images);
  *what = "cudnnSetTensor4dDescriptor (the input)";
  if ((s = api.set_tensor_4d(d->x, CUDNN_TENSOR_NCHW, type, n, p.in_c,
                             p.padded_h, p.padded_w)) !=
      CUDNN_STATUS_SUCCESS) {
    return s;
  }
  *what = "cudnnSetTensor4dDescriptor (the output)";
  if ((s = api.set_tensor_4d(d->y, CUDNN_TENSOR_NCHW, type, n, p.out_c,
                             p.out_h, p.out_w)) != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  *what = "cudnnSetFilter4dDescriptor";
  if ((s = api.set_filter_4d(d->w, type, CUDNN_TENSOR_NCHW, p.out_c, p.in_c,
                             p.k_h, p.k_w)) != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  *what = "cudnnSetConvolution2dDescriptor";
  if ((s = api.set_conv_2d(d->conv, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                           p.dilation_h, p.dilation_w,
                           CUDNN_CROSS_CORRELATION, type)) !=
      CUDNN_STATUS_SUCCESS) {
    return s;
  }
  *what = "cudnnSetConvolutionMathType";
  return api.set_conv_math(d->conv, CUDNN_FMA_MATH);
}

void DestroyConvDescriptors(const DnnApi& api, ConvDescriptors* d) {
  if (d->x != nullptr) api.destroy_tensor(d->x);
  if (d->y != nullptr) api.destroy_tensor(d->y);
  if (d->w != nullptr) api.destroy_filter(d->w);
  if (d->conv != nullptr) api.destroy_conv(d->conv);
  *d = ConvDescriptors();
}

}  // namespace weft_cuda
