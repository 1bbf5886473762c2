// PNG and JPEG decoding (image_decode.h).
//
// libpng and libjpeg report a fatal error by calling a handler that must not
// return; ours longjmp back to the setjmp in PngRead / JpegRead.  Those two
// functions, and every frame a longjmp can cross (the libraries' own, C, and
// the callbacks below), hold only plain data: a longjmp over a C++ object
// with a destructor would be undefined behaviour.  Their callers release
// the libraries' state whatever happened, and build the message strings.
#include "image_decode.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
// jpeglib.h first: jerror.h uses its types.
#include <jerror.h>
#include <png.h>

namespace weft_cpu {
namespace {

constexpr char kSinkRefused[] = "the output was not allocated";

// ---- PNG ----------------------------------------------------------------

struct PngState {
  const unsigned char* data;
  size_t size;
  size_t pos;
  bool sink_refused;
  char message[256];
};

void PngError(png_structp png, png_const_charp message) {
  auto* st = static_cast<PngState*>(png_get_error_ptr(png));
  snprintf(st->message, sizeof st->message, "%s",
           message != nullptr ? message : "libpng error");
  png_longjmp(png, 1);
}

// Warnings (an ancillary chunk with a bad CRC, which libpng skips) do not
// stop decoding, and a library must not print them.
void PngWarning(png_structp, png_const_charp) {}

void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* st = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > st->size - st->pos)
    png_error(png, "truncated: the data ends inside the image");
  std::memcpy(out, st->data + st->pos, n);
  st->pos += n;
}

