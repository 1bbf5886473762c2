// Reductions over axes (Sum, Mean, Prod, Max, Min) and along one axis
// (ArgMax, ArgMin).
#include <algorithm>
#include <cstdint>

#include "base/status.h"
#include "ops/registry.h"

namespace weft {
namespace {

// Normalises the `axes` attribute of a reduction against `rank` (which may be
// unknown, -1).  Absent means every axis.
weft_status* ReductionAxes(const InferenceContext& c, int32_t rank,
                           std::vector<bool>* reduce, bool* all) {
  const AttrValue* axes = c.attr("axes");
  *all = axes == nullptr;
  if (rank < 0) return nullptr;
  reduce->assign(rank, *all);
  if (*all) return nullptr;
  for (int64_t a : axes->ints) {
    int64_t ax = a < 0 ? a + rank : a;
    if (ax < 0 || ax >= rank)
      return c.Fail("axis %lld is out of range for an input of rank %d",
                    static_cast<long long>(a), rank);
    if ((*reduce)[ax])
      return c.Fail("axis %lld is listed twice", static_cast<long long>(a));
    (*reduce)[ax] = true;
  }
  return nullptr;
}

// What an empty reduction (some reduced dim 0) means for the op: Sum and
// Prod have an identity, Mean has one only for floats (NaN), Max and Min
// have none.
enum class EmptyRule { kIdentity, kFloatOnly, kError };

bool IsFloat(weft_dtype t) {
  return t == WEFT_FLOAT16 || t == WEFT_BFLOAT16 || t == WEFT_FLOAT32 ||
         t == WEFT_FLOAT64;
}

// Refuses, when the shape proves it, a reduction that must produce a value
// from zero elements.  An output with no elements needs no value, so
// [0, 3] reduced over both axes fails but reduced over axis 1 does not.
weft_status* CheckEmptyReduction(const InferenceContext& c, EmptyRule rule,
                                 const ShapeInfo& in,
                                 const std::vector<bool>& reduce) {
  if (rule == EmptyRule::kIdentity) return nullptr;
  if (rule == EmptyRule::kFloatOnly && IsFloat(c.input_dtypes[0]))
    return nullptr;
  bool empty_reduction = false;
  for (int32_t i = 0; i < in.rank; ++i) {
    if (!reduce[i] && in.dims[i] <= 0) return nullptr;  // unknown or empty
    if (reduce[i] && in.dims[i] == 0) empty_reduction = true;
  }
  if (!empty_reduction) return nullptr;
  return c.Fail("%s over zero elements has no value (input %s)%s",
                c.op.c_str(), in.ToString().c_str(),
                rule == EmptyRule::kFloatOnly ? " for integer dtypes" : "");
}

OpDef Reduction(const char* name, EmptyRule rule, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x"};
  d.type_attr = "T";
  d.allowed_types = kNumericTypes;
  AttrValue no;
  no.type = AttrType::kBool;
  d.attrs = {AttrDef{"axes", AttrType::kIntList, false, {}, false},
             AttrDef{"keep_dims", AttrType::kBool, false, no}};
  d.summary = summary;
  d.infer = [rule](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    std::vector<bool> reduce;
    bool all = false;
    WEFT_RETURN_IF_ERROR(ReductionAxes(c, in.rank, &reduce, &all));
    bool keep = c.attr("keep_dims")->i != 0;
    c.output_dtypes = {c.input_dtypes[0]};
    if (!in.known_rank()) {
      // With keep_dims the rank is preserved but unknown; without it and
      // with explicit axes the output rank is unknown too.
      c.output_shapes = {all && !keep ? ShapeInfo::Of({}) : ShapeInfo::Unknown()};
      return nullptr;
    }
    WEFT_RETURN_IF_ERROR(CheckEmptyReduction(c, rule, in, reduce));
    std::vector<int64_t> dims;
    for (int32_t i = 0; i < in.rank; ++i) {
      if (!reduce[i]) dims.push_back(in.dims[i]);
      else if (keep) dims.push_back(1);
    }
    c.output_shapes = {ShapeInfo::Of(std::move(dims))};
    return nullptr;
  };
  return d;
}

OpDef ArgReduction(const char* name, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x"};
  d.type_attr = "T";
  d.allowed_types = kNumericTypes;
  AttrValue axis;
  axis.type = AttrType::kInt;
  AttrValue out_type;
  out_type.type = AttrType::kDtype;
  out_type.i = WEFT_INT64;
  d.attrs = {AttrDef{"axis", AttrType::kInt, false, axis},
             AttrDef{"output_type", AttrType::kDtype, false, out_type}};
  d.summary = summary;
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const weft_dtype out = static_cast<weft_dtype>(c.attr("output_type")->i);
    if (out != WEFT_INT32 && out != WEFT_INT64)
      return c.Fail("attribute output_type must be int32 or int64, got %s",
                    weft_dtype_name(out));
    c.output_dtypes = {out};
    const ShapeInfo& in = c.input_shapes[0];
    if (!in.known_rank()) {
      c.output_shapes = {ShapeInfo::Unknown()};
      return nullptr;
    }
    const int64_t axis = c.attr("axis")->i;
    const int64_t a = axis < 0 ? axis + in.rank : axis;
    if (a < 0 || a >= in.rank)
      return c.Fail("axis %lld is out of range for input shape %s (valid: "
                    "[%d, %d))", static_cast<long long>(axis),
                    in.ToString().c_str(), -in.rank, in.rank);
    const int64_t length = in.dims[a];
    if (length == 0)
      return c.Fail("axis %lld of input shape %s is empty: there is no "
                    "index to return", static_cast<long long>(axis),
                    in.ToString().c_str());
    if (out == WEFT_INT32 && length > INT32_MAX)
      return c.Fail("axis %lld has %lld entries, more than output_type "
                    "int32 can index", static_cast<long long>(axis),
                    static_cast<long long>(length));
    std::vector<int64_t> dims(in.dims);
    dims.erase(dims.begin() + a);
    c.output_shapes = {ShapeInfo::Of(std::move(dims))};
    return nullptr;
  };
  return d;
}

}  // namespace

void RegisterReduceOps(OpRegistry* r) {
  r->Add(Reduction("Sum", EmptyRule::kIdentity, "Sum over axes."));
  r->Add(Reduction("Mean", EmptyRule::kFloatOnly, "Mean over axes."));
  r->Add(Reduction("Prod", EmptyRule::kIdentity, "Product over axes."));
  r->Add(Reduction("Max", EmptyRule::kError,
                   "Maximum over axes; NaN if any reduced element is NaN."));
  r->Add(Reduction("Min", EmptyRule::kError,
                   "Minimum over axes; NaN if any reduced element is NaN."));
  r->Add(ArgReduction("ArgMax",
                      "Index of the largest element along axis; ties and "
                      "NaN pick the first."));
  r->Add(ArgReduction("ArgMin",
                      "Index of the smallest element along axis; ties and "
                      "NaN pick the first."));
}

}  // namespace weft
