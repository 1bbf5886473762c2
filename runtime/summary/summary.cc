// TensorBoard summaries (summary.h).
#include "summary/summary.h"

#include <png.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/status.h"
#include "tf_summary.pb.h"

namespace weft {
namespace summary {
namespace {

constexpr size_t kMaxTagBytes = 1024;

// Length of the UTF-8 sequence starting at s[i] (0 when invalid): the
// shortest form only, no surrogates, nothing above U+10FFFF.
size_t Utf8Length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // surrogate
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // above U+10FFFF
  return n;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F,
                 mant = h & 0x3FF;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// The histogram's bucket limits: 0, then +-1e-12 growing by 10% to 1e20,
// then DBL_MAX.  Made once.
const std::vector<double>& BucketLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> positive;
    for (double v = 1e-12; v < 1e20; v *= 1.1) positive.push_back(v);
    std::vector<double> all;
    all.reserve(2 * positive.size() + 2);
    for (auto it = positive.rbegin(); it != positive.rend(); ++it)
      all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), positive.begin(), positive.end());
    all.push_back(DBL_MAX);
    return all;
  }();
  return limits;
}

}  // namespace

weft_status* CheckTag(const std::string& tag, const std::string& where) {
  if (tag.empty()) return Error(WEFT_INVALID_ARGUMENT, where + ": the tag is empty");
  if (tag.size() > kMaxTagBytes)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: the tag has %zu bytes; at most "
                  "%zu", where.c_str(), tag.size(), kMaxTagBytes);
  for (size_t i = 0; i < tag.size();) {
    const size_t n = Utf8Length(tag, i);
    if (n == 0 || static_cast<unsigned char>(tag[i]) < 0x20 || tag[i] == 0x7F)
      return Errorf(WEFT_INVALID_ARGUMENT, "%s: the tag has %s at byte %zu "
                    "(TensorBoard shows tags as UTF-8 text)", where.c_str(),
                    n == 0 ? "invalid UTF-8" : "a control character", i);
    i += n;
  }
  return nullptr;
}

bool IsSummarizable(weft_dtype dtype) {
  switch (dtype) {
    case WEFT_FLOAT32: case WEFT_FLOAT64: case WEFT_FLOAT16:
    case WEFT_BFLOAT16: case WEFT_INT8: case WEFT_INT16: case WEFT_INT32:
    case WEFT_INT64: case WEFT_UINT8: case WEFT_UINT16: case WEFT_UINT32:
    case WEFT_UINT64: case WEFT_BOOL:
      return true;
    default:
      return false;
  }
}

double ElementAsDouble(weft_dtype dtype, const void* data, int64_t i) {
  const auto at = [&](auto type_tag) {
    decltype(type_tag) v;
    std::memcpy(&v, static_cast<const char*>(data) + i * sizeof v, sizeof v);
    return v;
  };
  switch (dtype) {
    case WEFT_FLOAT32: return at(float{});
    case WEFT_FLOAT64: return at(double{});
    case WEFT_FLOAT16: return HalfToFloat(at(uint16_t{}));
    case WEFT_BFLOAT16: {
      const uint32_t bits = static_cast<uint32_t>(at(uint16_t{})) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case WEFT_INT8: return at(int8_t{});
    case WEFT_INT16: return at(int16_t{});
    case WEFT_INT32: return at(int32_t{});
    case WEFT_INT64: return static_cast<double>(at(int64_t{}));
    case WEFT_UINT8: case WEFT_BOOL: return at(uint8_t{});
    case WEFT_UINT16: return at(uint16_t{});
    case WEFT_UINT32: return at(uint32_t{});
    case WEFT_UINT64: return static_cast<double>(at(uint64_t{}));
    default: return NAN;
  }
}

void Scalar(const std::string& tag, double value, tf::Summary* out) {
  tf::Summary::Value* v = out->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
}

weft_status* Histogram(const std::string& tag, weft_dtype dtype,
                       const void* data, int64_t n, tf::Summary* out) {
  if (!IsSummarizable(dtype))
    return Errorf(WEFT_INVALID_ARGUMENT, "a histogram of %s values: only "
                  "real numbers and bools can be summarized",
                  weft_dtype_name(dtype));
  const std::vector<double>& limits = BucketLimits();
  std::vector<double> counts(limits.size(), 0.0);
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0, sum_squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = ElementAsDouble(dtype, data, i);
    if (!std::isfinite(x))
      return Errorf(WEFT_INVALID_ARGUMENT, "a histogram of values with %s "
                    "at element %lld: TensorBoard cannot draw it",
                    std::isnan(x) ? "NaN" : "an infinity",
                    static_cast<long long>(i));
    // The bucket is [limit[k-1], limit[k]): the first limit above x.
    const size_t k = static_cast<size_t>(
        std::upper_bound(limits.begin(), limits.end(), x) - limits.begin());
    counts[std::min(k, limits.size() - 1)] += 1;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
    sum_squares += x * x;
  }
  tf::Summary::Value* v = out->add_value();
  v->set_tag(tag);
  tf::HistogramProto* h = v->mutable_histo();
  h->set_min(n > 0 ? lo : 0.0);
  h->set_max(n > 0 ? hi : 0.0);
  h->set_num(static_cast<double>(n));
  h->set_sum(sum);
  h->set_sum_squares(sum_squares);
  // A run of empty buckets becomes one, ending at the run's last limit, so
  // every bucket's lower edge is still the previous bucket's limit.
  for (size_t k = 0; k < counts.size();) {
    double limit = limits[k], count = counts[k];
    ++k;
    if (count == 0)
      while (k < counts.size() && counts[k] == 0) limit = limits[k++];
    h->add_bucket_limit(limit);
    h->add_bucket(count);
  }
  return nullptr;
}

