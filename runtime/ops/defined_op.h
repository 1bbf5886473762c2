// Ops defined outside the runtime: by a program (weft_op_register) or by a
// plugin (host->register_op, plugin interface 1.4).  A weft_op_def's schema
// strings become an OpDef whose shape function checks and infers the
// dtypes the schema declares, then calls the definer's shape function.
#pragma once

#include <string>

#include "ops/registry.h"
#include "weft/ops.h"
#include "weft/plugin.h"

namespace weft {

// Reads and checks `def` (every string bounded as a plugin's are), filling
// `out` with origin `origin` ("program", "plugin acme").  INVALID_ARGUMENT
// naming the op and the part that is wrong.
weft_status* ParseOpDef(const weft_op_def* def, const std::string& origin,
                        OpDef* out);

// The gradient a parsed def carries, installed once the op is added.
struct DefinedGradient {
  std::string op;
  weft_gradient_fn fn = nullptr;
  void* arg = nullptr;
};
// Reads the gradient fields of a def ParseOpDef accepted.
DefinedGradient GradientOf(const weft_op_def* def, const std::string& op);

// The shape-function calls as the table plugins get (weft_host_api.shape).
const weft_shape_api* ShapeApi();

}  // namespace weft
