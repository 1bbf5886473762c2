// cuDNN, opened when the first convolution needs it rather than linked, as
// cuBLAS is (cublas_loader.h): the plugin loads, and every kernel but the
// convolutions runs, on a machine without cuDNN, and a process that never
// runs a convolution on a GPU maps none of its libraries (libcudnn.so.9
// opens its sub-libraries, some 500 MiB, itself, from its own directory).
//
// The plugin uses cuDNN 9's legacy convolution API (descriptors,
// cudnnGetConvolution*Algorithm_v7, cudnnConvolution*): deprecated in 9.x
// but present through it, and far less to get right than the graph API for
// three plain convolutions.
#ifndef WEFT_PLUGINS_CUDA_CUDNN_LOADER_H_
#define WEFT_PLUGINS_CUDA_CUDNN_LOADER_H_

#include <cudnn.h>

#include <cstdint>
#include <string>

#include "conv_plan.h"

namespace weft_cuda {

// The cuDNN functions the plugin calls.
struct DnnApi {
  decltype(&cudnnGetVersion) get_version;
  decltype(&cudnnGetErrorString) error_string;
  decltype(&cudnnCreate) create;
  decltype(&cudnnDestroy) destroy;
  decltype(&cudnnSetStream) set_stream;
  decltype(&cudnnCreateTensorDescriptor) create_tensor;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor;
  decltype(&cudnnSetTensor4dDescriptor) set_tensor_4d;
  decltype(&cudnnCreateFilterDescriptor) create_filter;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter;
  decltype(&cudnnSetFilter4dDescriptor) set_filter_4d;
  decltype(&cudnnCreateConvolutionDescriptor) create_conv;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_conv;
  decltype(&cudnnSetConvolution2dDescriptor) set_conv_2d;
  decltype(&cudnnSetConvolutionMathType) set_conv_math;
  decltype(&cudnnGetConvolution2dForwardOutputDim) conv_output_dim;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) forward_algorithms;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) forward_workspace;
  decltype(&cudnnConvolutionForward) forward;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) data_algorithms;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) data_workspace;
  decltype(&cudnnConvolutionBackwardData) backward_data;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7)
      filter_algorithms;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize)
      filter_workspace;
  decltype(&cudnnConvolutionBackwardFilter) backward_filter;
  // Timed search (WEFT_CUDA_CONV_SEARCH=timed, conv.cu): each algorithm run
  // once on the call's buffers.
  decltype(&cudnnFindConvolutionForwardAlgorithmEx) find_forward;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) find_data;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithmEx) find_filter;
};

// The table, loading libcudnn.so.<CUDNN_MAJOR> (through the plugin's run
// path) the first time and checking that its version has this major and
// that the ops and cnn sub-libraries load; nullptr, with *why saying what
// failed, when it cannot.  Thread-safe; the library stays loaded for the
// life of the process.
const DnnApi* Dnn(std::string* why);

// The descriptors of a convolution as conv.cu runs it (conv_plan.h): the
// padded input [images, in_c, padded_h, padded_w] and the output in NCHW,
// the KCRS filter, cross-correlation with the plan's symmetric padding,
// strides and dilations, computed in `type`, FMA math only (no TF32 tensor
// cores, whose 10-bit mantissas would part from the CPU's float32 in the
// fourth digit).
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

// Creates the descriptors not yet created and sets them for calls of
// `images` images.  Needs no GPU.  On failure, *what names the cuDNN call.
cudnnStatus_t DescribeConv(const DnnApi& api, const ConvPlan& plan,
                           cudnnDataType_t type, int64_t images,
                           ConvDescriptors* d, const char** what);
void DestroyConvDescriptors(const DnnApi& api, ConvDescriptors* d);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_CUDNN_LOADER_H_
