// OpenCL C of linalg.cc (to be written).
#include "program.h"

namespace weft_opencl {

const char* const kLinalgSource = R"CLC(
/* empty */
)CLC";

}  // namespace weft_opencl
