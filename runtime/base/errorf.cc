// weft::Errorf, apart from status.cc: the ONNX module (model/onnx_module.h)
// compiles this file too, over its own weft::Error, which makes the status
// with libweft's.
#include <cstdarg>
#include <cstdio>

#include "base/status.h"

namespace weft {

weft_status* Errorf(weft_code code, const char* format, ...) {
  char stack[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(stack, sizeof stack, format, args);
  va_end(args);
  if (n < 0) return Error(code, format);
  if (static_cast<size_t>(n) < sizeof stack) return Error(code, stack);
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(args, format);
  std::vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  big.resize(static_cast<size_t>(n));
  return Error(code, std::move(big));
}

}  // namespace weft
