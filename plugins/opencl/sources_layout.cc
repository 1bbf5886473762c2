// OpenCL C of layout.cc (to be written).
#include "program.h"

namespace weft_opencl {

const char* const kLayoutSource = R"CLC(
/* empty */
)CLC";

}  // namespace weft_opencl
