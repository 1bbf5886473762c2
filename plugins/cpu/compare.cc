// Comparisons, logical ops and Select.
#include "kernel.h"

namespace weft_cpu {

weft_status* RegisterCompareKernels(const Registrar& registrar) {
  (void)registrar;
  return nullptr;
}

}  // namespace weft_cpu
