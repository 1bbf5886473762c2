#define _POSIX_C_SOURCE 200809L
#include "tools/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static int fail(char* err, size_t n, const char* path, const char* what) {
  snprintf(err, n, "%s: %s", path, what);
  return -1;
}

/* Reads exactly n bytes; 0 when the file ends first. */
static int read_exact(gzFile f, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    size_t chunk = n - got > (1u << 30) ? (1u << 30) : n - got;
    int r = gzread(f, (char*)buf + got, (unsigned)chunk);
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

int idx_read(const char* path, int32_t rank, idx_array* out, char* err,
             size_t err_size) {
  memset(out, 0, sizeof *out);
  if (access(path, R_OK) != 0)
    return fail(err, err_size, path, "cannot be read (missing?)");
  gzFile f = gzopen(path, "rb");
  if (f == NULL) return fail(err, err_size, path, "cannot be opened");
  unsigned char magic[4];
  int rc = -1;
  if (!read_exact(f, magic, 4)) {
    fail(err, err_size, path, "too short for an IDX header");
  } else if (magic[0] != 0 || magic[1] != 0) {
    fail(err, err_size, path, "not an IDX file (bad magic)");
  } else if (magic[2] != 0x08) {
    snprintf(err, err_size, "%s: IDX element type 0x%02x, expected 0x08 "
             "(unsigned bytes)", path, magic[2]);
  } else if (magic[3] != rank) {
    snprintf(err, err_size, "%s: %d dimensions, expected %d", path,
             magic[3], rank);
  } else {
    size_t count = 1;
    int ok = 1;
    out->rank = rank;
    for (int32_t i = 0; ok && i < rank; ++i) {
      unsigned char d[4];
      if (!read_exact(f, d, 4)) {
        ok = 0;
        fail(err, err_size, path, "truncated in the header");
        break;
      }
      uint32_t v = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 |
                   (uint32_t)d[2] << 8 | d[3];
      if (v == 0 || v > (1u << 28) || count > ((size_t)1 << 34) / v) {
        ok = 0;
        snprintf(err, err_size, "%s: implausible size %u in dimension %d",
                 path, v, i);
        break;
      }
      out->dims[i] = v;
      count *= v;
    }
    if (ok) {
      out->count = count;
      out->data = malloc(count);
      char extra;
      if (out->data == NULL) {
        fail(err, err_size, path, "out of memory");
      } else if (!read_exact(f, out->data, count)) {
        snprintf(err, err_size, "%s: truncated: the header promises %zu "
                 "bytes of data", path, count);
      } else if (gzread(f, &extra, 1) > 0) {
        fail(err, err_size, path, "has bytes after the end of its data");
      } else {
        rc = 0;
      }
    }
  }
  gzclose(f);
  if (rc != 0) idx_free(out);
  return rc;
}

void idx_free(idx_array* a) {
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* "<dir>/<prefix>-<kind>-idx<r>-ubyte", with ".gz" when only that exists. */
static void idx_path(const char* dir, const char* prefix, const char* kind,
                     int rank, char* out, size_t n) {
  snprintf(out, n, "%s/%s-%s-idx%d-ubyte", dir, prefix, kind, rank);
  if (access(out, R_OK) != 0) {
    size_t len = strlen(out);
    if (len + 3 < n) memcpy(out + len, ".gz", 4);
  }
}

int idx_read_dataset(const char* dir, const char* prefix, int32_t classes,
                     idx_dataset* out, char* err, size_t err_size) {
  char images[4096], labels[4096];
  memset(out, 0, sizeof *out);
  idx_path(dir, prefix, "images", 3, images, sizeof images);
  idx_path(dir, prefix, "labels", 1, labels, sizeof labels);
  if (idx_read(images, 3, &out->images, err, err_size) != 0) return -1;
  if (idx_read(labels, 1, &out->labels, err, err_size) != 0) {
    idx_free(&out->images);
    return -1;
  }
  if (out->labels.dims[0] != out->images.dims[0]) {
    snprintf(err, err_size, "%s has %lld labels for the %lld images of %s",
             labels, (long long)out->labels.dims[0],
             (long long)out->images.dims[0], images);
    idx_free_dataset(out);
    return -1;
  }
  for (size_t i = 0; i < out->labels.count; ++i)
    if (out->labels.data[i] >= classes) {
      snprintf(err, err_size, "%s: label %u of example %zu is not below %d",
               labels, out->labels.data[i], i, classes);
      idx_free_dataset(out);
      return -1;
    }
  return 0;
}

void idx_free_dataset(idx_dataset* d) {
  idx_free(&d->images);
  idx_free(&d->labels);
}
