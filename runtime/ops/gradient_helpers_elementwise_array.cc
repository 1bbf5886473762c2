// Ops that gradients of the element-wise and array families build.
//
// Most take a `like` input read only for its run-time shape: a gradient
// must often have the shape of a value whose dims are unknown when the
// graph is built (a batch of -1), and shapes are never tensors here
// (runtime/ops/CONVENTIONS.md), so the value itself stands for its shape.
// The output's static shape is `like`'s.
#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"

namespace weft {
namespace {

void SetType(InferenceContext& c, const char* attr, weft_dtype t) {
  AttrValue v;
  v.type = AttrType::kDtype;
  v.i = t;
  SetAttr(c.attrs, attr, v);
}

// Output: input 0's dtype (recorded as T) with input `like`'s shape.
weft_status* ProduceLike(InferenceContext& c, size_t like) {
  SetType(c, "T", c.input_dtypes[0]);
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {c.input_shapes[like]};
  return nullptr;
}

OpDef LikeOp(const char* name, std::vector<std::string> inputs,
             const std::vector<weft_dtype>& types, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = std::move(inputs);
  d.type_attr = "T";
  d.allowed_types = types;
  d.summary = summary;
  return d;
}

weft_status* InferSumToShapeOf(InferenceContext& c) {
  const ShapeInfo& x = c.input_shapes[0];
  const ShapeInfo& like = c.input_shapes[1];
  if (x.known_rank() && like.known_rank()) {
    if (like.rank > x.rank)
      return c.Fail("like %s has a higher rank than x %s",
                    like.ToString().c_str(), x.ToString().c_str());
    for (int32_t i = 0; i < like.rank; ++i) {
      int64_t l = like.dims[i], d = x.dims[i + x.rank - like.rank];
      if (l < 0 || d < 0) continue;
      if (l == 0 ? d != 0 : d % l != 0)
        return c.Fail("x %s cannot be summed to the shape of like %s",
                      x.ToString().c_str(), like.ToString().c_str());
    }
  }
  return ProduceLike(c, 1);
}

weft_status* InferReshapeLike(InferenceContext& c) {
  const ShapeInfo& x = c.input_shapes[0];
  const ShapeInfo& like = c.input_shapes[1];
  if (x.fully_known() && like.fully_known()) {
    int64_t a = 0, b = 0;
    WEFT_RETURN_IF_ERROR(CheckedCount(c, x.dims, "x", &a));
    WEFT_RETURN_IF_ERROR(CheckedCount(c, like.dims, "like", &b));
    if (a != b)
      return c.Fail("x %s and like %s have different element counts",
                    x.ToString().c_str(), like.ToString().c_str());
  }
  return ProduceLike(c, 1);
}

// SliceGrad and PadGrad: `begin` places the smaller of the two shapes
// (grad for SliceGrad, like for PadGrad) inside the larger.
weft_status* InferBox(InferenceContext& c, bool grad_is_inner) {
  const ShapeInfo& inner = c.input_shapes[grad_is_inner ? 0 : 1];
  const ShapeInfo& outer = c.input_shapes[grad_is_inner ? 1 : 0];
  const std::vector<int64_t>& begin = c.attr("begin")->ints;
  for (const ShapeInfo* s : {&inner, &outer})
    if (s->known_rank() && s->rank != static_cast<int32_t>(begin.size()))
      return c.Fail(
          "attribute begin has %zu entries; the inputs %s and %s "
          "need one per dimension",
          begin.size(), c.input_shapes[0].ToString().c_str(),
          c.input_shapes[1].ToString().c_str());
  for (size_t i = 0; i < begin.size(); ++i) {
    bool ok = begin[i] >= 0;
    if (ok && inner.known_rank() && outer.known_rank() && inner.dims[i] >= 0 &&
        outer.dims[i] >= 0)
      ok = begin[i] <= outer.dims[i] - inner.dims[i];  // cannot overflow
    if (!ok)
      return c.Fail("a box of %s at begin[%zu] = %lld does not fit in %s",
                    inner.ToString().c_str(), i,
                    static_cast<long long>(begin[i]), outer.ToString().c_str());
  }
  return ProduceLike(c, 1);
}

weft_status* InferGatherGrad(InferenceContext& c) {
  weft_dtype it = c.input_dtypes[1];
  if (it != WEFT_INT32 && it != WEFT_INT64)
    return c.Fail("indices have dtype %s; they must be int32 or int64",
                  weft_dtype_name(it));
  SetType(c, "Tindices", it);
  if (c.input_dtypes[2] != c.input_dtypes[0])
    return c.Fail("grad is %s but params %s",
                  weft_dtype_name(c.input_dtypes[0]),
                  weft_dtype_name(c.input_dtypes[2]));
  return ProduceLike(c, 2);
}

// f(a, b) element by element over two inputs of one shape and dtype.
OpDef SameShapeOp(const char* name, std::vector<std::string> inputs,
                  const char* summary) {
  OpDef d = LikeOp(name, std::move(inputs), kFloatTypes, summary);
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& a = c.input_shapes[0];
    const ShapeInfo& b = c.input_shapes[1];
    ShapeInfo out = a.known_rank() ? a : b;
    if (a.known_rank() && b.known_rank()) {
      bool same = a.rank == b.rank;
      for (int32_t i = 0; same && i < a.rank; ++i) {
        same = a.dims[i] < 0 || b.dims[i] < 0 || a.dims[i] == b.dims[i];
        if (out.dims[i] < 0) out.dims[i] = b.dims[i];
      }
      if (!same)
        return c.Fail("inputs %s and %s must have the same shape",
                      a.ToString().c_str(), b.ToString().c_str());
    }
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {std::move(out)};
    return nullptr;
  };
  return d;
}

}  // namespace

