// OpenCL C of random.cc (to be written).
#include "program.h"

namespace weft_opencl {

const char* const kRandomSource = R"CLC(
/* empty */
)CLC";

}  // namespace weft_opencl
