#include "weft/dtype.h"

extern "C" {

size_t weft_dtype_size(weft_dtype dtype) { return weft_dtype_size_of(dtype); }

const char* weft_dtype_name(weft_dtype dtype) {
  return weft_dtype_name_of(dtype);
}

}  // extern "C"
