/* The decoders of input pipelines on the CPU: DecodeRaw, DecodePng,
 * DecodeJpeg and ParseExampleFeature.  Every input is made here: PNG files
 * by a small encoder over zlib (so the expected pixels are the ones put in,
 * not what a PNG library says), JPEG files by libjpeg's compressor (compared
 * with the original pixels within a tolerance), and Example protobufs
 * written byte by byte from the published field numbers.  Corrupt,
 * truncated and absurd inputs must fail with INVALID_ARGUMENT naming the
 * node, never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jpeglib.h>
#include <zlib.h>

#include "test_support.h"

/* ---- Running one decoder ------------------------------------------------ */

/* The attributes a test sets; zero fields are left unset. */
typedef struct {
  weft_dtype out_type;            /* DecodeRaw */
  int big_endian;                 /* DecodeRaw: little_endian = false */
  int64_t channels;               /* DecodePng, DecodeJpeg */
  weft_dtype dtype;               /* DecodePng */
  const char* dct_method;         /* DecodeJpeg */
  const char* key;                /* ParseExampleFeature */
  weft_dtype T;
  int64_t index;
  const int64_t* shape;
  int32_t shape_rank;
  const double* defaults;
  int32_t num_defaults;
} attrs;

static weft_op_builder* begin(weft_graph* g, const char* op, weft_output in,
                              const attrs* a) {
  weft_op_builder* b = weft_op_begin(g, op, "decoder");
  weft_op_add_input(b, in);
  if (a->out_type) weft_op_set_attr_dtype(b, "out_type", a->out_type);
  if (a->big_endian) weft_op_set_attr_bool(b, "little_endian", 0);
  if (a->channels) weft_op_set_attr_int(b, "channels", a->channels);
  if (a->dtype) weft_op_set_attr_dtype(b, "dtype", a->dtype);
  if (a->dct_method) weft_op_set_attr_string(b, "dct_method", a->dct_method);
  if (a->key) weft_op_set_attr_string(b, "key", a->key);
  if (a->T) weft_op_set_attr_dtype(b, "T", a->T);
  if (a->index) weft_op_set_attr_int(b, "index", a->index);
  if (a->shape) weft_op_set_attr_int_list(b, "shape", a->shape, a->shape_rank);
  if (a->defaults)
    weft_op_set_attr_float_list(b, "default_value", a->defaults,
                                a->num_defaults);
  return b;
}

/* Runs `op` on `n` bytes fed to a uint8 placeholder of unknown length, so
 * only the kernel sees the bytes; the status of building or running. */
static weft_status* decode(const char* op, const attrs* a, const void* bytes,
                           int64_t n, weft_tensor** out) {
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "bytes", WEFT_UINT8, WT_SHAPE(-1));
  weft_tensor* value = wt_tensor(WEFT_UINT8, WT_DIMS(n), 1, bytes);
  *out = NULL;
  weft_status* s =
      wt_finish_and_run(g, begin(g, op, p, a), &p, &value, 1, 0, 1, out);
  weft_tensor_destroy(value);
  weft_graph_destroy(g);
  return s;
}

/* Builds `op` over a uint8 placeholder of shape dims (no run). */
static weft_status* build(const char* op, const attrs* a, const int64_t* dims,
                          int32_t rank) {
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "bytes", WEFT_UINT8, dims, rank);
  weft_status* s = weft_op_finish(begin(g, op, p, a), NULL);
  weft_graph_destroy(g);
  return s;
}

static weft_tensor* decode_ok(const char* op, const attrs* a, const void* bytes,
                              int64_t n) {
  weft_tensor* out = NULL;
  WT_OK(decode(op, a, bytes, n, &out));
  cr_assert_not_null(out);
  return out;
}

static void expect_bytes(const weft_tensor* t, const unsigned char* want,
                         size_t n) {
  cr_assert_eq(weft_tensor_byte_size(t), n);
  const unsigned char* got = weft_tensor_data(t);
  for (size_t i = 0; i < n; ++i)
    cr_assert_eq(got[i], want[i], "byte %zu: %u, expected %u", i, got[i],
                 want[i]);
}

/* ---- DecodeRaw ---------------------------------------------------------- */

Test(decode_raw, little_endian_float32) {
  const float values[3] = {1.5f, -2.25f, 1e30f};
  unsigned char bytes[12];
  memcpy(bytes, values, sizeof bytes); /* this host is little-endian */
  weft_tensor* t = decode_ok("DecodeRaw", &(attrs){.out_type = WEFT_FLOAT32},
                             bytes, sizeof bytes);
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(3));
  cr_assert_eq(memcmp(weft_tensor_data(t), values, sizeof values), 0);
  weft_tensor_destroy(t);
}