// The whole decode, after setjmp: plain data only (see the file comment).
// True with the image in the sink's buffer, else false with st->message
// set or st->sink_refused.
bool PngDecodeInto(png_structp png, png_infop info, PngState* st,
                   int asked_channels, int bits, ImageSink* sink) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, st, PngRead);
  // libpng's own default (a million per side) would refuse long strips the
  // pixel limit allows.
  png_set_user_limits(png, kMaxImagePixels, kMaxImagePixels);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, nullptr,
               nullptr, nullptr);
  if (static_cast<uint64_t>(width) * height >
      static_cast<uint64_t>(kMaxImagePixels)) {
    snprintf(st->message, sizeof st->message,
             "%u x %u pixels is more than the %lld an image may have", width,
             height, static_cast<long long>(kMaxImagePixels));
    return false;
  }
  // The transformations of TensorFlow's png_io.cc, so both decode alike,
  // except that an added alpha is opaque at any source depth (TensorFlow
  // fills (1 << bit_depth) - 1, which is 1, 3 or 15 for low-depth images).
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  const int channels =
      asked_channels != 0 ? asked_channels
      : color_type == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3)
                                             : png_get_channels(png, info);
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if (channels % 2 == 0) {
    if (!has_alpha) {
      if (has_trns) png_set_tRNS_to_alpha(png);
      else png_set_add_alpha(png, 0xffff, PNG_FILLER_AFTER);
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (bit_depth > 8 && bits == 8) png_set_strip_16(png);
  png_set_packing(png);
  const int passes = png_set_interlace_handling(png);
  if (bit_depth > 8 && bits == 16) png_set_swap(png);  // to little-endian
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool is_gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (channels < 3) {
    if (!is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);  // BT.601
  } else if (is_gray) {
    png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, info);
  // The rows libpng writes: 16-bit samples only from a 16-bit image.
  const size_t read_sample = bit_depth > 8 && bits == 16 ? 2 : 1;
  const size_t row_samples = static_cast<size_t>(width) * channels;
  if (png_get_channels(png, info) != channels ||
      png_get_rowbytes(png, info) != row_samples * read_sample) {
    snprintf(st->message, sizeof st->message,
             "libpng's rows (%d channels, %zu bytes) are not the %d channels "
             "asked for", png_get_channels(png, info),
             static_cast<size_t>(png_get_rowbytes(png, info)), channels);
    return false;
  }
  unsigned char* out = sink->Allocate(height, width, channels, bits / 8);
  if (out == nullptr) {
    st->sink_refused = true;
    return false;
  }
  const size_t stride = row_samples * (bits / 8);
  // An interlaced image's passes each fill in more of every row.
  for (int pass = 0; pass < passes; ++pass)
    for (png_uint_32 y = 0; y < height; ++y)
      png_read_row(png, out + y * stride, nullptr);
  png_read_end(png, nullptr);
  if (bits == 16 && read_sample == 1) {
    // 8-bit samples to 16 bits (x * 257: 0 -> 0, 255 -> 65535), backwards
    // so each row widens in place.
    for (png_uint_32 y = 0; y < height; ++y) {
      unsigned char* row = out + y * stride;
      for (size_t i = row_samples; i-- > 0;) {
        const uint16_t v = static_cast<uint16_t>(row[i] * 257);
        std::memcpy(row + 2 * i, &v, 2);
      }
    }
  }
  return true;
}

// ---- JPEG ---------------------------------------------------------------

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Warnings (corrupt entropy data libjpeg decodes past) are not printed.
void JpegOutputMessage(j_common_ptr) {}

// A source over memory in which running out of data is an error: libjpeg's
// jpeg_mem_src would only warn and append an end-of-image marker, turning a
// truncated file into an image whose bottom is gray.
void SourceInit(j_decompress_ptr) {}
boolean SourceFill(j_decompress_ptr cinfo) {
  ERREXIT(cinfo, JERR_INPUT_EOF);
  return FALSE;
}
void SourceSkip(j_decompress_ptr cinfo, long n) {
  if (n <= 0) return;
  if (static_cast<unsigned long>(n) > cinfo->src->bytes_in_buffer)
    ERREXIT(cinfo, JERR_INPUT_EOF);
  cinfo->src->next_input_byte += n;
  cinfo->src->bytes_in_buffer -= static_cast<size_t>(n);
}
void SourceTerm(j_decompress_ptr) {}

struct JpegState {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  jpeg_source_mgr source;
  bool sink_refused;
};

// CMYK (or YCCK, which libjpeg turns into CMYK) to RGB as TensorFlow does:
// Adobe's files store the inks inverted.
void CmykRowToRgb(const JSAMPLE* cmyk, unsigned char* rgb, size_t width,
                  bool adobe) {
  for (size_t i = 0; i < width; ++i) {
    const int c = cmyk[4 * i], m = cmyk[4 * i + 1], y = cmyk[4 * i + 2],
              k = cmyk[4 * i + 3];
    if (adobe) {
      rgb[3 * i] = static_cast<unsigned char>(k * c / 255);
      rgb[3 * i + 1] = static_cast<unsigned char>(k * m / 255);
      rgb[3 * i + 2] = static_cast<unsigned char>(k * y / 255);
    } else {
      rgb[3 * i] = static_cast<unsigned char>((255 - k) * (255 - c) / 255);
      rgb[3 * i + 1] = static_cast<unsigned char>((255 - k) * (255 - m) / 255);
      rgb[3 * i + 2] = static_cast<unsigned char>((255 - k) * (255 - y) / 255);
    }
  }
}

// The whole decode, after setjmp: plain data only.  True with the image in
// the sink's buffer, else false with st->err.message set or
// st->sink_refused.
bool JpegDecodeInto(JpegState* st, const unsigned char* data, size_t size,
                    int asked_channels, bool fast_idct, ImageSink* sink) {
  j_decompress_ptr cinfo = &st->cinfo;
  if (setjmp(st->err.jump)) return false;
  jpeg_create_decompress(cinfo);
  st->source.next_input_byte = data;
  st->source.bytes_in_buffer = size;
  st->source.init_source = SourceInit;
  st->source.fill_input_buffer = SourceFill;
  st->source.skip_input_data = SourceSkip;
  st->source.resync_to_restart = jpeg_resync_to_restart;
  st->source.term_source = SourceTerm;
  cinfo->src = &st->source;
  jpeg_read_header(cinfo, TRUE);  // TRUE: a tables-only stream is an error
  const int channels = asked_channels != 0 ? asked_channels
                       : cinfo->num_components == 1 ? 1 : 3;
  const bool cmyk = channels == 3 && (cinfo->jpeg_color_space == JCS_CMYK ||
                                      cinfo->jpeg_color_space == JCS_YCCK);
  cinfo->out_color_space =
      channels == 1 ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  cinfo->dct_method = fast_idct ? JDCT_IFAST : JDCT_ISLOW;
  jpeg_calc_output_dimensions(cinfo);
  const JDIMENSION width = cinfo->output_width, height = cinfo->output_height;
  if (static_cast<uint64_t>(width) * height >
      static_cast<uint64_t>(kMaxImagePixels)) {
    snprintf(st->err.message, sizeof st->err.message,
             "%u x %u pixels is more than the %lld an image may have", width,
             height, static_cast<long long>(kMaxImagePixels));
    return false;
  }
  unsigned char* out = sink->Allocate(height, width, channels, 1);
  if (out == nullptr) {
    st->sink_refused = true;
    return false;
  }
  jpeg_start_decompress(cinfo);
  if (cinfo->output_components != (cmyk ? 4 : channels) ||
      cinfo->output_width != width || cinfo->output_height != height) {
    snprintf(st->err.message, sizeof st->err.message,
             "libjpeg gives %d components of %u x %u, not the %d channels "
             "asked for", cinfo->output_components, cinfo->output_width,
             cinfo->output_height, channels);
    return false;
  }
  JSAMPARRAY cmyk_row =
      cmyk ? (*cinfo->mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(cinfo),
                                         JPOOL_IMAGE, width * 4, 1)
           : nullptr;
  const size_t stride = static_cast<size_t>(width) * channels;
  while (cinfo->output_scanline < height) {
    unsigned char* dst = out + cinfo->output_scanline * stride;
    JSAMPROW row = cmyk ? cmyk_row[0] : dst;
    if (jpeg_read_scanlines(cinfo, &row, 1) != 1) {
      snprintf(st->err.message, sizeof st->err.message,
               "libjpeg stopped at row %u of %u", cinfo->output_scanline,
               height);
      return false;
    }
    if (cmyk) CmykRowToRgb(cmyk_row[0], dst, width, cinfo->saw_Adobe_marker);
  }
  // Not jpeg_finish_decompress: every row is decoded, and what follows
  // (the end-of-image marker, trailing bytes) changes none of them.
  return true;
}

}  // namespace

