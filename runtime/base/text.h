// Small text helpers shared by the runtime's parsers (device lists, op
// schemas, foreign-function signatures).
#pragma once

#include <string>
#include <vector>

#include "weft/dtype.h"

namespace weft {

// `s` without leading and trailing spaces and tabs.
inline std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Appends the comma-separated items of `body`, trimmed, to `items`; an
// empty body has none.  False when an item is empty ("1,,2", "1,").
inline bool SplitItems(const std::string& body, std::vector<std::string>* items) {
  if (Trim(body).empty()) return true;
  size_t start = 0;
  for (;;) {
    size_t comma = body.find(',', start);
    std::string item = Trim(body.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) return false;
    items->push_back(std::move(item));
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

// The dtype weft_dtype_name() calls `name` ("float32"); false for none.
inline bool DtypeFromName(const std::string& name, weft_dtype* out) {
  for (int32_t d = WEFT_FLOAT32; d <= WEFT_UINT64; ++d)
    if (name == weft_dtype_name(static_cast<weft_dtype>(d))) {
      *out = static_cast<weft_dtype>(d);
      return true;
    }
  return false;
}

}  // namespace weft
