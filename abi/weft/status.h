/** @file
 * Weft — status values.
 *
 * Every fallible call in the Weft C API, and every fallible slot of the plugin
 * interface, returns a `weft_status*`.  NULL means success; anything else is an
 * error the caller owns and must release with weft_status_destroy().
 *
 * Error codes follow absl/gRPC numbering so that they map one-to-one onto the
 * codes Java, Julia and most C++ code bases already know.
 */
#ifndef WEFT_STATUS_H_
#define WEFT_STATUS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WEFT_API __declspec(dllimport)
#elif defined(__GNUC__)
/** Marks a function of the C API: exported from libweft. */
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#if defined(__GNUC__)
/** Marks a function whose result (a status to release) must be used. */
#define WEFT_MUST_USE __attribute__((warn_unused_result))
#else
#define WEFT_MUST_USE
#endif

/* C++ gives the ABI's enums a fixed 32-bit underlying type, so that every
 * value a C caller may pass is a valid one there (C++ makes loading an
 * out-of-range enum value undefined).  In C they are 32-bit as well, so the
 * layout is the same from both languages. */
#ifdef __cplusplus
#define WEFT_ENUM_BASE : int32_t
#else
/** Nothing in C; `: int32_t` in C++ (see above). */
#define WEFT_ENUM_BASE
#endif

/** Error codes (absl::StatusCode numbering). */
typedef enum weft_code WEFT_ENUM_BASE {
  WEFT_OK = 0,
  WEFT_CANCELLED = 1,
  WEFT_UNKNOWN = 2,
  WEFT_INVALID_ARGUMENT = 3,
  WEFT_DEADLINE_EXCEEDED = 4,
  WEFT_NOT_FOUND = 5,
  WEFT_ALREADY_EXISTS = 6,
  WEFT_PERMISSION_DENIED = 7,
  WEFT_RESOURCE_EXHAUSTED = 8,
  WEFT_FAILED_PRECONDITION = 9,
  WEFT_ABORTED = 10,
  WEFT_OUT_OF_RANGE = 11,
  WEFT_UNIMPLEMENTED = 12,
  WEFT_INTERNAL = 13,
  WEFT_UNAVAILABLE = 14,
  WEFT_DATA_LOSS = 15,
  WEFT_UNAUTHENTICATED = 16
} weft_code;

/** An error: a code and a message.  Opaque.  NULL is the OK status. */
typedef struct weft_status weft_status;

/** Creates an error status.  `message` is copied.  Returns NULL (OK) when
 * `code` is WEFT_OK.  Returns an owned status; release with
 * weft_status_destroy().  Never fails: on memory exhaustion it returns a
 * preallocated RESOURCE_EXHAUSTED status that weft_status_destroy() accepts.
 * Thread-safe. */
WEFT_API weft_status* weft_status_create(weft_code code, const char* message);

/** The status's code; WEFT_OK for NULL.  Thread-safe. */
WEFT_API weft_code weft_status_code(const weft_status* status);

/** The status's message, "" for NULL.  The string is borrowed: it lives as
 * long as `status`.  Thread-safe. */
WEFT_API const char* weft_status_message(const weft_status* status);

/** Releases a status.  NULL is a harmless no-op. */
WEFT_API void weft_status_destroy(weft_status* status);

/** A constant name for a code, e.g. "INVALID_ARGUMENT".  Static storage. */
WEFT_API const char* weft_code_name(weft_code code);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_STATUS_H_ */