std::string DecodePng(const unsigned char* data, size_t size, int channels,
                      int bits, ImageSink* sink) {
  PngState st;
  std::memset(&st, 0, sizeof st);
  st.data = data;
  st.size = size;
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0)
    return "not a PNG image (no PNG signature)";
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st,
                                           PngError, PngWarning);
  if (png == nullptr) return "libpng cannot start (out of memory?)";
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "libpng cannot start (out of memory?)";
  }
  const bool ok = PngDecodeInto(png, info, &st, channels, bits, sink);
  png_destroy_read_struct(&png, &info, nullptr);
  if (ok) return "";
  if (st.sink_refused) return kSinkRefused;
  return std::string("corrupt or unsupported PNG: ") + st.message;
}

std::string DecodeJpeg(const unsigned char* data, size_t size, int channels,
                       bool fast_idct, ImageSink* sink) {
  JpegState st;
  std::memset(&st, 0, sizeof st);
  st.cinfo.err = jpeg_std_error(&st.err.pub);
  st.err.pub.error_exit = JpegErrorExit;
  st.err.pub.output_message = JpegOutputMessage;
  const bool ok = JpegDecodeInto(&st, data, size, channels, fast_idct, sink);
  // Safe on a half-created decompressor: it frees what exists.
  jpeg_destroy_decompress(&st.cinfo);
  if (ok) return "";
  if (st.sink_refused) return kSinkRefused;
  return std::string("corrupt or unsupported JPEG: ") + st.err.message;
}

}  // namespace weft_cpu
