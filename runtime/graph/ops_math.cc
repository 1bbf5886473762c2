// Element-wise arithmetic, reductions, matrix products and casts.
#include <algorithm>

#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {
namespace {

OpDef Binary(const char* name, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x", "y"};
  d.type_attr = "T";
  d.allowed_types = kNumericTypes;
  d.summary = summary;
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    ShapeInfo out;
    WEFT_RETURN_IF_ERROR(
        BroadcastShapes(c, c.input_shapes[0], c.input_shapes[1], &out));
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {std::move(out)};
    return nullptr;
  };
  return d;
}

}  // namespace

OpDef UnaryOp(const char* name, const std::vector<weft_dtype>& types,
              const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"x"};
  d.type_attr = "T";
  d.allowed_types = types;
  d.summary = summary;
  d.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {c.input_shapes[0]};
    return nullptr;
  };
  return d;
}

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

void RegisterMathOps(OpRegistry* r) {
  r->Add(Binary("Add", "x + y with broadcasting."));
  r->Add(Binary("Sub", "x - y with broadcasting."));
  r->Add(Binary("Mul", "x * y with broadcasting."));
  r->Add(Binary("Div", "x / y with broadcasting; integers truncate."));
  r->Add(UnaryOp("Neg", kNumericTypes, "-x."));
  r->Add(UnaryOp("Exp", kFloatTypes, "e^x."));
  r->Add(UnaryOp("Log", kFloatTypes, "Natural logarithm."));
  r->Add(UnaryOp("Identity", kAllTypes, "x, without copying."));
  r->Add(Reduction("Sum", kNumericTypes, "Sum over axes."));
  r->Add(Reduction("Mean", kNumericTypes, "Mean over axes."));
  {
    OpDef d;
    d.name = "MatMul";
    d.input_names = {"a", "b"};
    d.type_attr = "T";
    d.allowed_types = kNumericTypes;
    AttrValue no;
    no.type = AttrType::kBool;
    d.attrs = {AttrDef{"transpose_a", AttrType::kBool, false, no},
               AttrDef{"transpose_b", AttrType::kBool, false, no}};
    d.summary = "Matrix product of rank-2 a and b.";
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
      const ShapeInfo& a = c.input_shapes[0];
      const ShapeInfo& b = c.input_shapes[1];
      if ((a.known_rank() && a.rank != 2) || (b.known_rank() && b.rank != 2))
        return c.Fail("MatMul needs rank-2 inputs, got %s and %s",
                      a.ToString().c_str(), b.ToString().c_str());
      bool ta = c.attr("transpose_a")->i != 0;
      bool tb = c.attr("transpose_b")->i != 0;
      int64_t m = a.known_rank() ? a.dims[ta ? 1 : 0] : -1;
      int64_t ka = a.known_rank() ? a.dims[ta ? 0 : 1] : -1;
      int64_t kb = b.known_rank() ? b.dims[tb ? 1 : 0] : -1;
      int64_t n = b.known_rank() ? b.dims[tb ? 0 : 1] : -1;
      if (ka >= 0 && kb >= 0 && ka != kb)
        return c.Fail("inner dimensions differ: a is %s%s, b is %s%s "
                      "(%lld vs %lld)", a.ToString().c_str(),
                      ta ? " transposed" : "", b.ToString().c_str(),
                      tb ? " transposed" : "", static_cast<long long>(ka),
                      static_cast<long long>(kb));
      c.output_dtypes = {c.input_dtypes[0]};
      c.output_shapes = {ShapeInfo::Of({m, n})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d;
    d.name = "Cast";
    d.input_names = {"x"};
    d.type_attr = "SrcT";
    d.allowed_types = kAllTypes;
    d.attrs = {AttrDef{"DstT", AttrType::kDtype, true, {}}};
    d.summary = "Converts x to DstT.";
    d.infer = [](InferenceContext& c) -> weft_status* {
      auto dst = static_cast<weft_dtype>(c.attr("DstT")->i);
      if (weft_dtype_size(dst) == 0)
        return c.Fail("attribute DstT has invalid value %d",
                      static_cast<int>(dst));
      AttrValue v;
      v.type = AttrType::kDtype;
      v.i = c.input_dtypes[0];
      SetAttr(c.attrs, "SrcT", v);
      c.output_dtypes = {dst};
      c.output_shapes = {c.input_shapes[0]};
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
