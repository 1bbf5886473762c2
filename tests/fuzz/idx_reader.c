/* Fuzz target: the IDX reader of `weft train` (tools/idx.c) on arbitrary
 * bytes, given as a gzip stream or as a plain file (the first byte picks).
 * Every input must end in an error message or a complete array.  Built and
 * run by scripts/fuzz.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "tools/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static char path[] = "/tmp/weft-fuzz-idx-XXXXXX";
  static int made = 0;
  if (!made) {
    int fd = mkstemp(path);
    if (fd < 0) abort();
    close(fd);
    made = 1;
  }
  if (size == 0) return 0;
  if (data[0] & 1) {
    gzFile g = gzopen(path, "wb");
    if (!g) abort();
    if (size > 1) gzwrite(g, data + 1, (unsigned)(size - 1));
    gzclose(g);
  } else {
    FILE* f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
  }
  char err[512];
  idx_array a;
  int32_t rank = 1 + (size > 4 ? data[4] % 3 : 0);
  if (idx_read(path, rank, &a, err, sizeof err) == 0) idx_free(&a);
  return 0;
}
