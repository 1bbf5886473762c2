// Decoder kernels: DecodeRaw, DecodePng, DecodeJpeg, ParseExampleFeature
// (schemas in runtime/ops/io_ops.cc).  The parsing itself lives in
// image_decode.cc and example_parser.cc, which the fuzz targets also build;
// here are the attributes, the output and the messages naming the node.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "example_parser.h"
#include "image_decode.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

// Input 0 as bytes: uint8 of rank 1 (or, for DecodeRaw, any rank >= 1).
// The shape function checked what was known when the graph was built.
weft_status* ReadBytes(weft_kernel_context* ctx, bool any_rank, Tensor* in) {
  if (weft_status* s = ReadInput(ctx, 0, in)) return s;
  if (in->dtype != WEFT_UINT8)
    return DtypeMismatch(ctx, "input 0", in->dtype, WEFT_UINT8);
  if (any_rank ? in->rank < 1 : in->rank != 1) {
    char shape[64];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "the bytes must be %s, got shape %s",
                     any_rank ? "of rank 1 or more" : "a vector",
                     FormatShape(in->dims, in->rank, shape, sizeof shape));
  }
  return nullptr;
}

weft_status* DecodeRawKernel(weft_kernel_context* ctx) {
  Tensor in;
  if (weft_status* s = ReadBytes(ctx, true, &in)) return s;
  int32_t dtype = WEFT_DTYPE_INVALID;
  bool little_endian = true;
  weft_status* s = nullptr;
  if ((s = g_host->kernel_attr_dtype(ctx, "out_type", &dtype)) ||
      (s = OptionalBoolAttr(ctx, "little_endian", true, &little_endian)))
    return s;
  const size_t size = weft_dtype_size_of(dtype);
  if (size == 0) return UnsupportedDtype(ctx, dtype);
  int64_t dims[WEFT_MAX_RANK];
  std::memcpy(dims, in.dims, sizeof(int64_t) * in.rank);
  int64_t& last = dims[in.rank - 1];
  if (last % static_cast<int64_t>(size) != 0)
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "%lld bytes are not a whole number of %s values (%zu "
                     "bytes each)", static_cast<long long>(last),
                     DtypeName(dtype), size);
  last /= static_cast<int64_t>(size);
  Tensor out;
  if ((s = AllocateOutput(ctx, 0, dtype, dims, in.rank, &out))) return s;
  if (in.count == 0) return nullptr;
  std::memcpy(out.base, in.base, static_cast<size_t>(in.count));
  // The host is little-endian (the plugin's other kernels assume it too).
  if (!little_endian && size > 1) {
    for (int64_t i = 0; i < in.count; i += static_cast<int64_t>(size))
      for (size_t a = 0, b = size - 1; a < b; ++a, --b)
        std::swap(out.base[i + a], out.base[i + b]);
  }
  return nullptr;
}

// The decoders' sink: output 0, allocated by the host.
class OutputSink final : public ImageSink {
 public:
  OutputSink(weft_kernel_context* ctx, int32_t dtype)
      : ctx_(ctx), dtype_(dtype) {}
  ~OutputSink() = default;

  unsigned char* Allocate(int64_t height, int64_t width, int64_t channels,
                          int /*bytes_per_sample*/) noexcept override {
    const int64_t dims[3] = {height, width, channels};
    Tensor out;
    status_ = AllocateOutput(ctx_, 0, dtype_, dims, 3, &out);
    return status_ != nullptr ? nullptr
                              : reinterpret_cast<unsigned char*>(out.base);
  }
  // The host's refusal, if it refused.
  weft_status* status() const { return status_; }

 private:
  weft_kernel_context* ctx_;
  int32_t dtype_;
  weft_status* status_ = nullptr;
};

// DecodePng and DecodeJpeg: the bytes, the attributes, the sink.
template <bool kPng>
weft_status* DecodeImageKernel(weft_kernel_context* ctx) {
  Tensor in;
  if (weft_status* s = ReadBytes(ctx, false, &in)) return s;
  int64_t channels = 0;
  int32_t dtype = WEFT_UINT8;
  const char* dct = "INTEGER_ACCURATE";
  weft_status* s = nullptr;
  if ((s = g_host->kernel_attr_int(ctx, "channels", &channels)) ||
      (kPng && (s = g_host->kernel_attr_dtype(ctx, "dtype", &dtype))) ||
      (!kPng && (s = g_host->kernel_attr_string(ctx, "dct_method", &dct))))
    return s;
  OutputSink sink(ctx, dtype);
  const auto* data = in.data<unsigned char>();
  const size_t size = static_cast<size_t>(in.count);
  const std::string error =
      kPng ? DecodePng(data, size, static_cast<int>(channels),
                       dtype == WEFT_UINT16 ? 16 : 8, &sink)
           : DecodeJpeg(data, size, static_cast<int>(channels),
                        std::strcmp(dct, "INTEGER_FAST") == 0, &sink);
  if (sink.status() != nullptr) return sink.status();
  if (!error.empty())
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "cannot decode the %zu bytes as %s: %s", size,
                     kPng ? "a PNG image" : "a JPEG image", error.c_str());
  return nullptr;
}

// ParseExampleFeature's values, from the Example or default_value, before
// they are shaped.
struct FeatureValues {
  int64_t count = 0;
  const void* data = nullptr;  // count values of the output dtype
  std::vector<float> float_defaults;
  std::vector<int64_t> int64_defaults;
  std::vector<unsigned char> byte_defaults;
};

ExampleFeature::Kind KindFor(int32_t dtype) {
  return dtype == WEFT_FLOAT32 ? ExampleFeature::kFloat
         : dtype == WEFT_INT64 ? ExampleFeature::kInt64
                               : ExampleFeature::kBytes;
}