weft_status* Images(const std::string& tag, weft_dtype dtype,
                    const Dims& dims, const void* data, int64_t max_images,
                    tf::Summary* out) {
  const int32_t rank = dims.rank();
  if (rank != 3 && rank != 4)
    return Errorf(WEFT_INVALID_ARGUMENT, "images must be [N, H, W, C] or "
                  "[H, W, C], got shape %s", dims.ToString().c_str());
  if (dtype != WEFT_UINT8 && dtype != WEFT_FLOAT32)
    return Errorf(WEFT_INVALID_ARGUMENT, "images must be uint8 or float32 "
                  "(in [0, 1]), got %s", weft_dtype_name(dtype));
  const int64_t count = rank == 4 ? dims[0] : 1;
  const int64_t height = dims[rank - 3], width = dims[rank - 2],
                channels = dims[rank - 1];
  if (channels < 1 || channels > 4)
    return Errorf(WEFT_INVALID_ARGUMENT, "images must have 1 (grey), 2 (grey "
                  "and alpha), 3 (RGB) or 4 (RGBA) channels, got %lld",
                  static_cast<long long>(channels));
  // PNG's limit is 2^31 - 1 per side; TensorBoard's browsers give up long
  // before.
  constexpr int64_t kMaxSide = 1 << 15;
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide)
    return Errorf(WEFT_INVALID_ARGUMENT, "images must be 1 to %lld pixels on "
                  "each side, got %lld x %lld",
                  static_cast<long long>(kMaxSide),
                  static_cast<long long>(height),
                  static_cast<long long>(width));
  if (max_images < 1)
    return Errorf(WEFT_INVALID_ARGUMENT, "max_images must be at least 1, got "
                  "%lld", static_cast<long long>(max_images));
  const int64_t emitted = std::min(count, max_images);
  const size_t pixels = static_cast<size_t>(height * width * channels);
  static const png_uint_32 kFormats[] = {PNG_FORMAT_GRAY, PNG_FORMAT_GA,
                                         PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  // Encoded first, added after: a failure leaves *out as it was.
  tf::Summary s;
  std::vector<uint8_t> bytes(pixels);
  for (int64_t i = 0; i < emitted; ++i) {
    if (dtype == WEFT_UINT8) {
      std::memcpy(bytes.data(), static_cast<const uint8_t*>(data) + i * pixels,
                  pixels);
    } else {
      const float* f = static_cast<const float*>(data) + i * pixels;
      for (size_t p = 0; p < pixels; ++p) {
        const float c = std::isnan(f[p]) ? 0.0f : std::clamp(f[p], 0.0f, 1.0f);
        bytes[p] = static_cast<uint8_t>(std::lround(c * 255.0f));
      }
    }
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = static_cast<png_uint_32>(width);
    image.height = static_cast<png_uint_32>(height);
    image.format = kFormats[channels - 1];
    png_alloc_size_t size = 0;
    std::string png;
    if (png_image_write_to_memory(&image, nullptr, &size, 0, bytes.data(), 0,
                                  nullptr)) {
      png.resize(size);
      if (!png_image_write_to_memory(&image, png.data(), &size, 0,
                                     bytes.data(), 0, nullptr))
        size = 0;
      png.resize(size);
    }
    if (png.empty()) {
      std::string why = image.message;
      png_image_free(&image);
      return Errorf(WEFT_INTERNAL, "encoding image %lld as PNG: %s",
                    static_cast<long long>(i), why.c_str());
    }
    png_image_free(&image);
    tf::Summary::Value* v = s.add_value();
    v->set_tag(emitted == 1 ? tag : tag + "/" + std::to_string(i));
    tf::Summary::Image* img = v->mutable_image();
    img->set_height(static_cast<int32_t>(height));
    img->set_width(static_cast<int32_t>(width));
    img->set_colorspace(static_cast<int32_t>(channels));
    img->set_encoded_image_string(std::move(png));
  }
  out->MergeFrom(s);
  return nullptr;
}

void Text(const std::string& tag, const std::string& text, tf::Summary* out) {
  tf::Summary::Value* v = out->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tf::TensorProto* t = v->mutable_tensor();
  t->set_dtype(tf::DT_STRING);
  t->mutable_tensor_shape();  // a scalar
  t->add_string_val(text);
}

weft_status* ParseSummary(const void* bytes, size_t n,
                          const std::string& where, tf::Summary* out) {
  tf::Summary& s = *out;
  if (n > static_cast<size_t>(INT32_MAX) ||
      !s.ParseFromArray(bytes, static_cast<int>(n)))
    return Error(WEFT_INVALID_ARGUMENT,
                 where + ": the bytes are not a serialized Summary (the "
                         "output of a summary op)");
  for (int i = 0; i < s.value_size(); ++i)
    WEFT_RETURN_IF_ERROR(
        CheckTag(s.value(i).tag(), where + ": value " + std::to_string(i)));
  return nullptr;
}

}  // namespace summary
}  // namespace weft
