/* Fuzz target: the .npy reader of `weft run` (tools/npy.c) on arbitrary
 * bytes, read from a file (npy_read) and from memory (npy_parse).  Both
 * must agree; an array either reader accepts must survive npy_write and a
 * second read unchanged.  Anything else is a finding, as is any crash,
 * sanitizer report or leak.  Built and run by scripts/fuzz.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/npy.h"

static char* temp_file(char* pattern) {
  int fd = mkstemp(pattern);
  if (fd < 0) abort();
  close(fd);
  return pattern;
}

static int same(const npy_array* a, const npy_array* b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0 &&
         a->byte_size == b->byte_size &&
         (a->byte_size == 0 || memcmp(a->data, b->data, a->byte_size) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static char input[] = "/tmp/weft-fuzz-npy-in-XXXXXX";
  static char output[] = "/tmp/weft-fuzz-npy-out-XXXXXX";
  static int made = 0;
  if (!made) {
    temp_file(input);
    temp_file(output);
    made = 1;
  }
  FILE* f = fopen(input, "wb");
  if (f == NULL) abort();
  if (size > 0 && fwrite(data, 1, size, f) != size) abort();
  fclose(f);

  char err[512];
  npy_array from_file, from_memory;
  int file_rc = npy_read(input, &from_file, err, sizeof err);
  int memory_rc = npy_parse("input", data, size, &from_memory, err,
                            sizeof err);
  if (file_rc != memory_rc) abort();
  if (file_rc != 0) return 0;
  if (!same(&from_file, &from_memory)) abort();

  npy_array again;
  if (npy_write(output, from_file.dtype, from_file.dims, from_file.rank,
                from_file.data, from_file.byte_size, err, sizeof err) != 0 ||
      npy_read(output, &again, err, sizeof err) != 0)
    abort();
  if (!same(&from_file, &again)) abort();
  npy_free(&again);
  npy_free(&from_file);
  npy_free(&from_memory);
  return 0;
}
