#define _POSIX_C_SOURCE 200809L
#include "tools/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Data is copied as stored: '<' and '=' both mean this host's order. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tools/npy.c assumes a little-endian host"
#endif

static const char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
enum {
  kMagicSize = 6,
  kPreambleV1 = 10,  /* magic, 2 version bytes, 16-bit header length */
  kPreambleV2 = 12,  /* ... 32-bit header length */
  kAlignment = 64,
};
/* NumPy's own reader refuses headers past 10,000 bytes unless told
 * otherwise; an array this reader accepts needs a few hundred.  The limit
 * keeps a hostile length from becoming an allocation. */
static const size_t kMaxHeader = (size_t)1 << 20;
static const char kSupported[] =
    "f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, little-endian or native";

static int fail(char* err, size_t n, const char* name, const char* format,
                ...) {
  char what[400];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  snprintf(err, n, "%s: %s", name, what);
  return -1;
}

/* ---- dtypes -------------------------------------------------------------- */

typedef struct dtype_entry {
  char kind;
  int size;
  weft_dtype dtype;
} dtype_entry;

static const dtype_entry kDtypes[] = {
    {'f', 2, WEFT_FLOAT16}, {'f', 4, WEFT_FLOAT32}, {'f', 8, WEFT_FLOAT64},
    {'i', 1, WEFT_INT8},    {'i', 2, WEFT_INT16},   {'i', 4, WEFT_INT32},
    {'i', 8, WEFT_INT64},   {'u', 1, WEFT_UINT8},   {'u', 2, WEFT_UINT16},
    {'u', 4, WEFT_UINT32},  {'u', 8, WEFT_UINT64},  {'b', 1, WEFT_BOOL},
};
static const size_t kDtypeCount = sizeof kDtypes / sizeof kDtypes[0];

const char* npy_descr(weft_dtype dtype) {
  switch (dtype) {
    case WEFT_FLOAT16: return "<f2";
    case WEFT_FLOAT32: return "<f4";
    case WEFT_FLOAT64: return "<f8";
    case WEFT_INT8: return "|i1";
    case WEFT_INT16: return "<i2";
    case WEFT_INT32: return "<i4";
    case WEFT_INT64: return "<i8";
    case WEFT_UINT8: return "|u1";
    case WEFT_UINT16: return "<u2";
    case WEFT_UINT32: return "<u4";
    case WEFT_UINT64: return "<u8";
    case WEFT_BOOL: return "|b1";
    default: return NULL;
  }
}

/* descr such as "<f4", "=i8", "|u1" or "f4" (native). */
static int parse_descr(const char* name, const char* descr, weft_dtype* out,
                       char* err, size_t n) {
  const char* p = descr;
  char order = '=';
  if (*p == '<' || *p == '>' || *p == '=' || *p == '|') order = *p++;
  if (*p == 'O' && (p[1] == '\0' || (p[1] == '8' && p[2] == '\0')))
    return fail(err, n, name, "object arrays (pickled Python objects, "
                "descr '%s') are not supported", descr);
  char kind = *p;
  int size = 0;
  if (kind == '?' && p[1] == '\0') {
    kind = 'b';
    size = 1;
  } else if (kind != '\0' && p[1] >= '1' && p[1] <= '9' && p[2] == '\0') {
    size = p[1] - '0';
  }
  for (size_t i = 0; i < kDtypeCount; ++i) {
    if (kDtypes[i].kind != kind || kDtypes[i].size != size) continue;
    if (size > 1 && order == '>')
      return fail(err, n, name, "big-endian data (descr '%s') is not "
                  "supported; save it as '<%c%d' (arr.astype('<%c%d'))",
                  descr, kind, size, kind, size);
    if (size > 1 && order == '|')
      return fail(err, n, name, "descr '%s' has no byte order for a "
                  "%d-byte type", descr, size);
    *out = kDtypes[i].dtype;
    return 0;
  }
  return fail(err, n, name, "dtype '%s' is not supported (supported: %s)",
              descr, kSupported);
}

/* ---- the header: a Python dict literal ----------------------------------- */

typedef struct cursor {
  const char* p;
  const char* end;
} cursor;