Test(decode_raw, big_endian_int32_and_int16) {
  const unsigned char bytes[8] = {0x01, 0x02, 0x03, 0x04,
                                  0xff, 0xff, 0xff, 0xfe};
  weft_tensor* t = decode_ok(
      "DecodeRaw", &(attrs){.out_type = WEFT_INT32, .big_endian = 1}, bytes, 8);
  wt_expect_shape(t, WEFT_INT32, WT_SHAPE(2));
  const int32_t* v = weft_tensor_data(t);
  cr_expect_eq(v[0], 0x01020304);
  cr_expect_eq(v[1], -2);
  weft_tensor_destroy(t);
  t = decode_ok("DecodeRaw", &(attrs){.out_type = WEFT_INT16, .big_endian = 1},
                bytes, 8);
  wt_expect_shape(t, WEFT_INT16, WT_SHAPE(4));
  const int16_t* h = weft_tensor_data(t);
  cr_expect_eq(h[0], 0x0102);
  cr_expect_eq(h[1], 0x0304);
  cr_expect_eq(h[3], -2);
  weft_tensor_destroy(t);
  /* uint8 to uint8: the same bytes, whatever the byte order. */
  t = decode_ok("DecodeRaw", &(attrs){.out_type = WEFT_UINT8, .big_endian = 1},
                bytes, 8);
  expect_bytes(t, bytes, 8);
  weft_tensor_destroy(t);
}

Test(decode_raw, batch_of_records_along_the_last_axis) {
  const double values[4] = {1, 2, 3, 4};
  weft_graph* g = wt_graph_new();
  weft_output p = wt_placeholder(g, "bytes", WEFT_UINT8, WT_SHAPE(2, 16));
  weft_tensor* value = wt_tensor(WEFT_UINT8, WT_SHAPE(2, 16), values);
  weft_op_builder* b =
      begin(g, "DecodeRaw", p, &(attrs){.out_type = WEFT_FLOAT64});
  weft_tensor* out = NULL;
  WT_OK(wt_finish_and_run(g, b, &p, &value, 1, 0, 1, &out));
  wt_expect_shape(out, WEFT_FLOAT64, WT_SHAPE(2, 2));
  cr_assert_eq(memcmp(weft_tensor_data(out), values, sizeof values), 0);
  weft_tensor_destroy(out);
  weft_tensor_destroy(value);
  weft_graph_destroy(g);
}

Test(decode_raw, length_not_a_multiple_is_refused) {
  /* Known when the graph is built: refused then. */
  WT_EXPECT_ERROR(build("DecodeRaw", &(attrs){.out_type = WEFT_FLOAT32},
                        WT_SHAPE(7)),
                  WEFT_INVALID_ARGUMENT, "decoder", "7 bytes", "float32");
  /* Known only when it runs: the kernel refuses. */
  const unsigned char bytes[7] = {0};
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(decode("DecodeRaw", &(attrs){.out_type = WEFT_INT64}, bytes,
                         7, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "7 bytes", "int64");
  cr_assert_null(out);
  WT_EXPECT_ERROR(build("DecodeRaw", &(attrs){.out_type = WEFT_BOOL},
                        WT_SHAPE(8)),
                  WEFT_INVALID_ARGUMENT, "decoder", "out_type");
  WT_EXPECT_ERROR(build("DecodeRaw", &(attrs){.out_type = WEFT_INT32}, NULL,
                        0),
                  WEFT_INVALID_ARGUMENT, "decoder", "rank");
}

/* ---- A PNG encoder ------------------------------------------------------ */

typedef struct {
  unsigned char* data;
  size_t size, capacity;
} buffer;

static void put(buffer* b, const void* p, size_t n) {
  if (b->size + n > b->capacity) {
    b->capacity = (b->size + n) * 2;
    b->data = realloc(b->data, b->capacity);
    cr_assert_not_null(b->data);
  }
  memcpy(b->data + b->size, p, n);
  b->size += n;
}

static void put_be32(buffer* b, uint32_t v) {
  const unsigned char be[4] = {v >> 24, v >> 16, v >> 8, v};
  put(b, be, 4);
}

static void png_chunk(buffer* b, const char* type, const void* data,
                      size_t n) {
  put_be32(b, (uint32_t)n);
  put(b, type, 4);
  if (n) put(b, data, n);
  uLong crc = crc32(0, (const Bytef*)type, 4);
  if (n) crc = crc32(crc, data, (uInt)n);
  put_be32(b, (uint32_t)crc);
}

typedef struct {
  uint32_t width, height;
  int bit_depth, color_type; /* 0 gray, 2 RGB, 3 palette, 4 GA, 6 RGBA */
  int interlaced;            /* Adam7 */
  const unsigned char* palette; /* color_type 3: 3 bytes an entry */
  int palette_entries;
  const unsigned char* trns; /* the tRNS chunk's data, or NULL */
  size_t trns_size;
} png_spec;

static int png_samples(int color_type) {
  switch (color_type) {
    case 0: case 3: return 1;
    case 2: return 3;
    case 4: return 2;
    default: return 4;
  }
}

/* Appends the filtered (filter type 0) rows of the sub-image of `pixels`
 * starting at (x0, y0) with steps (dx, dy). */
static void put_rows(buffer* raw, const png_spec* s,
                     const unsigned char* pixels, uint32_t x0, uint32_t y0,
                     uint32_t dx, uint32_t dy) {
  const size_t pixel_bytes = png_samples(s->color_type) * s->bit_depth / 8;
  const size_t row_bytes = s->width * pixel_bytes;
  if (x0 >= s->width || y0 >= s->height) return; /* an empty pass */
  for (uint32_t y = y0; y < s->height; y += dy) {
    put(raw, "\0", 1);
    for (uint32_t x = x0; x < s->width; x += dx)
      put(raw, pixels + y * row_bytes + x * pixel_bytes, pixel_bytes);
  }
}

/* A PNG of `pixels` (rows of samples, 16-bit ones big-endian as in PNG);
 * bit depths 8 and 16 only. */
static buffer encode_png(const png_spec* s, const unsigned char* pixels) {
  buffer out = {0}, raw = {0};
  put(&out, "\x89PNG\r\n\x1a\n", 8);
  unsigned char ihdr[13];
  const uint32_t w = s->width, h = s->height;
  const unsigned char dims[8] = {w >> 24, w >> 16, w >> 8, w,
                                 h >> 24, h >> 16, h >> 8, h};
  memcpy(ihdr, dims, 8);
  ihdr[8] = (unsigned char)s->bit_depth;
  ihdr[9] = (unsigned char)s->color_type;
  ihdr[10] = ihdr[11] = 0;
  ihdr[12] = (unsigned char)(s->interlaced ? 1 : 0);
  png_chunk(&out, "IHDR", ihdr, sizeof ihdr);
  if (s->palette) png_chunk(&out, "PLTE", s->palette, 3 * s->palette_entries);
  if (s->trns) png_chunk(&out, "tRNS", s->trns, s->trns_size);
  if (!s->interlaced) {
    put_rows(&raw, s, pixels, 0, 0, 1, 1);
  } else {
    static const uint32_t adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8},
                                         {0, 4, 4, 8}, {2, 0, 4, 4},
                                         {0, 2, 2, 4}, {1, 0, 2, 2},
                                         {0, 1, 1, 2}};
    for (int p = 0; p < 7; ++p)
      put_rows(&raw, s, pixels, adam7[p][0], adam7[p][1], adam7[p][2],
               adam7[p][3]);
  }
  uLongf packed_size = compressBound(raw.size);
  unsigned char* packed = malloc(packed_size);
  cr_assert_eq(compress(packed, &packed_size, raw.data, raw.size), Z_OK);
  png_chunk(&out, "IDAT", packed, packed_size);
  png_chunk(&out, "IEND", NULL, 0);
  free(packed);
  free(raw.data);
  return out;
}

