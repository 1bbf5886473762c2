// CPU kernels of the ops in runtime/graph/ops_grad_a.cc.
#include "kernel.h"

namespace weft_cpu {

weft_status* RegisterGradKernelsA(const Registrar& registrar) {
  (void)registrar;
  return nullptr;
}

}  // namespace weft_cpu