static void skip_space(cursor* c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n'))
    ++c->p;
}

static int take(cursor* c, char ch) {
  skip_space(c);
  if (c->p < c->end && *c->p == ch) {
    ++c->p;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes, into out (capacity bytes). */
static int take_string(cursor* c, char* out, size_t capacity) {
  skip_space(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  char quote = *c->p++;
  size_t length = 0;
  while (c->p < c->end && *c->p != quote) {
    if (*c->p == '\\' || *c->p == '\n' || length + 1 >= capacity) return 0;
    out[length++] = *c->p++;
  }
  if (c->p >= c->end) return 0;
  ++c->p;
  out[length] = '\0';
  return 1;
}

static int take_word(cursor* c, const char* word) {
  skip_space(c);
  size_t length = strlen(word);
  if ((size_t)(c->end - c->p) < length || memcmp(c->p, word, length) != 0)
    return 0;
  c->p += length;
  return 1;
}

/* A non-negative decimal integer (Python 2's 'L' suffix allowed). */
static int take_dim(cursor* c, int64_t* out, int* too_large) {
  skip_space(c);
  const char* start = c->p;
  uint64_t value = 0;
  *too_large = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    unsigned digit = (unsigned)(*c->p++ - '0');
    if (value > ((uint64_t)INT64_MAX - digit) / 10) *too_large = 1;
    if (!*too_large) value = value * 10 + digit;
  }
  if (c->p == start) return 0;
  if (c->p - start > 1 && *start == '0') return 0;  /* "03" is not Python */
  if (c->p < c->end && *c->p == 'L') ++c->p;
  *out = (int64_t)value;
  return 1;
}

typedef struct header {
  weft_dtype dtype;
  int fortran_order;
  int32_t rank;
  int64_t dims[WEFT_MAX_RANK];
} header;

static int parse_shape(const char* name, cursor* c, header* h, char* err,
                       size_t n) {
  if (!take(c, '('))
    return fail(err, n, name, "header: 'shape' is not a tuple");
  h->rank = 0;
  if (take(c, ')')) return 0;
  for (;;) {
    int64_t dim = 0;
    int too_large = 0;
    if (!take_dim(c, &dim, &too_large))
      return fail(err, n, name, "header: 'shape' holds something other than "
                  "non-negative integers");
    if (too_large)
      return fail(err, n, name, "header: a dimension of 'shape' is larger "
                  "than 2^63-1");
    if (h->rank == WEFT_MAX_RANK)
      return fail(err, n, name, "header: 'shape' has more than %d "
                  "dimensions", WEFT_MAX_RANK);
    h->dims[h->rank++] = dim;
    int comma = take(c, ',');
    if (take(c, ')')) {
      /* "(3)" is the integer 3 in Python, not a tuple. */
      if (h->rank == 1 && !comma)
        return fail(err, n, name, "header: 'shape' (N) is not a tuple; "
                    "expected (N,)");
      return 0;
    }
    if (!comma)
      return fail(err, n, name, "header: 'shape' is not a tuple");
  }
}

static int parse_header(const char* name, const char* text, size_t length,
                        header* h, char* err, size_t n) {
  cursor c = {text, text + length};
  enum { kDescr = 1, kFortran = 2, kShape = 4 };
  int seen = 0;
  memset(h, 0, sizeof *h);
  if (!take(&c, '{'))
    return fail(err, n, name, "header is not a Python dict");
  while (!take(&c, '}')) {
    char key[32];
    if (!take_string(&c, key, sizeof key) || !take(&c, ':'))
      return fail(err, n, name, "header is not a Python dict of 'descr', "
                  "'fortran_order' and 'shape'");
    int field = strcmp(key, "descr") == 0           ? kDescr
                : strcmp(key, "fortran_order") == 0 ? kFortran
                : strcmp(key, "shape") == 0         ? kShape
                                                    : 0;
    if (field == 0)
      return fail(err, n, name, "header has an unknown key '%s'", key);
    if (seen & field)
      return fail(err, n, name, "header has '%s' twice", key);
    seen |= field;
    if (field == kDescr) {
      skip_space(&c);
      if (c.p < c.end && *c.p == '[')
        return fail(err, n, name, "structured arrays (a list as 'descr') "
                    "are not supported");
      char descr[32];
      if (!take_string(&c, descr, sizeof descr))
        return fail(err, n, name, "header: 'descr' is not a dtype string");
      if (parse_descr(name, descr, &h->dtype, err, n) != 0) return -1;
    } else if (field == kFortran) {
      if (take_word(&c, "True")) {
        h->fortran_order = 1;
      } else if (take_word(&c, "False")) {
        h->fortran_order = 0;
      } else {
        return fail(err, n, name, "header: 'fortran_order' is neither True "
                    "nor False");
      }
    } else if (parse_shape(name, &c, h, err, n) != 0) {
      return -1;
    }
    if (!take(&c, ',')) {
      if (take(&c, '}')) break;
      return fail(err, n, name, "header is not a Python dict of 'descr', "
                  "'fortran_order' and 'shape'");
    }
  }
  skip_space(&c);
  if (c.p != c.end)
    return fail(err, n, name, "header has text after its dict");
  static const char* const names[] = {"descr", "fortran_order", "shape"};
  for (int i = 0; i < 3; ++i)
    if (!(seen & (1 << i)))
      return fail(err, n, name, "header has no '%s'", names[i]);
  return 0;
}

/* Bytes the array's data takes; -1 (with a message) when that overflows. */
static int data_size(const char* name, const header* h, uint64_t* out,
                     char* err, size_t n) {
  /* Checked even past a zero dimension: the shape itself must be sane. */
  uint64_t elements = 1;
  uint64_t bound = 1;
  for (int32_t i = 0; i < h->rank; ++i) {
    uint64_t d = (uint64_t)h->dims[i];
    if (d != 0 && bound > (uint64_t)INT64_MAX / d)
      return fail(err, n, name, "shape's element count overflows");
    if (d != 0) bound *= d;
    elements *= d;
  }
  uint64_t item = weft_dtype_size_of(h->dtype);
  if (bound > (uint64_t)INT64_MAX / item)
    return fail(err, n, name, "shape's byte size overflows");
  *out = elements * item;
  return 0;
}

/* ---- the preamble -------------------------------------------------------- */

/* From the first bytes of the file (`have` of them, at most 12): the
 * header's length and where it starts.  Checks it ends inside the file. */
static int parse_preamble(const char* name, const uint8_t* p, size_t have,
                          uint64_t file_size, size_t* out_header_offset,
                          size_t* out_header_length, char* err, size_t n) {
  if (have < kMagicSize + 2 || memcmp(p, kMagic, kMagicSize) != 0)
    return fail(err, n, name, "not a .npy file (no \\x93NUMPY magic)");
  int major = p[6];
  int minor = p[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail(err, n, name, ".npy format version %d.%d is not supported "
                "(1.0, 2.0 and 3.0 are)", major, minor);
  size_t offset = major == 1 ? kPreambleV1 : kPreambleV2;
  if (have < offset)
    return fail(err, n, name, "truncated in the .npy preamble");
  uint64_t length = (uint64_t)p[8] | (uint64_t)p[9] << 8;
  if (major > 1) length |= (uint64_t)p[10] << 16 | (uint64_t)p[11] << 24;
  if (length > file_size - offset)
    return fail(err, n, name, "header length %llu runs past the end of the "
                "file (%llu bytes)", (unsigned long long)length,
                (unsigned long long)file_size);
  if (length > kMaxHeader)
    return fail(err, n, name, "header of %llu bytes is larger than this "
                "reader's limit (%zu)", (unsigned long long)length,
                kMaxHeader);
  *out_header_offset = offset;
  *out_header_length = (size_t)length;
  return 0;
}

/* ---- data ---------------------------------------------------------------- */

/* Column-major `from` into row-major `to`. */
static void transpose_fortran(const header* h, size_t item,
                              const uint8_t* from, uint8_t* to) {
  int64_t index[WEFT_MAX_RANK] = {0};
  uint64_t stride[WEFT_MAX_RANK];
  uint64_t count = 1;
  for (int32_t k = 0; k < h->rank; ++k) {
    stride[k] = count;
    count *= (uint64_t)h->dims[k];
  }
  uint64_t source = 0;
  for (uint64_t i = 0; i < count; ++i) {
    memcpy(to + i * item, from + source * item, item);
    for (int32_t k = h->rank - 1; k >= 0; --k) {
      if (++index[k] < h->dims[k]) {
        source += stride[k];
        break;
      }
      source -= stride[k] * (uint64_t)(h->dims[k] - 1);
      index[k] = 0;
    }
  }
}

/* Takes ownership of `data` (byte_size bytes as stored) and fills *out. */
static int finish(const char* name, const header* h, void* data,
                  size_t byte_size, npy_array* out, char* err, size_t n) {
  size_t item = weft_dtype_size_of(h->dtype);
  if (h->fortran_order && h->rank > 1 && byte_size > 0) {
    void* row_major = malloc(byte_size);
    if (row_major == NULL) {
      free(data);
      return fail(err, n, name, "out of memory for %zu bytes", byte_size);
    }
    transpose_fortran(h, item, data, row_major);
    free(data);
    data = row_major;
  }
  /* Weft's bool is 0 or 1; NumPy's is any nonzero byte for true. */
  if (h->dtype == WEFT_BOOL) {
    uint8_t* b = data;
    for (size_t i = 0; i < byte_size; ++i) b[i] = b[i] != 0;
  }
  out->dtype = h->dtype;
  out->rank = h->rank;
  memcpy(out->dims, h->dims, sizeof h->dims);
  out->byte_size = byte_size;
  out->data = data;
  return 0;
}

static int check_data_size(const char* name, const header* h,
                           uint64_t have, uint64_t* out_need, char* err,
                           size_t n) {
  if (data_size(name, h, out_need, err, n) != 0) return -1;
  if (have < *out_need)
    return fail(err, n, name, "data is %llu bytes but its shape and dtype "
                "need %llu (truncated?)", (unsigned long long)have,
                (unsigned long long)*out_need);
  if (have > *out_need)
    return fail(err, n, name, "%llu bytes after the data its shape and "
                "dtype need", (unsigned long long)(have - *out_need));
  if (*out_need > SIZE_MAX)
    return fail(err, n, name, "too large for this machine");
  return 0;
}

int npy_parse(const char* name, const uint8_t* bytes, size_t size,
              npy_array* out, char* err, size_t err_size) {
  memset(out, 0, sizeof *out);
  size_t offset = 0, length = 0;
  if (parse_preamble(name, bytes, size < kPreambleV2 ? size : kPreambleV2,
                     size, &offset, &length, err, err_size) != 0)
    return -1;
  header h;
  if (parse_header(name, (const char*)bytes + offset, length, &h, err,
                   err_size) != 0)
    return -1;
  size_t start = offset + length;
  uint64_t need = 0;
  if (check_data_size(name, &h, size - start, &need, err, err_size) != 0)
    return -1;
  void* data = NULL;
  if (need > 0) {
    data = malloc((size_t)need);
    if (data == NULL)
      return fail(err, err_size, name, "out of memory for %llu bytes",
                  (unsigned long long)need);
    memcpy(data, bytes + start, (size_t)need);
  }
  return finish(name, &h, data, (size_t)need, out, err, err_size);
}

/* Reads exactly n bytes at the current offset; 0 when the file ends. */
static int read_exact(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    size_t chunk = n - got > (1u << 30) ? (1u << 30) : n - got;
    ssize_t r = read(fd, (char*)buf + got, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

int npy_read(const char* path, npy_array* out, char* err, size_t err_size) {
  memset(out, 0, sizeof *out);
  /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail(err, err_size, path, "%s", strerror(errno));
  struct stat st;
  int rc = -1;
  void* data = NULL;
  char* text = NULL;
  if (fstat(fd, &st) != 0) {
    fail(err, err_size, path, "%s", strerror(errno));
    goto done;
  }
  if (!S_ISREG(st.st_mode)) {
    fail(err, err_size, path, "not a regular file");
    goto done;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  uint64_t file_size = (uint64_t)st.st_size;
  uint8_t preamble[kPreambleV2];
  size_t have = file_size < kPreambleV2 ? (size_t)file_size : kPreambleV2;
  if (!read_exact(fd, preamble, have)) {
    fail(err, err_size, path, "could not be read");
    goto done;
  }
  size_t offset = 0, length = 0;
  if (parse_preamble(path, preamble, have, file_size, &offset, &length, err,
                     err_size) != 0)
    goto done;
  text = malloc(length + 1);
  if (text == NULL) {
    fail(err, err_size, path, "out of memory");
    goto done;
  }
  if (lseek(fd, (off_t)offset, SEEK_SET) < 0 ||
      !read_exact(fd, text, length)) {
    fail(err, err_size, path, "truncated in the header");
    goto done;
  }
  header h;
  if (parse_header(path, text, length, &h, err, err_size) != 0) goto done;
  uint64_t need = 0;
  if (check_data_size(path, &h, file_size - offset - length, &need, err,
                      err_size) != 0)
    goto done;
  if (need > 0) {
    data = malloc((size_t)need);
    if (data == NULL) {
      fail(err, err_size, path, "out of memory for %llu bytes",
           (unsigned long long)need);
      goto done;
    }
    if (!read_exact(fd, data, (size_t)need)) {
      fail(err, err_size, path, "truncated in the data (the file shrank "
           "while being read?)");
      goto done;
    }
  }
  rc = finish(path, &h, data, (size_t)need, out, err, err_size);
  data = NULL;  /* finish took it */
done:
  free(data);
  free(text);
  close(fd);
  return rc;
}

void npy_free(npy_array* a) {
  if (a == NULL) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* ---- writing ------------------------------------------------------------- */

int npy_write(const char* path, weft_dtype dtype, const int64_t* dims,
              int32_t rank, const void* data, size_t byte_size, char* err,
              size_t err_size) {
  const char* descr = npy_descr(dtype);
  if (descr == NULL)
    return fail(err, err_size, path, "%s has no .npy dtype",
                weft_dtype_name_of(dtype));
  if (rank < 0 || rank > WEFT_MAX_RANK)
    return fail(err, err_size, path, "rank %d cannot be written", rank);
  /* 21 bytes per dimension covers "-9223372036854775808, ". */
  char dict[128 + 24 * WEFT_MAX_RANK];
  int used = snprintf(dict, sizeof dict,
                      "{'descr': '%s', 'fortran_order': False, 'shape': (",
                      descr);
  for (int32_t i = 0; i < rank; ++i)
    used += snprintf(dict + used, sizeof dict - (size_t)used, "%s%lld",
                     i ? ", " : "", (long long)dims[i]);
  used += snprintf(dict + used, sizeof dict - (size_t)used, "%s), }",
                   rank == 1 ? "," : "");
  /* Padded with spaces and a final newline so the data is aligned. */
  size_t preamble = kPreambleV1;
  size_t total = preamble + (size_t)used + 1;
  total = (total + kAlignment - 1) / kAlignment * kAlignment;
  if (total - preamble > 0xFFFF) {
    preamble = kPreambleV2;
    total = preamble + (size_t)used + 1;
    total = (total + kAlignment - 1) / kAlignment * kAlignment;
  }
  size_t header_length = total - preamble;
  uint8_t head[kPreambleV2 + sizeof dict + kAlignment];
  memcpy(head, kMagic, kMagicSize);
  head[6] = preamble == kPreambleV1 ? 1 : 2;
  head[7] = 0;
  for (size_t i = 0; i < preamble - 8; ++i)
    head[8 + i] = (uint8_t)(header_length >> (8 * i));
  memcpy(head + preamble, dict, (size_t)used);
  memset(head + preamble + used, ' ', header_length - (size_t)used - 1);
  head[total - 1] = '\n';

  FILE* f = fopen(path, "wb");
  if (f == NULL) return fail(err, err_size, path, "%s", strerror(errno));
  int ok = fwrite(head, 1, total, f) == total;
  if (ok && byte_size > 0) ok = fwrite(data, 1, byte_size, f) == byte_size;
  if (fclose(f) != 0) ok = 0;
  if (!ok) {
    int saved = errno;
    remove(path);
    return fail(err, err_size, path, "writing failed: %s", strerror(saved));
  }
  return 0;
}
