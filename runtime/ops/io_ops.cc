// Decoders for input pipelines: DecodeRaw, DecodePng, DecodeJpeg and
// ParseExampleFeature.  Weft has no string dtype, so a record, an encoded
// image or a serialized Example is a 1-D uint8 tensor of its bytes.  The
// kernels (plugins/cpu/decode.cc) check what only the bytes can tell: a
// corrupt image or Example is INVALID_ARGUMENT naming the node.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"
#include "weft/tensor.h"

namespace weft {

// Defined in random.cc: a fully known shape held by an int-list attribute.
weft_status* FullyKnownShapeAttr(const InferenceContext& c, const char* attr,
                                 ShapeInfo* out);

namespace {

// An attribute whose absence means something of its own.
AttrDef Absent(const char* name, AttrType type) {
  return AttrDef{name, type, false, {}, false};
}

bool OneOf(weft_dtype t, const std::vector<weft_dtype>& types) {
  for (weft_dtype u : types)
    if (u == t) return true;
  return false;
}

// Every decoder reads bytes: input 0 is uint8, of rank 1 unless
// `any_rank` (DecodeRaw decodes along the last axis of any rank >= 1).
weft_status* CheckBytesInput(const InferenceContext& c, bool any_rank) {
  if (c.input_dtypes[0] != WEFT_UINT8)
    return c.Fail("input %s must be uint8 (the bytes), got %s",
                  c.op == "ParseExampleFeature" ? "serialized" : "bytes",
                  weft_dtype_name(c.input_dtypes[0]));
  const ShapeInfo& in = c.input_shapes[0];
  if (in.known_rank() && (any_rank ? in.rank < 1 : in.rank != 1))
    return c.Fail("the bytes must be %s, got shape %s",
                  any_rank ? "of rank 1 or more" : "a vector",
                  in.ToString().c_str());
  return nullptr;
}

weft_status* InferDecodeRaw(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(CheckBytesInput(c, true));
  auto t = static_cast<weft_dtype>(c.attr("out_type")->i);
  if (!OneOf(t, kNumericTypes))
    return c.Fail("attribute out_type must be a numeric dtype, got %s",
                  weft_dtype_name(t));
  const ShapeInfo& in = c.input_shapes[0];
  ShapeInfo out = in;
  if (in.known_rank() && in.dims.back() >= 0) {
    const int64_t bytes = in.dims.back();
    const int64_t size = static_cast<int64_t>(weft_dtype_size(t));
    if (bytes % size != 0)
      return c.Fail("%lld bytes are not a whole number of %s values (%lld "
                    "bytes each)", static_cast<long long>(bytes),
                    weft_dtype_name(t), static_cast<long long>(size));
    out.dims.back() = bytes / size;
  }
  c.output_dtypes = {t};
  c.output_shapes = {std::move(out)};
  return nullptr;
}

// DecodePng and DecodeJpeg: an image [height, width, channels] whose
// height and width only the bytes tell.
weft_status* InferImage(InferenceContext& c, const std::vector<int64_t>& channels,
                        weft_dtype t) {
  WEFT_RETURN_IF_ERROR(CheckBytesInput(c, false));
  const int64_t ch = c.attr("channels")->i;
  if (std::find(channels.begin(), channels.end(), ch) == channels.end()) {
    std::string allowed;
    for (int64_t k : channels)
      allowed += (allowed.empty() ? "" : ", ") + std::to_string(k);
    return c.Fail("attribute channels = %lld must be one of %s (0: as the "
                  "image has them)", static_cast<long long>(ch),
                  allowed.c_str());
  }
  c.output_dtypes = {t};
  c.output_shapes = {ShapeInfo::Of({-1, -1, ch == 0 ? -1 : ch})};
  return nullptr;
}

// Can a default_value (a double) be stored as T without changing it,
// beyond float32's rounding?
bool Representable(double v, weft_dtype t) {
  if (t == WEFT_FLOAT32) return !std::isfinite(v) || std::fabs(v) <= FLT_MAX;
  if (v != std::trunc(v)) return false;
  if (t == WEFT_UINT8) return v >= 0 && v <= 255;
  return v >= -0x1p63 && v < 0x1p63;  // int64
}

weft_status* InferParseExampleFeature(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(CheckBytesInput(c, false));
  auto t = static_cast<weft_dtype>(c.attr("T")->i);
  if (t != WEFT_FLOAT32 && t != WEFT_INT64 && t != WEFT_UINT8)
    return c.Fail("attribute T must be float32 (float_list), int64 "
                  "(int64_list) or uint8 (one value of a bytes_list), got %s",
                  weft_dtype_name(t));
  if (c.attr("key")->s.empty())
    return c.Fail("attribute key must name a feature");
  if (c.attr("index")->i < 0)
    return c.Fail("attribute index = %lld must be >= 0",
                  static_cast<long long>(c.attr("index")->i));
  ShapeInfo shape = ShapeInfo::Of({-1});
  int64_t count = -1;
  if (c.attr("shape") != nullptr) {
    WEFT_RETURN_IF_ERROR(FullyKnownShapeAttr(c, "shape", &shape));
    WEFT_RETURN_IF_ERROR(CheckedCount(c, shape.dims, "attribute shape =",
                                      &count));
  }
  if (const AttrValue* d = c.attr("default_value")) {
    const int64_t n = static_cast<int64_t>(d->floats.size());
    if (count >= 0 && n != count && n != 1)
      return c.Fail("attribute default_value has %lld values; shape %s "
                    "needs %lld (or 1, repeated)", static_cast<long long>(n),
                    shape.ToString().c_str(), static_cast<long long>(count));
    for (double v : d->floats)
      if (!Representable(v, t))
        return c.Fail("attribute default_value holds %g, which %s cannot "
                      "represent", v, weft_dtype_name(t));
  }
  c.output_dtypes = {t};
  c.output_shapes = {std::move(shape)};
  return nullptr;
}

OpDef Decoder(const char* name, const char* input, const char* type_attr,
              std::vector<weft_dtype> types, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {input};
  d.type_attr = type_attr;
  d.allowed_types = std::move(types);
  d.summary = summary;
  return d;
}

}  // namespace

void RegisterIoOps(OpRegistry* r) {
  OpDef raw = Decoder(
      "DecodeRaw", "bytes", "out_type", kNumericTypes,
      "The bytes along the last axis reinterpreted as out_type values "
      "([..., n] uint8 -> [..., n / size]), little-endian unless "
      "little_endian is false.");
  raw.attrs = {Required("out_type", AttrType::kDtype),
               Optional("little_endian", AttrType::kBool, IntValue(1))};
  raw.infer = InferDecodeRaw;
  r->Add(std::move(raw));

  OpDef png = Decoder(
      "DecodePng", "contents", "dtype", {WEFT_UINT8, WEFT_UINT16},
      "A PNG image ([n] uint8) as [height, width, channels] of dtype (uint8 "
      "or uint16); channels 0 keeps the image's, 1-4 convert (gray, gray + "
      "alpha, RGB, RGBA) as TensorFlow's DecodePng does.");
  png.attrs = {Optional("channels", AttrType::kInt, IntValue(0)),
               Optional("dtype", AttrType::kDtype, IntValue(WEFT_UINT8))};
  png.infer = [](InferenceContext& c) {
    auto t = static_cast<weft_dtype>(c.attr("dtype")->i);
    if (t != WEFT_UINT8 && t != WEFT_UINT16)
      return c.Fail("attribute dtype must be uint8 or uint16, got %s",
                    weft_dtype_name(t));
    return InferImage(c, {0, 1, 2, 3, 4}, t);
  };
  r->Add(std::move(png));

  OpDef jpeg = Decoder(
      "DecodeJpeg", "contents", "", {},
      "A JPEG image ([n] uint8) as uint8 [height, width, channels]; "
      "channels 0 keeps the image's (1, or 3 for color and CMYK), 1 and 3 "
      "convert.  dct_method INTEGER_ACCURATE (libjpeg's islow) or "
      "INTEGER_FAST (TensorFlow's default).");
  jpeg.attrs = {Optional("channels", AttrType::kInt, IntValue(0)),
                Optional("dct_method", AttrType::kString,
                         StringValue("INTEGER_ACCURATE"))};
  jpeg.infer = [](InferenceContext& c) {
    const std::string& dct = c.attr("dct_method")->s;
    if (dct != "INTEGER_ACCURATE" && dct != "INTEGER_FAST")
      return c.Fail("attribute dct_method = '%s' must be INTEGER_ACCURATE "
                    "or INTEGER_FAST", dct.c_str());
    return InferImage(c, {0, 1, 3}, WEFT_UINT8);
  };
  r->Add(std::move(jpeg));

  OpDef example = Decoder(
      "ParseExampleFeature", "serialized", "T",
      {WEFT_FLOAT32, WEFT_INT64, WEFT_UINT8},
      "Feature `key` of one serialized tf.train.Example ([n] uint8) as a "
      "dense T tensor: float32 for a float_list, int64 for an int64_list, "
      "uint8 for the bytes of value `index` of a bytes_list; of `shape` "
      "(whose element count the values must have) or else 1-D.  An absent "
      "key gives default_value, or fails without one.  One op per feature: "
      "attributes hold no list of strings or dtypes.");
  example.attrs = {Required("key", AttrType::kString),
                   Required("T", AttrType::kDtype),
                   Absent("shape", AttrType::kIntList),
                   Absent("default_value", AttrType::kFloatList),
                   Optional("index", AttrType::kInt, IntValue(0))};
  example.infer = InferParseExampleFeature;
  r->Add(std::move(example));
}

}  // namespace weft
