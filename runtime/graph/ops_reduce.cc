// Reductions over axes.
#include <algorithm>

#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {

// Normalises the `axes` attribute of a reduction against `rank` (which may be
// unknown, -1).  Absent means every axis.
static weft_status* ReductionAxes(const InferenceContext& c, int32_t rank,
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

static OpDef Reduction(const char* name, const std::vector<weft_dtype>& types,
                       const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x"};
  d.type_attr = "T";
  d.allowed_types = types;
  AttrValue no;
  no.type = AttrType::kBool;
  d.attrs = {AttrDef{"axes", AttrType::kIntList, false, {}, false},
             AttrDef{"keep_dims", AttrType::kBool, false, no}};
  d.summary = summary;
  d.infer = [](InferenceContext& c) -> weft_status* {
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

void RegisterReduceOps(OpRegistry* r) {
  r->Add(Reduction("Sum", kNumericTypes, "Sum over axes."));
  r->Add(Reduction("Mean", kNumericTypes, "Mean over axes."));
}

}  // namespace weft
