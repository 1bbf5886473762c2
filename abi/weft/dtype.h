/** @file
 * Weft — element types.
 *
 * The numeric values are part of the ABI: they are stored in files and passed
 * across the plugin boundary, so they never change and new types are
 * appended.
 */
#ifndef WEFT_DTYPE_H_
#define WEFT_DTYPE_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Element types.  Values are stable; new types are appended. */
typedef enum weft_dtype WEFT_ENUM_BASE {
  WEFT_DTYPE_INVALID = 0,
  WEFT_FLOAT32 = 1,
  WEFT_FLOAT64 = 2,
  WEFT_INT32 = 3,
  WEFT_INT64 = 4,
  WEFT_UINT8 = 5,
  WEFT_BOOL = 6,     /**< one byte per element, 0 or 1 */
  WEFT_FLOAT16 = 7,  /**< IEEE 754 binary16 */
  WEFT_BFLOAT16 = 8, /**< upper 16 bits of a binary32 */
  WEFT_INT8 = 9,
  WEFT_INT16 = 10,
  WEFT_UINT16 = 11,
  WEFT_UINT32 = 12,
  WEFT_UINT64 = 13
} weft_dtype;

/** Bytes per element; 0 for WEFT_DTYPE_INVALID or an unknown value.
 * Thread-safe. */
WEFT_API size_t weft_dtype_size(weft_dtype dtype);

/** A constant lower-case name such as "float32"; "invalid" for unknown values.
 * Static storage.  Thread-safe. */
WEFT_API const char* weft_dtype_name(weft_dtype dtype);

/** Header-only forms of the two functions above, for plugins: a plugin links
 * nothing of libweft, and this keeps one table of names and sizes for the
 * runtime and every plugin alike.  Unknown values give 0 and "invalid". */
static inline size_t weft_dtype_size_of(int32_t dtype) {
  switch (dtype) {
    case WEFT_FLOAT32: case WEFT_INT32: case WEFT_UINT32: return 4;
    case WEFT_FLOAT64: case WEFT_INT64: case WEFT_UINT64: return 8;
    case WEFT_UINT8: case WEFT_INT8: case WEFT_BOOL: return 1;
    case WEFT_FLOAT16: case WEFT_BFLOAT16: case WEFT_INT16:
    case WEFT_UINT16: return 2;
    default: return 0;
  }
}

static inline const char* weft_dtype_name_of(int32_t dtype) {
  switch (dtype) {
    case WEFT_FLOAT32: return "float32";
    case WEFT_FLOAT64: return "float64";
    case WEFT_INT32: return "int32";
    case WEFT_INT64: return "int64";
    case WEFT_UINT8: return "uint8";
    case WEFT_BOOL: return "bool";
    case WEFT_FLOAT16: return "float16";
    case WEFT_BFLOAT16: return "bfloat16";
    case WEFT_INT8: return "int8";
    case WEFT_INT16: return "int16";
    case WEFT_UINT16: return "uint16";
    case WEFT_UINT32: return "uint32";
    case WEFT_UINT64: return "uint64";
    default: return "invalid";
  }
}

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DTYPE_H_ */