/* Deterministic pixels: sample i of a w x h x c image. */
static void fill_pixels(unsigned char* p, size_t n, uint64_t seed) {
  wt_rng rng = {seed};
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)wt_rng_next(&rng);
}

static weft_tensor* decode_png(const buffer* png, int64_t channels,
                               weft_dtype dtype) {
  return decode_ok("DecodePng",
                   &(attrs){.channels = channels, .dtype = dtype}, png->data,
                   (int64_t)png->size);
}

/* ---- DecodePng ---------------------------------------------------------- */

Test(decode_png, gray_rgb_and_rgba_as_stored) {
  const int types[3] = {0, 2, 6};
  for (int k = 0; k < 3; ++k) {
    const int c = png_samples(types[k]);
    unsigned char pixels[5 * 3 * 4];
    fill_pixels(pixels, 5 * 3 * c, 10 + k);
    png_spec s = {.width = 5, .height = 3, .bit_depth = 8,
                  .color_type = types[k]};
    buffer png = encode_png(&s, pixels);
    weft_tensor* t = decode_png(&png, 0, 0);
    wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(3, 5, c));
    expect_bytes(t, pixels, 5 * 3 * c);
    weft_tensor_destroy(t);
    free(png.data);
  }
}

Test(decode_png, interlaced_images_decode_whole) {
  /* 11 x 9: every Adam7 pass holds pixels, some of partial width. */
  unsigned char pixels[11 * 9 * 3];
  fill_pixels(pixels, sizeof pixels, 7);
  png_spec s = {.width = 11, .height = 9, .bit_depth = 8, .color_type = 2,
                .interlaced = 1};
  buffer png = encode_png(&s, pixels);
  weft_tensor* t = decode_png(&png, 0, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(9, 11, 3));
  expect_bytes(t, pixels, sizeof pixels);
  weft_tensor_destroy(t);
  free(png.data);
}

