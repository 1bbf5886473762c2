// The neural-network kernel family: registration of each file's kernels
// (called from RegisterNnKernels) and the attribute reading that
// convolution and pooling share.
#ifndef WEFT_PLUGINS_CPU_NN_KERNELS_H_
#define WEFT_PLUGINS_CPU_NN_KERNELS_H_

#include "kernel.h"
#include "nn_common.h"

namespace weft_cpu {

// In nn_channel.cc, nn_xent.cc, nn_conv.cc and nn_pool.cc.
weft_status* RegisterChannelKernels(const Registrar& registrar);
weft_status* RegisterXentKernels(const Registrar& registrar);
weft_status* RegisterConvKernels(const Registrar& registrar);
weft_status* RegisterPoolKernels(const Registrar& registrar);

// Reads strides, padding, data_format and either ksize (pooling) or
// dilations (convolution) into `w`, whose batch, input and window sizes the
// caller has set for convolution (pooling's window comes from ksize), and
// computes the output size and padding.  The runtime validated the
// attributes at build time; this re-checks them cheaply because a plugin
// must not trust its input to stay in bounds.
weft_status* ReadWindowAttrs(const weft_kernel_context* ctx, bool pooling,
                             Window2D* w);

// Checks an NHWC input: rank 4.
weft_status* CheckNhwcInput(const weft_kernel_context* ctx, const char* what,
                            const Tensor& t);

// A pooling kernel's input 0 (NHWC) and its window over it.
weft_status* ReadPoolInput(const weft_kernel_context* ctx, Tensor* in,
                           Window2D* w);

// The window-index ops hold a position in a window as uint8: at most 256
// elements.
weft_status* CheckWindowIndexFits(const weft_kernel_context* ctx,
                                  const Window2D& w);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_NN_KERNELS_H_
