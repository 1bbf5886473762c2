/* Reading and writing NumPy .npy files (one array per file).
 *
 * A .npy file is the magic "\x93NUMPY", a major and minor version byte, the
 * header's length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and
 * 3.0), the header — a Python dict literal such as
 * "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" padded with
 * spaces and ended by a newline — and the raw elements.
 *
 * Read: versions 1.0, 2.0 and 3.0; little-endian (or native, on this
 * little-endian host) f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1.  Fortran-order
 * arrays are transposed into row-major order.  Big-endian, object,
 * structured and other dtypes are refused.  Every problem is an error
 * naming the file; the file's size is checked against the header before
 * anything the size of the data is allocated.
 *
 * Write: version 1.0, or 2.0 when the header would not fit 1.0's 16-bit
 * length; the data starts at a multiple of 64 bytes.
 *
 * tools/npy.c uses <weft/dtype.h>'s enum and inline helpers only, not
 * libweft, so the fuzz target (tests/fuzz/npy_reader.c) builds it alone. */
#ifndef WEFT_TOOLS_NPY_H_
#define WEFT_TOOLS_NPY_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/dtype.h"
#include "weft/tensor.h"

typedef struct npy_array {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[WEFT_MAX_RANK];
  size_t byte_size;  /* element count × element size */
  void* data;        /* byte_size bytes, row-major, malloc'ed (NULL if 0) */
} npy_array;

/* Reads `path` into *out (owned by the caller: npy_free).  Returns 0, or -1
 * with a message naming the file in err (err_size bytes). */
int npy_read(const char* path, npy_array* out, char* err, size_t err_size);

/* Parses a whole .npy file already in memory (`size` bytes at `bytes`);
 * `name` is used in messages.  The same checks as npy_read. */
int npy_parse(const char* name, const uint8_t* bytes, size_t size,
              npy_array* out, char* err, size_t err_size);

void npy_free(npy_array* a);

/* Writes a row-major array as `path`.  Returns 0, or -1 with a message (a
 * dtype .npy cannot hold, such as bfloat16, or the OS error). */
int npy_write(const char* path, weft_dtype dtype, const int64_t* dims,
              int32_t rank, const void* data, size_t byte_size, char* err,
              size_t err_size);

/* The .npy descr of a dtype ("<f4"), or NULL when .npy has none. */
const char* npy_descr(weft_dtype dtype);

/* Between arrays and tensors (tools/npy_tensor.c, which links libweft).
 * npy_to_tensor moves a->data into the new tensor (no copy) and leaves *a
 * empty on success; npy_write_tensor is npy_write of a tensor. */
weft_status* npy_to_tensor(npy_array* a, weft_tensor** out_tensor);
int npy_write_tensor(const char* path, const weft_tensor* tensor, char* err,
                     size_t err_size);

#endif /* WEFT_TOOLS_NPY_H_ */