Test(decode_png, channel_conversions) {
  unsigned char gray[4 * 2], rgb[4 * 2 * 3], rgba[4 * 2 * 4];
  fill_pixels(gray, sizeof gray, 1);
  fill_pixels(rgba, sizeof rgba, 2);
  fill_pixels(rgb, sizeof rgb, 3);
  png_spec gs = {.width = 4, .height = 2, .bit_depth = 8, .color_type = 0};
  png_spec cs = {.width = 4, .height = 2, .bit_depth = 8, .color_type = 2};
  png_spec as = {.width = 4, .height = 2, .bit_depth = 8, .color_type = 6};
  buffer gpng = encode_png(&gs, gray), cpng = encode_png(&cs, rgb),
         apng = encode_png(&as, rgba);

  /* Gray to RGB repeats the sample; to RGBA adds an opaque alpha. */
  weft_tensor* t = decode_png(&gpng, 3, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(2, 4, 3));
  const unsigned char* v = weft_tensor_data(t);
  for (int i = 0; i < 8; ++i)
    for (int c = 0; c < 3; ++c) cr_expect_eq(v[3 * i + c], gray[i]);
  weft_tensor_destroy(t);
  t = decode_png(&gpng, 4, 0);
  v = weft_tensor_data(t);
  for (int i = 0; i < 8; ++i) {
    cr_expect_eq(v[4 * i], gray[i]);
    cr_expect_eq(v[4 * i + 3], 255);
  }
  weft_tensor_destroy(t);
  t = decode_png(&gpng, 2, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(2, 4, 2));
  v = weft_tensor_data(t);
  for (int i = 0; i < 8; ++i) {
    cr_expect_eq(v[2 * i], gray[i]);
    cr_expect_eq(v[2 * i + 1], 255);
  }
  weft_tensor_destroy(t);

  /* RGBA to RGB drops alpha (no compositing, as TensorFlow). */
  t = decode_png(&apng, 3, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(2, 4, 3));
  v = weft_tensor_data(t);
  for (int i = 0; i < 8; ++i)
    for (int c = 0; c < 3; ++c) cr_expect_eq(v[3 * i + c], rgba[4 * i + c]);
  weft_tensor_destroy(t);

  /* RGB to gray: BT.601 luma, 0.299 R + 0.587 G + 0.114 B, within one
   * step of rounding. */
  t = decode_png(&cpng, 1, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(2, 4, 1));
  v = weft_tensor_data(t);
  for (int i = 0; i < 8; ++i) {
    double luma = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] +
                  0.114 * rgb[3 * i + 2];
    cr_expect_leq(abs((int)v[i] - (int)(luma + 0.5)), 1, "pixel %d: %u vs %g",
                  i, v[i], luma);
  }
  weft_tensor_destroy(t);
  /* RGB to RGBA: opaque. */
  t = decode_png(&cpng, 4, 0);
  v = weft_tensor_data(t);
  for (int i = 0; i < 8; ++i) {
    for (int c = 0; c < 3; ++c) cr_expect_eq(v[4 * i + c], rgb[3 * i + c]);
    cr_expect_eq(v[4 * i + 3], 255);
  }
  weft_tensor_destroy(t);
  free(gpng.data);
  free(cpng.data);
  free(apng.data);
}

Test(decode_png, palette_with_transparency) {
  const unsigned char palette[3 * 3] = {255, 0, 0, 0, 255, 0, 10, 20, 30};
  const unsigned char trns[2] = {0, 128}; /* entry 2 stays opaque */
  const unsigned char index[3 * 2] = {0, 1, 2, 2, 1, 0};
  png_spec s = {.width = 3, .height = 2, .bit_depth = 8, .color_type = 3,
                .palette = palette, .palette_entries = 3, .trns = trns,
                .trns_size = 2};
  buffer png = encode_png(&s, index);
  weft_tensor* t = decode_png(&png, 0, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(2, 3, 4));
  const unsigned char alpha[3] = {0, 128, 255};
  const unsigned char* v = weft_tensor_data(t);
  for (int i = 0; i < 6; ++i) {
    for (int c = 0; c < 3; ++c)
      cr_expect_eq(v[4 * i + c], palette[3 * index[i] + c]);
    cr_expect_eq(v[4 * i + 3], alpha[index[i]]);
  }
  weft_tensor_destroy(t);
  t = decode_png(&png, 3, 0);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(2, 3, 3));
  weft_tensor_destroy(t);
  free(png.data);
}

Test(decode_png, sixteen_bits) {
  /* Big-endian samples in the file, host-order uint16 out. */
  const uint16_t samples[4] = {0x0102, 0xfffe, 0x8000, 0x00ff};
  unsigned char be[8];
  for (int i = 0; i < 4; ++i) {
    be[2 * i] = samples[i] >> 8;
    be[2 * i + 1] = samples[i] & 0xff;
  }
  png_spec s = {.width = 2, .height = 2, .bit_depth = 16, .color_type = 0};
  buffer png = encode_png(&s, be);
  weft_tensor* t = decode_png(&png, 0, WEFT_UINT16);
  wt_expect_shape(t, WEFT_UINT16, WT_SHAPE(2, 2, 1));
  cr_assert_eq(memcmp(weft_tensor_data(t), samples, sizeof samples), 0);
  weft_tensor_destroy(t);
  /* To 8 bits: the high byte. */
  t = decode_png(&png, 0, WEFT_UINT8);
  const unsigned char high[4] = {0x01, 0xff, 0x80, 0x00};
  expect_bytes(t, high, 4);
  weft_tensor_destroy(t);
  free(png.data);
  /* An 8-bit image as uint16: x * 257, so 255 is 65535. */
  const unsigned char eight[4] = {0, 1, 128, 255};
  png_spec s8 = {.width = 4, .height = 1, .bit_depth = 8, .color_type = 0};
  png = encode_png(&s8, eight);
  t = decode_png(&png, 0, WEFT_UINT16);
  const uint16_t* w = weft_tensor_data(t);
  for (int i = 0; i < 4; ++i) cr_expect_eq(w[i], eight[i] * 257);
  weft_tensor_destroy(t);
  free(png.data);
}

