// Fuzz target: the CPU plugin's decoders (plugins/cpu/image_decode.cc and
// example_parser.cc, compiled into this target with the sanitizers; libpng,
// libjpeg and libprotobuf are the system's) on arbitrary bytes.
// Input: [selector] [key] payload.
//   selector % 3: 0 DecodePng, 1 DecodeJpeg, 2 ParseExampleFeature's
//     parser; (selector / 3) % 5: the channels asked for (JPEG: 0, 1, 3);
//     selector & 0x80: 16-bit PNG samples, or JPEG's fast IDCT;
//   key: which feature to look up.
// Every input must end in "" or a message, never a crash or a sanitizer
// report; a decoded image must be the size the sink was asked for, and a
// feature's bytes must lie inside the input.  Built and run by
// scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "example_parser.h"
#include "image_decode.h"

namespace {

// Holds the image in memory up to 64 MiB, refusing more: what the fuzzer
// is after is the parsing, not the allocator.
class VectorSink final : public weft_cpu::ImageSink {
 public:
  unsigned char* Allocate(int64_t height, int64_t width, int64_t channels,
                          int bytes_per_sample) noexcept override {
    if (height <= 0 || width <= 0 || channels < 1 || channels > 4 ||
        (bytes_per_sample != 1 && bytes_per_sample != 2) || called_)
      std::abort();  // the decoders promise sane shapes, once
    called_ = true;
    const uint64_t bytes = static_cast<uint64_t>(height) * width * channels *
                           bytes_per_sample;
    if (height * width > weft_cpu::kMaxImagePixels) std::abort();
    if (bytes > (uint64_t{64} << 20)) return nullptr;
    pixels_.assign(bytes, 0xAB);
    return pixels_.data();
  }
  bool called() const { return called_; }
  const std::vector<unsigned char>& pixels() const { return pixels_; }

 private:
  bool called_ = false;
  std::vector<unsigned char> pixels_;
};

const char* const kKeys[] = {"image", "label", "a", "", "f"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t selector = data[0];
  const std::string key = kKeys[data[1] % 5];
  data += 2;
  size -= 2;
  const int decoder = selector % 3;
  int channels = (selector / 3) % 5;
  const bool flag = (selector & 0x80) != 0;
  if (decoder == 2) {
    weft_cpu::ExampleFeature feature;
    bool found = false;
    const std::string error =
        weft_cpu::FindExampleFeature(data, size, key, &found, &feature);
    if (!error.empty()) return 0;
    if (!found && feature.kind != weft_cpu::ExampleFeature::kNone)
      std::abort();
    for (const auto& b : feature.bytes)
      if (b.first > size || b.second > size - b.first) std::abort();
    return 0;
  }
  VectorSink sink;
  std::string error;
  if (decoder == 0) {
    error = weft_cpu::DecodePng(data, size, channels, flag ? 16 : 8, &sink);
  } else {
    static const int kJpegChannels[5] = {0, 1, 3, 0, 3};
    channels = kJpegChannels[channels];
    error = weft_cpu::DecodeJpeg(data, size, channels, flag, &sink);
  }
  if (error.empty()) {
    if (!sink.called()) std::abort();  // success without an image
    // Touch every byte, so ASan sees any the decoder left out of bounds.
    unsigned sum = 0;
    for (unsigned char v : sink.pixels()) sum += v;
    if (sum == 0xFFFFFFFFu) std::abort();
  }
  return 0;
}
