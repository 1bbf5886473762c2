#include "weft/dtype.h"

extern "C" {

size_t weft_dtype_size(weft_dtype dtype) {
  switch (dtype) {
    case WEFT_FLOAT32: case WEFT_INT32: case WEFT_UINT32: return 4;
    case WEFT_FLOAT64: case WEFT_INT64: case WEFT_UINT64: return 8;
    case WEFT_UINT8: case WEFT_INT8: case WEFT_BOOL: return 1;
    case WEFT_FLOAT16: case WEFT_BFLOAT16: case WEFT_INT16:
    case WEFT_UINT16: return 2;
    case WEFT_DTYPE_INVALID: break;
  }
  return 0;
}

const char* weft_dtype_name(weft_dtype dtype) {
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
    case WEFT_DTYPE_INVALID: break;
  }
  return "invalid";
}

}  // extern "C"
