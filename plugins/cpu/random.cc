// Seeded random ops and Dropout.
#include "kernel.h"

namespace weft_cpu {

weft_status* RegisterRandomKernels(const Registrar& registrar) {
  (void)registrar;
  return nullptr;
}

}  // namespace weft_cpu
