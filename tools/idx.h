/* Reading IDX files (the MNIST and Fashion-MNIST format), gzip-compressed
 * or not.
 *
 * An IDX file is a big-endian header — two zero bytes, a type code (0x08:
 * unsigned bytes), the number of dimensions — then one 32-bit size per
 * dimension, then the data.  Every problem (missing file, wrong magic,
 * other element type, a size that does not match, a truncated body, bytes
 * after the end) is reported with the file's path. */
#ifndef WEFT_TOOLS_IDX_H_
#define WEFT_TOOLS_IDX_H_

#include <stddef.h>
#include <stdint.h>

typedef struct idx_array {
  int32_t rank;
  int64_t dims[4];
  size_t count;     /* product of dims */
  uint8_t* data;    /* count bytes, malloc'ed */
} idx_array;

/* Reads `path` into *out, requiring `rank` dimensions of unsigned bytes.
 * Returns 0, or -1 with a message in err (err_size bytes). */
int idx_read(const char* path, int32_t rank, idx_array* out, char* err,
             size_t err_size);
void idx_free(idx_array* a);

/* A labelled set: images [n, rows, cols] and labels [n] (each < classes). */
typedef struct idx_dataset {
  idx_array images;
  idx_array labels;
} idx_dataset;

/* Reads "<dir>/<prefix>-images-idx3-ubyte[.gz]" and the matching labels
 * file, checks they agree (same n, labels below `classes`). */
int idx_read_dataset(const char* dir, const char* prefix, int32_t classes,
                     idx_dataset* out, char* err, size_t err_size);
void idx_free_dataset(idx_dataset* d);

#endif /* WEFT_TOOLS_IDX_H_ */