Test(decode_png, corrupt_truncated_and_absurd_images_are_refused) {
  unsigned char pixels[8 * 8 * 3];
  fill_pixels(pixels, sizeof pixels, 5);
  png_spec s = {.width = 8, .height = 8, .bit_depth = 8, .color_type = 2};
  buffer png = encode_png(&s, pixels);
  weft_tensor* out = NULL;
  const attrs plain = {0};
  /* Cut inside the image data, and at every length up to it. */
  for (size_t cut = 0; cut < png.size; cut += cut < 64 ? 1 : 7) {
    WT_EXPECT_ERROR(decode("DecodePng", &plain, png.data, (int64_t)cut, &out),
                    WEFT_INVALID_ARGUMENT, "decoder", "PNG");
    cr_assert_null(out);
  }
  /* A flipped byte in the compressed data: the chunk's CRC fails. */
  unsigned char* bad = malloc(png.size);
  memcpy(bad, png.data, png.size);
  bad[png.size - 20] ^= 0x40;
  WT_EXPECT_ERROR(decode("DecodePng", &plain, bad, (int64_t)png.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "PNG");
  /* Not a PNG at all. */
  WT_EXPECT_ERROR(decode("DecodePng", &plain, "GIF89a..........", 16, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "not a PNG");
  free(bad);
  free(png.data);

  /* 65536 x 65536 declared by a header with correct CRCs: refused before
   * anything of that size is allocated. */
  buffer header = {0};
  put(&header, "\x89PNG\r\n\x1a\n", 8);
  unsigned char ihdr[13] = {0, 1, 0, 0, 0, 1, 0, 0, 8, 0, 0, 0, 0};
  png_chunk(&header, "IHDR", ihdr, sizeof ihdr);
  png_chunk(&header, "IDAT", "x", 1);
  png_chunk(&header, "IEND", NULL, 0);
  WT_EXPECT_ERROR(decode("DecodePng", &plain, header.data,
                         (int64_t)header.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "65536 x 65536");
  free(header.data);

  WT_EXPECT_ERROR(build("DecodePng", &(attrs){.channels = 5}, WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "channels");
  WT_EXPECT_ERROR(build("DecodePng", &(attrs){.dtype = WEFT_FLOAT32},
                        WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "dtype");
  WT_EXPECT_ERROR(build("DecodePng", &plain, WT_SHAPE(2, 8)),
                  WEFT_INVALID_ARGUMENT, "decoder", "vector");
}

/* ---- DecodeJpeg --------------------------------------------------------- */

/* A JPEG of `pixels` (w x h x components, 1 or 3) by libjpeg at quality
 * 100 without chroma subsampling. */
static buffer encode_jpeg(const unsigned char* pixels, int w, int h,
                          int components) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = NULL;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = components;
  c.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  for (int i = 0; i < c.num_components; ++i)
    c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * w * components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  buffer out = {0};
  put(&out, mem, size);
  free(mem);
  return out;
}

/* A smooth image (JPEG's lossy steps stay small on it). */
static void gradient(unsigned char* p, int w, int h, int components) {
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < components; ++c)
        p[(y * w + x) * components + c] =
            (unsigned char)(40 + 6 * x + 5 * y + 30 * c);
}

static void expect_close(const weft_tensor* t, const unsigned char* want,
                         size_t n, int tolerance) {
  cr_assert_eq(weft_tensor_byte_size(t), n);
  const unsigned char* got = weft_tensor_data(t);
  for (size_t i = 0; i < n; ++i)
    cr_assert_leq(abs((int)got[i] - (int)want[i]), tolerance,
                  "sample %zu: %u, expected %u", i, got[i], want[i]);
}

Test(decode_jpeg, quality_100_round_trip) {
  enum { W = 16, H = 12 };
  unsigned char rgb[W * H * 3], gray[W * H];
  gradient(rgb, W, H, 3);
  gradient(gray, W, H, 1);
  buffer color = encode_jpeg(rgb, W, H, 3), mono = encode_jpeg(gray, W, H, 1);
  for (int fast = 0; fast < 2; ++fast) {
    attrs a = {.dct_method = fast ? "INTEGER_FAST" : "INTEGER_ACCURATE"};
    weft_tensor* t = decode_ok("DecodeJpeg", &a, color.data, (int64_t)color.size);
    wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(H, W, 3));
    /* IFAST's scaled integer IDCT loses most at high quality (5 levels
     * here, where islow is within 1). */
    expect_close(t, rgb, sizeof rgb, fast ? 6 : 2);
    weft_tensor_destroy(t);
  }
  weft_tensor* t =
      decode_ok("DecodeJpeg", &(attrs){0}, mono.data, (int64_t)mono.size);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(H, W, 1));
  expect_close(t, gray, sizeof gray, 2);
  weft_tensor_destroy(t);
  /* Gray as RGB repeats the sample. */
  t = decode_ok("DecodeJpeg", &(attrs){.channels = 3}, mono.data,
                (int64_t)mono.size);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(H, W, 3));
  const unsigned char* v = weft_tensor_data(t);
  for (int i = 0; i < W * H; ++i) {
    cr_expect_eq(v[3 * i], v[3 * i + 1]);
    cr_expect_eq(v[3 * i], v[3 * i + 2]);
    cr_expect_leq(abs((int)v[3 * i] - gray[i]), 2);
  }
  weft_tensor_destroy(t);
  /* Color as gray: the luma. */
  t = decode_ok("DecodeJpeg", &(attrs){.channels = 1}, color.data,
                (int64_t)color.size);
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(H, W, 1));
  v = weft_tensor_data(t);
  for (int i = 0; i < W * H; ++i) {
    double luma = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] +
                  0.114 * rgb[3 * i + 2];
    cr_expect_leq(abs((int)v[i] - (int)(luma + 0.5)), 3);
  }
  weft_tensor_destroy(t);
  free(color.data);
  free(mono.data);
}