void RegisterElementwiseArrayGradientOps(OpRegistry* r) {
  OpDef sum = LikeOp("SumToShapeOf", {"x", "like"}, kFloatTypes,
                     "x summed to like's run-time shape (the gradient of "
                     "broadcasting and of Tile): dims align from the right, "
                     "x's extra leading dims are summed away, and each dim "
                     "of x must be a multiple of like's (x's element i adds "
                     "into i mod like's dim).");
  sum.infer = InferSumToShapeOf;
  r->Add(std::move(sum));

  OpDef reshape = LikeOp("ReshapeLike", {"x", "like"}, kAllTypes,
                         "x viewed with like's run-time shape (same element "
                         "count): no copy.");
  reshape.infer = InferReshapeLike;
  r->Add(std::move(reshape));

  AttrDef begin{"begin", AttrType::kIntList, true, {}};
  OpDef slice = LikeOp("SliceGrad", {"grad", "like"}, kAllTypes,
                       "Zeros of like's run-time shape with grad placed at "
                       "begin (the gradient of Slice).");
  slice.attrs = {begin};
  slice.infer = [](InferenceContext& c) { return InferBox(c, true); };
  r->Add(std::move(slice));

  OpDef pad = LikeOp("PadGrad", {"grad", "like"}, kAllTypes,
                     "The box of grad at begin with like's run-time shape "
                     "(the gradient of Pad).");
  pad.attrs = {begin};
  pad.infer = [](InferenceContext& c) { return InferBox(c, false); };
  r->Add(std::move(pad));

  OpDef gather =
      LikeOp("GatherGrad", {"grad", "indices", "params"}, kFloatTypes,
             "Zeros of params' run-time shape, with each slice "
             "of grad added at its index along axis (the "
             "gradient of Gather).");
  gather.attrs = {AttrDef{"axis", AttrType::kInt, false, {}}};
  gather.infer = InferGatherGrad;
  r->Add(std::move(gather));

  r->Add(SameShapeOp("ReluGrad", {"grad", "x"},
                     "grad where x > 0, else 0 (x: Relu's input)."));
  r->Add(SameShapeOp("SigmoidGrad", {"y", "grad"},
                     "grad * y * (1 - y) (y: Sigmoid's output)."));
  r->Add(SameShapeOp("TanhGrad", {"y", "grad"},
                     "grad * (1 - y * y) (y: Tanh's output)."));
  r->Add(SameShapeOp("SqrtGrad", {"y", "grad"},
                     "grad * 0.5 / y (y: Sqrt's output)."));
  r->Add(SameShapeOp("RsqrtGrad", {"y", "grad"},
                     "grad * -0.5 * y^3 (y: Rsqrt's output)."));
}

}  // namespace weft
