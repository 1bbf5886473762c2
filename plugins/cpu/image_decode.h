// PNG (libpng) and JPEG (libjpeg-turbo) decoding into a buffer the caller
// allocates once the image's size is known.  Plain functions over bytes,
// free of the host table, so the fuzz target (tests/fuzz/decoders.cc)
// drives exactly what the kernels run.
//
// Both libraries report errors by longjmp; each decoder keeps its setjmp in
// a function whose frames hold no C++ object, so nothing is skipped that
// needed destroying, and releases the library's state on every path.
#ifndef WEFT_PLUGINS_CPU_IMAGE_DECODE_H_
#define WEFT_PLUGINS_CPU_IMAGE_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace weft_cpu {

// The most pixels an image may have (height * width): refused before any
// output is allocated.  2^28 holds a 16384 x 16384 image.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// Receives the output's shape and returns where to write height * width *
// channels samples of `bytes_per_sample` bytes, row-major, or null to stop
// decoding (the sink keeps its own reason).  Must not throw.
class ImageSink {
 public:
  virtual unsigned char* Allocate(int64_t height, int64_t width,
                                  int64_t channels,
                                  int bytes_per_sample) noexcept = 0;

 protected:
  ~ImageSink() = default;
};

// Decodes a PNG image.  `channels` 0 keeps the image's (a palette gives 3,
// or 4 with transparency), 1-4 convert as TensorFlow's DecodePng does;
// `bits` 8 or 16 (8-bit images are scaled by 257, 16-bit ones truncated).
// Returns "" once the sink's buffer holds the image, else why not: the
// bytes are no PNG this can decode, or the sink refused (which the caller
// knows better).
std::string DecodePng(const unsigned char* data, size_t size, int channels,
                      int bits, ImageSink* sink);

// Decodes a JPEG image to 8-bit samples.  `channels` 0 gives 1 for a
// grayscale image and 3 otherwise (CMYK is converted to RGB); 1 and 3
// convert.  `fast_idct` chooses libjpeg's IFAST inverse DCT over ISLOW.
// Corrupt entropy-coded data that libjpeg only warns about decodes (as in
// TensorFlow); anything it cannot go on from, truncation included, fails.
std::string DecodeJpeg(const unsigned char* data, size_t size, int channels,
                       bool fast_idct, ImageSink* sink);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_IMAGE_DECODE_H_
