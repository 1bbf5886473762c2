/* Errors and logging.  Statuses are always made by the host
 * (host->status_create): the host frees them, so they must come from its
 * allocator, and the plugin links nothing of libweft to make its own. */
#include "template.h"

#include <stdarg.h>
#include <stdio.h>

weft_status* tpl_status(int32_t code, const char* format, ...) {
  char message[sizeof(((tpl_error*)0)->message)];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return tpl_host->status_create(code, message);
}

weft_status* tpl_status_from_error(const tpl_error* error) {
  if (error->code == WEFT_OK) return NULL;
  return tpl_host->status_create(error->code, error->message);
}

void tpl_error_set(tpl_error* error, int32_t code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error->message, sizeof error->message, format, args);
  va_end(args);
  error->code = code;
}

void tpl_log(int32_t level, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  tpl_host->log(level, message);
}

const char* tpl_dtype_name(int32_t dtype) { return weft_dtype_name_of(dtype); }
