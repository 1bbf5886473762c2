// Batched matrix products, inverses and determinants: the family's
// registration, over the kernels of linalg_*.cc.
#include "kernel.h"

namespace weft_cpu {

weft_status* RegisterBatchMatMulKernels(const Registrar& registrar);
weft_status* RegisterMatrixLuKernels(const Registrar& registrar);

weft_status* RegisterLinalgKernels(const Registrar& registrar) {
  if (weft_status* s = RegisterBatchMatMulKernels(registrar)) return s;
  return RegisterMatrixLuKernels(registrar);
}

}  // namespace weft_cpu
