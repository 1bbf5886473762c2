// RandomUniform, RandomNormal, TruncatedNormal, RandomShuffle, Dropout (to be written).
#include "kernel_call.h"

namespace weft_opencl {

weft_status* RegisterRandomKernels(weft_kernel_registrar*, bool) {
  return nullptr;
}

}  // namespace weft_opencl