Test(decode_jpeg, corrupt_and_truncated_images_are_refused) {
  enum { W = 24, H = 16 };
  unsigned char rgb[W * H * 3];
  gradient(rgb, W, H, 3);
  buffer jpeg = encode_jpeg(rgb, W, H, 3);
  weft_tensor* out = NULL;
  const attrs plain = {0};
  /* Every cut before the last rows' data ends the stream early. */
  for (size_t cut = 0; cut + 64 < jpeg.size; cut += cut < 700 ? 1 : 13) {
    WT_EXPECT_ERROR(decode("DecodeJpeg", &plain, jpeg.data, (int64_t)cut,
                           &out),
                    WEFT_INVALID_ARGUMENT, "decoder", "JPEG");
    cr_assert_null(out);
  }
  /* An end-of-image marker right after the start: no image. */
  unsigned char* bad = malloc(jpeg.size);
  memcpy(bad, jpeg.data, jpeg.size);
  bad[3] = 0xd9;
  WT_EXPECT_ERROR(decode("DecodeJpeg", &plain, bad, (int64_t)jpeg.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "JPEG");
  WT_EXPECT_ERROR(decode("DecodeJpeg", &plain, "\xff\xd8garbage", 9, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "JPEG");
  free(bad);
  free(jpeg.data);
  WT_EXPECT_ERROR(build("DecodeJpeg", &(attrs){.channels = 4}, WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "channels");
  WT_EXPECT_ERROR(build("DecodeJpeg", &(attrs){.dct_method = "FLOAT"},
                        WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "dct_method");
}

/* ---- Example protobufs, by hand ----------------------------------------- */

static void put_varint(buffer* b, uint64_t v) {
  do {
    unsigned char byte = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) byte |= 0x80;
    put(b, &byte, 1);
  } while (v);
}

static void put_tag(buffer* b, int field, int wire_type) {
  put_varint(b, (uint64_t)(field << 3 | wire_type));
}

/* A length-delimited field holding `inner`, which it frees. */
static void put_message(buffer* b, int field, buffer* inner) {
  put_tag(b, field, 2);
  put_varint(b, inner->size);
  if (inner->size) put(b, inner->data, inner->size);
  free(inner->data);
  *inner = (buffer){0};
}

static void put_float_le(buffer* b, float f) {
  unsigned char le[4];
  memcpy(le, &f, 4); /* little-endian host */
  put(b, le, 4);
}

/* Feature { float_list { value: ... } }, packed or one field a value. */
static buffer float_feature(const float* v, int n, int packed) {
  buffer list = {0}, feature = {0};
  if (packed) {
    buffer values = {0};
    for (int i = 0; i < n; ++i) put_float_le(&values, v[i]);
    put_message(&list, 1, &values);
  } else {
    for (int i = 0; i < n; ++i) {
      put_tag(&list, 1, 5);
      put_float_le(&list, v[i]);
    }
  }
  put_message(&feature, 2, &list);
  return feature;
}

static buffer int64_feature(const int64_t* v, int n, int packed) {
  buffer list = {0}, feature = {0};
  if (packed) {
    buffer values = {0};
    for (int i = 0; i < n; ++i) put_varint(&values, (uint64_t)v[i]);
    put_message(&list, 1, &values);
  } else {
    for (int i = 0; i < n; ++i) {
      put_tag(&list, 1, 0);
      put_varint(&list, (uint64_t)v[i]);
    }
  }
  put_message(&feature, 3, &list);
  return feature;
}

static buffer bytes_feature(const char* const* v, const size_t* sizes, int n) {
  buffer list = {0}, feature = {0};
  for (int i = 0; i < n; ++i) {
    buffer value = {0};
    if (sizes[i]) put(&value, v[i], sizes[i]);
    put_message(&list, 1, &value);
  }
  put_message(&feature, 1, &list);
  return feature;
}

/* Adds map entry { key, value } to Features `features`; frees `value`. */
static void put_entry(buffer* features, const char* key, buffer* value) {
  buffer entry = {0}, k = {0};
  put(&k, key, strlen(key));
  put_message(&entry, 1, &k);
  put_message(&entry, 2, value);
  put_message(features, 1, &entry);
}

static const float kFloats[3] = {1.5f, -2.0f, 3.25e-3f};
static const int64_t kInts[4] = {1, -1, 300, INT64_MIN};

/* An Example with every kind of feature, and unknown fields around them. */
static buffer make_example(void) {
  buffer features = {0}, example = {0}, f;
  f = float_feature(kFloats, 3, 1);
  put_entry(&features, "packed_floats", &f);
  f = float_feature(kFloats, 3, 0);
  put_entry(&features, "floats", &f);
  f = int64_feature(kInts, 4, 1);
  put_entry(&features, "packed_ints", &f);
  f = int64_feature(kInts, 4, 0);
  put_entry(&features, "ints", &f);
  const char* values[3] = {"abc", "", "\x00\xff"};
  const size_t sizes[3] = {3, 0, 2};
  f = bytes_feature(values, sizes, 3);
  put_entry(&features, "bytes", &f);
  /* An entry whose key comes again later: the last one wins. */
  f = float_feature(kFloats, 1, 1);
  put_entry(&features, "again", &f);
  f = float_feature(kFloats + 1, 2, 1);
  put_entry(&features, "again", &f);
  /* Unknown fields, which parsers skip: a varint in Features and a
   * fixed64 in the Example. */
  put_tag(&features, 9, 0);
  put_varint(&features, 12345);
  put_tag(&example, 7, 1);
  put(&example, "12345678", 8);
  put_message(&example, 1, &features);
  return example;
}

static weft_tensor* parse_ok(const buffer* example, const attrs* a) {
  return decode_ok("ParseExampleFeature", a, example->data,
                   (int64_t)example->size);
}

Test(parse_example_feature, floats_packed_or_not) {
  buffer ex = make_example();
  const char* keys[2] = {"packed_floats", "floats"};
  for (int k = 0; k < 2; ++k) {
    weft_tensor* t = parse_ok(&ex, &(attrs){.key = keys[k], .T = WEFT_FLOAT32});
    wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(3));
    cr_assert_eq(memcmp(weft_tensor_data(t), kFloats, sizeof kFloats), 0);
    weft_tensor_destroy(t);
    t = parse_ok(&ex, &(attrs){.key = keys[k], .T = WEFT_FLOAT32,
                               .shape = WT_DIMS(3, 1), .shape_rank = 2});
    wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(3, 1));
    weft_tensor_destroy(t);
  }
  weft_tensor* t = parse_ok(&ex, &(attrs){.key = "again", .T = WEFT_FLOAT32});
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(2));
  cr_assert_eq(memcmp(weft_tensor_data(t), kFloats + 1, 2 * sizeof(float)), 0);
  weft_tensor_destroy(t);
  free(ex.data);
}

