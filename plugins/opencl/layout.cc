// Slice, Tile, Pad, Pack, Unpack, OneHot, Shape, Size, Rank (to be written).
#include "kernel_call.h"

namespace weft_opencl {

weft_status* RegisterLayoutKernels(weft_kernel_registrar*, bool) {
  return nullptr;
}

}  // namespace weft_opencl
