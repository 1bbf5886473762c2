#include "base/status.h"

#include <new>

namespace {

// Returned when even an error cannot be allocated; weft_status_destroy
// recognises it and leaves it alone.
weft_status g_out_of_memory{WEFT_RESOURCE_EXHAUSTED, {}};

}  // namespace

namespace weft {

weft_status* Error(weft_code code, std::string message) {
  if (code == WEFT_OK) return nullptr;
  try {
    return new weft_status{code, std::move(message)};
  } catch (...) {
    return &g_out_of_memory;
  }
}

weft_status* Annotate(weft_status* status, const std::string& context) {
  if (status == nullptr || status == &g_out_of_memory) return status;
  try {
    status->message = context + ": " + status->message;
  } catch (...) {
  }
  return status;
}

}  // namespace weft

extern "C" {

weft_status* weft_status_create(weft_code code, const char* message) {
  return weft::Error(code, message ? message : "");
}

weft_code weft_status_code(const weft_status* status) {
  return status ? status->code : WEFT_OK;
}

const char* weft_status_message(const weft_status* status) {
  if (status == nullptr) return "";
  if (status == &g_out_of_memory) return "out of memory";
  return status->message.c_str();
}

void weft_status_destroy(weft_status* status) {
  if (status == nullptr || status == &g_out_of_memory) return;
  delete status;
}

const char* weft_code_name(weft_code code) {
  switch (code) {
    case WEFT_OK: return "OK";
    case WEFT_CANCELLED: return "CANCELLED";
    case WEFT_UNKNOWN: return "UNKNOWN";
    case WEFT_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case WEFT_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case WEFT_NOT_FOUND: return "NOT_FOUND";
    case WEFT_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case WEFT_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case WEFT_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case WEFT_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case WEFT_ABORTED: return "ABORTED";
    case WEFT_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case WEFT_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case WEFT_INTERNAL: return "INTERNAL";
    case WEFT_UNAVAILABLE: return "UNAVAILABLE";
    case WEFT_DATA_LOSS: return "DATA_LOSS";
    case WEFT_UNAUTHENTICATED: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

}  // extern "C"