Test(parse_example_feature, int64s_packed_or_not) {
  buffer ex = make_example();
  const char* keys[2] = {"packed_ints", "ints"};
  for (int k = 0; k < 2; ++k) {
    weft_tensor* t = parse_ok(&ex, &(attrs){.key = keys[k], .T = WEFT_INT64,
                                            .shape = WT_DIMS(2, 2),
                                            .shape_rank = 2});
    wt_expect_shape(t, WEFT_INT64, WT_SHAPE(2, 2));
    cr_assert_eq(memcmp(weft_tensor_data(t), kInts, sizeof kInts), 0);
    weft_tensor_destroy(t);
  }
  free(ex.data);
}

Test(parse_example_feature, bytes_by_index) {
  buffer ex = make_example();
  weft_tensor* t = parse_ok(&ex, &(attrs){.key = "bytes", .T = WEFT_UINT8});
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(3));
  expect_bytes(t, (const unsigned char*)"abc", 3);
  weft_tensor_destroy(t);
  t = parse_ok(&ex, &(attrs){.key = "bytes", .T = WEFT_UINT8, .index = 1});
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(0));
  weft_tensor_destroy(t);
  t = parse_ok(&ex, &(attrs){.key = "bytes", .T = WEFT_UINT8, .index = 2,
                             .shape = WT_DIMS(1, 2), .shape_rank = 2});
  wt_expect_shape(t, WEFT_UINT8, WT_SHAPE(1, 2));
  expect_bytes(t, (const unsigned char*)"\x00\xff", 2);
  weft_tensor_destroy(t);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(decode("ParseExampleFeature",
                         &(attrs){.key = "bytes", .T = WEFT_UINT8, .index = 3},
                         ex.data, (int64_t)ex.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "'bytes'", "index 3");
  free(ex.data);
}

