// Random ops: seeded, reproducible, never merged.
//
// A kernel's values depend only on (seed, seed2, the node's run counter, the
// element index), so they are the same for any thread count and in every
// process.  Both seeds 0 asks for a nondeterministic graph, as in
// TensorFlow: the shape function draws seed2 once, when the node is built.
#include <cmath>
#include <random>
#include <string>

#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"
#include "weft/tensor.h"

namespace weft {

// Reads an int-list attribute that must hold a fully known shape: the
// random ops' `shape`, and Fill's (declared again in array.cc).
weft_status* FullyKnownShapeAttr(const InferenceContext& c, const char* attr,
                                 ShapeInfo* out) {
  const std::vector<int64_t>& dims = c.attr(attr)->ints;
  std::string text =
      ShapeString(dims.data(), static_cast<int32_t>(dims.size()));
  if (dims.size() > WEFT_MAX_RANK)
    return c.Fail("attribute %s = %s has rank %zu; ranks run up to %d", attr,
                  text.c_str(), dims.size(), WEFT_MAX_RANK);
  for (int64_t d : dims)
    if (d < 0)
      return c.Fail("attribute %s = %s must be fully known (no negative "
                    "dimension)", attr, text.c_str());
  const std::string what = std::string("attribute ") + attr + " =";
  int64_t n = 0;
  WEFT_RETURN_IF_ERROR(CheckedCount(c, dims, what.c_str(), &n));
  *out = ShapeInfo::Of(dims);
  return nullptr;
}

namespace {

AttrDef Optional(const char* name, AttrType type, int64_t i, double f = 0) {
  AttrValue v;
  v.type = type;
  v.i = i;
  v.f = f;
  return AttrDef{name, type, false, std::move(v)};
}

std::vector<AttrDef> SeedAttrs() {
  return {Optional("seed", AttrType::kInt, 0),
          Optional("seed2", AttrType::kInt, 0)};
}

weft_status* ResolveSeeds(InferenceContext& c) {
  if (c.attr("seed")->i != 0 || c.attr("seed2")->i != 0) return nullptr;
  std::random_device device;
  uint64_t drawn = 0;
  while (drawn == 0)  // 0 would mean "draw again" to the next reader
    drawn = (static_cast<uint64_t>(device()) << 32) ^ device();
  AttrValue v;
  v.type = AttrType::kInt;
  v.i = static_cast<int64_t>(drawn);
  SetAttr(c.attrs, "seed2", v);
  return nullptr;
}

weft_status* CheckFinite(const InferenceContext& c, const char* attr) {
  double v = c.attr(attr)->f;
  if (!std::isfinite(v))
    return c.Fail("attribute %s = %g must be finite", attr, v);
  return nullptr;
}

// RandomUniform, RandomNormal and TruncatedNormal: no inputs, a shape and a
// float dtype given as attributes.
OpDef Generator(const char* name, bool normal, const char* summary) {
  OpDef d;
  d.name = name;
  d.stateful = true;
  d.type_attr = "dtype";
  d.allowed_types = kFloatTypes;
  d.summary = summary;
  d.attrs = SeedAttrs();
  d.attrs.push_back(AttrDef{"shape", AttrType::kIntList, true, {}});
  d.attrs.push_back(Optional("dtype", AttrType::kDtype, WEFT_FLOAT32));
  if (normal) {
    d.attrs.push_back(Optional("mean", AttrType::kFloat, 0, 0.0));
    d.attrs.push_back(Optional("stddev", AttrType::kFloat, 0, 1.0));
  }
  d.infer = [normal](InferenceContext& c) -> weft_status* {
    auto t = static_cast<weft_dtype>(c.attr("dtype")->i);
    bool is_float = false;
    for (weft_dtype f : kFloatTypes) is_float |= f == t;
    if (!is_float)
      return c.Fail("attribute dtype must be a float type, got %s",
                    weft_dtype_name(t));
    if (normal) {
      WEFT_RETURN_IF_ERROR(CheckFinite(c, "mean"));
      WEFT_RETURN_IF_ERROR(CheckFinite(c, "stddev"));
      if (c.attr("stddev")->f < 0)
        return c.Fail("attribute stddev = %g must be >= 0",
                      c.attr("stddev")->f);
    }
    ShapeInfo shape;
    WEFT_RETURN_IF_ERROR(FullyKnownShapeAttr(c, "shape", &shape));
    WEFT_RETURN_IF_ERROR(ResolveSeeds(c));
    c.output_dtypes = {t};
    c.output_shapes = {std::move(shape)};
    return nullptr;
  };
  return d;
}

}  // namespace

void RegisterRandomOps(OpRegistry* r) {
  r->Add(Generator("RandomUniform", false,
                   "Uniform values in [0, 1) of the given shape."));
  r->Add(Generator("RandomNormal", true,
                   "Normal values of the given shape, mean and stddev."));
  r->Add(Generator("TruncatedNormal", true,
                   "Normal values redrawn until within 2 stddev of mean."));

  OpDef shuffle = UnaryOp("RandomShuffle", kAllTypes,
                          "value with its first dimension permuted.");
  shuffle.stateful = true;
  shuffle.input_names = {"value"};
  shuffle.attrs = SeedAttrs();
  auto unary = shuffle.infer;
  shuffle.infer = [unary](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(unary(c));
    return ResolveSeeds(c);
  };
  r->Add(std::move(shuffle));

  OpDef dropout = UnaryOp("Dropout", kFloatTypes,
                          "x * mask / (1 - rate), mask Bernoulli(1 - rate).");
  dropout.stateful = true;
  dropout.attrs = SeedAttrs();
  dropout.attrs.push_back(AttrDef{"rate", AttrType::kFloat, true, {}});
  unary = dropout.infer;
  dropout.infer = [unary](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(unary(c));
    double rate = c.attr("rate")->f;
    if (!(rate >= 0 && rate < 1))
      return c.Fail("attribute rate = %g must be in [0, 1)", rate);
    return ResolveSeeds(c);
  };
  r->Add(std::move(dropout));
}

}  // namespace weft
