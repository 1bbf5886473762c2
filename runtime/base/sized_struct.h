// Writing a struct_size-prefixed struct back to a caller who may have been
// built against an older, smaller version of it.
#pragma once

#include <algorithm>
#include <cstring>

#include "base/status.h"

namespace weft {

// Copies `full` into `out`, writing only the fields the caller's
// out->struct_size covers; struct_size itself is left as the caller set it.
template <typename T>
weft_status* WriteSized(const T& full, T* out) {
  if (out == nullptr) return Error(WEFT_INVALID_ARGUMENT, "out is NULL");
  size_t size = out->struct_size;
  if (size < sizeof(size_t))
    return Error(WEFT_INVALID_ARGUMENT, "out->struct_size is not set");
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
              reinterpret_cast<const char*>(&full) + sizeof(size_t),
              std::min(size, sizeof(T)) - sizeof(size_t));
  return nullptr;
}

}  // namespace weft
