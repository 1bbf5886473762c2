// Status values inside the runtime.  A `weft_status*` is the error type
// everywhere, inside and at the boundary: NULL is OK, and whoever receives a
// non-NULL status owns it.  Using the C type internally means nothing has to
// be translated at the boundary and nothing can be lost there.
#pragma once

#include <memory>
#include <string>

#include "weft/status.h"

struct weft_status {
  weft_code code;
  std::string message;
};

namespace weft {

// Builds an error; `code` must not be WEFT_OK.  Never throws: on memory
// exhaustion returns the shared out-of-memory status.
weft_status* Error(weft_code code, std::string message);

// printf-style convenience used for messages naming nodes, ops and shapes.
weft_status* Errorf(weft_code code, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Prefixes the message of `status` (if any) with `context` and returns it.
weft_status* Annotate(weft_status* status, const std::string& context);

struct StatusDeleter {
  void operator()(weft_status* s) const { weft_status_destroy(s); }
};
using StatusPtr = std::unique_ptr<weft_status, StatusDeleter>;

// Runs `body`, turning any C++ exception into a status, so that nothing but a
// status ever crosses the C boundary.
template <typename F>
weft_status* Guard(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return Error(WEFT_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Error(WEFT_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace weft

#define WEFT_RETURN_IF_ERROR(expr)         \
  do {                                     \
    weft_status* weft_status_tmp_ = (expr); \
    if (weft_status_tmp_ != nullptr) return weft_status_tmp_; \
  } while (0)
