// The views that move no bytes: Reshape, ExpandDims, Squeeze and
// ReshapeLike hand their input's buffer on with a new shape
// (kernel_forward_input), as the CPU plugin's do.  Every dtype runs.
#include <cstdint>

#include "kernel_call.h"
#include "view_dims.h"

namespace weft_opencl {
namespace {

using weft_plugin_kit::ExpandDimsDims;
using weft_plugin_kit::ReshapeDims;
using weft_plugin_kit::ReshapeLikeDims;
using weft_plugin_kit::SqueezeDims;
using weft_plugin_kit::ViewDims;

template <ViewDims kDims>
weft_status* ViewKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    int64_t dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    if (weft_status* s = kDims(call, x, dims, &rank)) return s;
    return call.ForwardInput(0, 0, dims, rank);
  });
}

}  // namespace

weft_status* RegisterShapeKernels(weft_kernel_registrar* registrar) {
  struct View {
    const char* op;
    weft_kernel_compute_fn compute;
  };
  const View views[] = {{"Reshape", ViewKernel<ReshapeDims>},
                        {"ExpandDims", ViewKernel<ExpandDimsDims>},
                        {"Squeeze", ViewKernel<SqueezeDims>},
                        {"ReshapeLike", ViewKernel<ReshapeLikeDims>}};
  for (const View& view : views) {
    if (weft_status* s = RegisterKernel(registrar, view.op, nullptr, nullptr, 0,
                                        view.compute, nullptr)) {
      return s;
    }
  }
  return nullptr;
}

}  // namespace weft_opencl