// The values of a feature the Example holds.
weft_status* FoundValues(const weft_kernel_context* ctx, const char* key,
                         int32_t dtype, int64_t index, const Tensor& in,
                         const ExampleFeature& f, FeatureValues* v) {
  const ExampleFeature::Kind want = KindFor(dtype);
  if (f.kind != want && f.kind != ExampleFeature::kNone)
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "feature '%s' holds a %s; T = %s reads a %s", key,
                     ExampleKindName(f.kind), DtypeName(dtype),
                     ExampleKindName(want));
  if (want == ExampleFeature::kFloat) {
    v->count = static_cast<int64_t>(f.floats.size());
    v->data = f.floats.data();
  } else if (want == ExampleFeature::kInt64) {
    v->count = static_cast<int64_t>(f.int64s.size());
    v->data = f.int64s.data();
  } else {
    if (index >= static_cast<int64_t>(f.bytes.size()))
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "feature '%s' holds %zu bytes values; index %lld is "
                       "out of range", key, f.bytes.size(),
                       static_cast<long long>(index));
    v->count = static_cast<int64_t>(f.bytes[index].second);
    v->data = in.data<unsigned char>() + f.bytes[index].first;
  }
  return nullptr;
}

// default_value as the output dtype (the shape function checked that each
// value fits), repeated to `count` when it holds one value and count >= 0.
void DefaultValues(int32_t dtype, const double* values, int32_t n,
                   int64_t count, FeatureValues* v) {
  v->count = count >= 0 && n == 1 ? count : n;
  for (int64_t i = 0; i < v->count; ++i) {
    const double x = values[n == 1 ? 0 : i];
    if (dtype == WEFT_FLOAT32) v->float_defaults.push_back(static_cast<float>(x));
    else if (dtype == WEFT_INT64) v->int64_defaults.push_back(static_cast<int64_t>(x));
    else v->byte_defaults.push_back(static_cast<unsigned char>(x));
  }
  v->data = dtype == WEFT_FLOAT32 ? static_cast<const void*>(v->float_defaults.data())
            : dtype == WEFT_INT64 ? static_cast<const void*>(v->int64_defaults.data())
                                  : static_cast<const void*>(v->byte_defaults.data());
}

weft_status* ParseExampleFeatureKernel(weft_kernel_context* ctx) {
  Tensor in;
  if (weft_status* s = ReadBytes(ctx, false, &in)) return s;
  const char* key = nullptr;
  int32_t dtype = WEFT_DTYPE_INVALID;
  int64_t index = 0;
  const int64_t* shape = nullptr;
  int32_t rank = 0;
  bool has_shape = false;
  weft_status* s = nullptr;
  if ((s = g_host->kernel_attr_string(ctx, "key", &key)) ||
      (s = g_host->kernel_attr_dtype(ctx, "T", &dtype)) ||
      (s = g_host->kernel_attr_int(ctx, "index", &index)) ||
      (s = OptionalIntListAttr(ctx, "shape", &shape, &rank, &has_shape)))
    return s;
  if (rank > WEFT_MAX_RANK) return RankTooLarge(ctx, "attribute shape", rank);
  int64_t count = has_shape ? 1 : -1;
  for (int32_t i = 0; i < rank; ++i) count *= shape[i];  // checked at build

  ExampleFeature feature;
  bool found = false;
  const std::string error =
      FindExampleFeature(in.data<unsigned char>(), static_cast<size_t>(in.count),
                         key, &found, &feature);
  if (!error.empty())
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "cannot read feature '%s' from the %lld bytes: %s", key,
                     static_cast<long long>(in.count), error.c_str());
  FeatureValues values;
  if (found) {
    if ((s = FoundValues(ctx, key, dtype, index, in, feature, &values)))
      return s;
  } else {
    const double* defaults = nullptr;
    int32_t n = 0;
    s = g_host->kernel_attr_float_list(ctx, "default_value", &defaults, &n);
    if (s != nullptr && StatusCode(s) == WEFT_NOT_FOUND) {
      DiscardStatus(s);
      return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                       "the Example has no feature '%s', and the node no "
                       "default_value", key);
    }
    if (s != nullptr) return s;
    DefaultValues(dtype, defaults, n, count, &values);
  }
  if (has_shape && values.count != count) {
    char text[160];
    return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                     "feature '%s' has %lld values%s; shape %s needs %lld",
                     key, static_cast<long long>(values.count),
                     found ? "" : " (default_value)",
                     FormatShape(shape, rank, text, sizeof text),
                     static_cast<long long>(count));
  }
  const int64_t flat[1] = {values.count};
  Tensor out;
  if ((s = AllocateOutput(ctx, 0, dtype, has_shape ? shape : flat,
                          has_shape ? rank : 1, &out)))
    return s;
  if (values.count > 0)
    std::memcpy(out.base, values.data,
                static_cast<size_t>(values.count) * weft_dtype_size_of(dtype));
  return nullptr;
}

}  // namespace

weft_status* RegisterDecodeKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = registrar.Add(
           "DecodeRaw",
           {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT8,
            WEFT_INT16, WEFT_INT32, WEFT_INT64, WEFT_UINT8, WEFT_UINT16,
            WEFT_UINT32, WEFT_UINT64},
           Guarded<DecodeRawKernel>, "out_type")) ||
      (s = registrar.Add("DecodePng", {WEFT_UINT8, WEFT_UINT16},
                         Guarded<DecodeImageKernel<true>>, "dtype")) ||
      (s = registrar.Add("DecodeJpeg", {},
                         Guarded<DecodeImageKernel<false>>)) ||
      (s = registrar.Add("ParseExampleFeature",
                         {WEFT_FLOAT32, WEFT_INT64, WEFT_UINT8},
                         Guarded<ParseExampleFeatureKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