Test(parse_example_feature, missing_key_with_and_without_default) {
  buffer ex = make_example();
  const double seven[1] = {7};
  weft_tensor* t = parse_ok(&ex, &(attrs){.key = "absent", .T = WEFT_FLOAT32,
                                          .shape = WT_DIMS(3),
                                          .shape_rank = 1,
                                          .defaults = seven,
                                          .num_defaults = 1});
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(3));
  const float* f = weft_tensor_data(t);
  for (int i = 0; i < 3; ++i) cr_expect_eq(f[i], 7.0f);
  weft_tensor_destroy(t);
  const double ints[2] = {-3, 4};
  t = parse_ok(&ex, &(attrs){.key = "absent", .T = WEFT_INT64,
                             .defaults = ints, .num_defaults = 2});
  wt_expect_shape(t, WEFT_INT64, WT_SHAPE(2));
  cr_expect_eq(((const int64_t*)weft_tensor_data(t))[0], -3);
  cr_expect_eq(((const int64_t*)weft_tensor_data(t))[1], 4);
  weft_tensor_destroy(t);
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(decode("ParseExampleFeature",
                         &(attrs){.key = "absent", .T = WEFT_FLOAT32},
                         ex.data, (int64_t)ex.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "'absent'",
                  "default_value");
  /* An empty Example has no features at all. */
  WT_EXPECT_ERROR(decode("ParseExampleFeature",
                         &(attrs){.key = "floats", .T = WEFT_FLOAT32}, "", 0,
                         &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "'floats'");
  free(ex.data);
}

Test(parse_example_feature, wrong_count_and_kind_are_refused) {
  buffer ex = make_example();
  weft_tensor* out = NULL;
  WT_EXPECT_ERROR(decode("ParseExampleFeature",
                         &(attrs){.key = "floats", .T = WEFT_FLOAT32,
                                  .shape = WT_DIMS(2, 2), .shape_rank = 2},
                         ex.data, (int64_t)ex.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "'floats'", "3 values",
                  "[2,2]", "4");
  WT_EXPECT_ERROR(decode("ParseExampleFeature",
                         &(attrs){.key = "floats", .T = WEFT_INT64},
                         ex.data, (int64_t)ex.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "'floats'", "float_list");
  /* Refused when the graph is built. */
  WT_EXPECT_ERROR(build("ParseExampleFeature",
                        &(attrs){.key = "floats", .T = WEFT_FLOAT64},
                        WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "T");
  const double two[2] = {1, 2};
  WT_EXPECT_ERROR(build("ParseExampleFeature",
                        &(attrs){.key = "x", .T = WEFT_FLOAT32,
                                 .shape = WT_DIMS(3), .shape_rank = 1,
                                 .defaults = two, .num_defaults = 2},
                        WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "default_value");
  const double half[1] = {0.5};
  WT_EXPECT_ERROR(build("ParseExampleFeature",
                        &(attrs){.key = "x", .T = WEFT_INT64,
                                 .defaults = half, .num_defaults = 1},
                        WT_SHAPE(-1)),
                  WEFT_INVALID_ARGUMENT, "decoder", "0.5");
  free(ex.data);
}

Test(parse_example_feature, malformed_bytes_are_refused) {
  buffer ex = make_example();
  weft_tensor* out = NULL;
  const attrs a = {.key = "ints", .T = WEFT_INT64};
  /* Every truncation of the Example: a malformed message, or (cut between
   * whole fields) an Example without the key. */
  for (size_t cut = 0; cut < ex.size; ++cut) {
    WT_EXPECT_ERROR(decode("ParseExampleFeature", &a, ex.data, (int64_t)cut,
                           &out),
                    WEFT_INVALID_ARGUMENT, "decoder", "'ints'");
    cr_assert_null(out);
  }
  WT_EXPECT_ERROR(decode("ParseExampleFeature", &a, "\x0a\xff\xff\xff\xff\x0f",
                         6, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "malformed");
  WT_EXPECT_ERROR(decode("ParseExampleFeature", &a, "\x00\x01\x02", 3, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "malformed");
  /* Packed floats whose length is no multiple of 4. */
  buffer features = {0}, example = {0}, feature = {0}, list = {0},
         values = {0};
  put(&values, "12345", 5);
  put_message(&list, 1, &values);
  put_message(&feature, 2, &list);
  put_entry(&features, "f", &feature);
  put_message(&example, 1, &features);
  WT_EXPECT_ERROR(decode("ParseExampleFeature",
                         &(attrs){.key = "f", .T = WEFT_FLOAT32},
                         example.data, (int64_t)example.size, &out),
                  WEFT_INVALID_ARGUMENT, "decoder", "multiple of 4");
  free(example.data);
  free(ex.data);
}
