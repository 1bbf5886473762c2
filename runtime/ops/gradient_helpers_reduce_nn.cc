// Ops that gradients of the reduce, nn and linalg families build.
//
// SumGrad, MeanGrad, ProdGrad(grad, x): spread the gradient of
//   Sum/Mean/Prod(x, axes, keep_dims) back over x's shape (x is read for its
//   run-time shape; ProdGrad also for its values).  Same attributes as the
//   reduction.
// Conv2DBackpropInput(filter, out_backprop) attr input_sizes: the gradient
//   of Conv2D with respect to its input.  Conv2DBackpropFilter(input,
//   out_backprop) attr filter_sizes: with respect to its filter.  Both take
//   Conv2D's strides, padding, dilations and data_format.
// MaxPoolGrad(orig_input, grad), AvgPoolGrad(grad) attr input_sizes: the
//   gradients of the pools, with their ksize, strides, padding, data_format.
//   MaxPoolReluGrad(orig_input, grad): MaxPoolGrad and ReluGrad fused.
//
// Sizes are attributes, as every structural parameter is; the batch (dim 0)
// and channel (dim 3) entries of input_sizes may be -1, taken at run time
// from out_backprop / grad and the filter, so that a graph with an unknown
// batch gets its gradients.  Height and width must be known: with strides
// above 1 several input sizes give the same output size.
#include <string>
#include <vector>

#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"

namespace weft {
namespace {

OpDef GradOp(const char* name, std::vector<std::string> inputs,
             std::function<weft_status*(InferenceContext&)> infer,
             const char* summary) {
  return TypedOp(name, std::move(inputs), kFloatTypes, std::move(infer),
                 summary);
}

// ---- Reduction gradients ---------------------------------------------------

weft_status* InferReductionGrad(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  const ShapeInfo& g = c.input_shapes[0];
  const ShapeInfo& x = c.input_shapes[1];
  const AttrValue* axes = c.attr("axes");
  const bool keep = c.attr("keep_dims")->i != 0;
  if (x.known_rank()) {
    std::vector<bool> reduce(x.rank, axes == nullptr);
    if (axes != nullptr)
      for (int64_t a : axes->ints) {
        const int64_t ax = a < 0 ? a + x.rank : a;
        if (ax < 0 || ax >= x.rank || reduce[ax])
          return c.Fail("axis %lld is out of range or repeated for x %s",
                        static_cast<long long>(a), x.ToString().c_str());
        reduce[ax] = true;
      }
    int32_t kept = 0;
    for (bool r : reduce) kept += !r;
    const int32_t want = keep ? x.rank : kept;
    if (g.known_rank() && g.rank != want)
      return c.Fail("grad %s does not have the reduced shape of x %s "
                    "(rank %d expected)", g.ToString().c_str(),
                    x.ToString().c_str(), want);
  }
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {x};
  return nullptr;
}

OpDef ReductionGrad(const char* name, const char* summary) {
  OpDef d = GradOp(name, {"grad", "x"}, InferReductionGrad, summary);
  d.attrs = {AttrDef{"axes", AttrType::kIntList, false, {}, false},
             AttrDef{"keep_dims", AttrType::kBool, false, BoolValue(false)}};
  return d;
}

// ---- Convolution and pooling gradients ----------------------------------

// A 4-entry [N, H, W, C] sizes attribute: entries in `may_be_unknown`
// (a bit per dim) may be -1, the others must be >= 0.
weft_status* ReadSizes(const InferenceContext& c, const char* name,
                       unsigned may_be_unknown, std::vector<int64_t>* out) {
  const std::vector<int64_t>& v = c.attr(name)->ints;
  bool ok = v.size() == 4;
  for (size_t i = 0; ok && i < 4; ++i)
    ok = v[i] >= 0 || (v[i] == -1 && ((may_be_unknown >> i) & 1u));
  if (!ok) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return c.Fail("attribute %s must be 4 sizes%s, got [%s]", name,
                  may_be_unknown ? " (-1 allowed for the batch and channels "
                                   "only: height and width must be known)"
                                 : "",
                  s.c_str());
  }
  const std::string what = std::string("attribute ") + name + " =";
  int64_t count = 0;
  WEFT_RETURN_IF_ERROR(CheckedCount(c, v, what.c_str(), &count));
  *out = v;
  return nullptr;
}

// Fills an unknown (-1) size from a tensor's dim, when that is known.
void ResolveDim(std::vector<int64_t>* sizes, int i, const ShapeInfo& from,
                int j) {
  if ((*sizes)[i] < 0 && from.known_rank() && from.rank > j)
    (*sizes)[i] = from.dims[j];
}

weft_status* CheckPadding(const InferenceContext& c) {
  const std::string& p = c.attr("padding")->s;
  if (p == "SAME" || p == "VALID") return nullptr;
  return c.Fail("padding '%s' is not one of \"SAME\", \"VALID\"", p.c_str());
}

// The forward op's window attributes, checked as its shape function checks
// them, so that the kernels never see what the forward op would refuse:
// strides and ksize (pooling) or dilations, with the dilated extent of a
// filter of kh x kw (-1: not known yet) within bounds.
weft_status* CheckWindows(const InferenceContext& c, bool pooling,
                          int64_t kh = -1, int64_t kw = -1) {
  int64_t sh, sw, h, w, unused;
  WEFT_RETURN_IF_ERROR(ReadWindowAttr(c, "strides", &sh, &sw));
  WEFT_RETURN_IF_ERROR(
      ReadWindowAttr(c, pooling ? "ksize" : "dilations", &h, &w));
  if (pooling) return nullptr;
  WEFT_RETURN_IF_ERROR(
      WindowedSize(c, "height", "dilations", -1, kh, h, sh, false, &unused));
  return WindowedSize(c, "width", "dilations", -1, kw, w, sw, false, &unused);
}

// Dim `i` of input `input`, -1 when unknown.
int64_t InputDim(const InferenceContext& c, int input, int i) {
  const ShapeInfo& s = c.input_shapes[input];
  return s.known_rank() && s.rank > i ? s.dims[i] : -1;
}

weft_status* CheckRank4(const InferenceContext& c, int i) {
  const ShapeInfo& s = c.input_shapes[i];
  if (!s.known_rank() || s.rank == 4) return nullptr;
  return c.Fail("input %d must have rank 4, got %s", i, s.ToString().c_str());
}

weft_status* InferConvBackpropInput(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckPadding(c));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 0));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 1));
  std::vector<int64_t> sizes;
  WEFT_RETURN_IF_ERROR(ReadSizes(c, "input_sizes", 0x9u, &sizes));
  WEFT_RETURN_IF_ERROR(
      CheckWindows(c, false, InputDim(c, 0, 0), InputDim(c, 0, 1)));
  ResolveDim(&sizes, 0, c.input_shapes[1], 0);
  ResolveDim(&sizes, 3, c.input_shapes[0], 2);
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of(std::move(sizes))};
  return nullptr;
}

weft_status* InferConvBackpropFilter(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckPadding(c));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 0));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 1));
  std::vector<int64_t> sizes;
  WEFT_RETURN_IF_ERROR(ReadSizes(c, "filter_sizes", 0, &sizes));
  WEFT_RETURN_IF_ERROR(CheckWindows(c, false, sizes[0], sizes[1]));
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of(std::move(sizes))};
  return nullptr;
}

weft_status* InferMaxPoolGrad(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckPadding(c));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 0));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 1));
  WEFT_RETURN_IF_ERROR(CheckWindows(c, true));
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {c.input_shapes[0].known_rank()
                         ? c.input_shapes[0]
                         : ShapeInfo::Of({-1, -1, -1, -1})};
  return nullptr;
}

weft_status* InferAvgPoolGrad(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckPadding(c));
  WEFT_RETURN_IF_ERROR(CheckRank4(c, 0));
  std::vector<int64_t> sizes;
  WEFT_RETURN_IF_ERROR(ReadSizes(c, "input_sizes", 0x9u, &sizes));
  WEFT_RETURN_IF_ERROR(CheckWindows(c, true));
  ResolveDim(&sizes, 0, c.input_shapes[0], 0);
  ResolveDim(&sizes, 3, c.input_shapes[0], 3);
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of(std::move(sizes))};
  return nullptr;
}

// MaxPoolGradFromWindowIndex(window_index, grad) and
// MaxPoolReluGradFromWindowIndex(orig_output, window_index, grad): the
// window index and grad (and orig_output) of one shape, the output
// input_sizes with batch and channels from them when -1.
weft_status* InferGradFromWindowIndex(InferenceContext& c) {
  const bool relu = c.input_shapes.size() == 3;
  const int index = relu ? 1 : 0;
  if (c.input_dtypes[index] != WEFT_UINT8)
    return c.Fail("window_index must be uint8, got %s",
                  weft_dtype_name(c.input_dtypes[index]));
  const int grad = index + 1;
  if (relu && c.input_dtypes[0] != c.input_dtypes[grad])
    return c.Fail("orig_output is %s, grad %s",
                  weft_dtype_name(c.input_dtypes[0]),
                  weft_dtype_name(c.input_dtypes[grad]));
  bool allowed = false;
  for (weft_dtype t : kFloatTypes) allowed |= t == c.input_dtypes[grad];
  if (!allowed)
    return c.Fail("grad must be float32 or float64, got %s",
                  weft_dtype_name(c.input_dtypes[grad]));
  // The inputs' dtypes differ, so T comes from grad alone.
  AttrValue t;
  t.type = AttrType::kDtype;
  t.i = c.input_dtypes[grad];
  SetAttr(c.attrs, "T", t);
  WEFT_RETURN_IF_ERROR(CheckPadding(c));
  for (int i = 0; i < static_cast<int>(c.input_shapes.size()); ++i)
    WEFT_RETURN_IF_ERROR(CheckRank4(c, i));
  for (int i = 0; i + 1 < static_cast<int>(c.input_shapes.size()); ++i) {
    const ShapeInfo& a = c.input_shapes[i];
    const ShapeInfo& b = c.input_shapes[i + 1];
    if (!a.known_rank() || !b.known_rank()) continue;
    for (int d = 0; d < 4; ++d)
      if (a.dims[d] >= 0 && b.dims[d] >= 0 && a.dims[d] != b.dims[d])
        return c.Fail("inputs %d and %d differ in shape: %s and %s", i, i + 1,
                      a.ToString().c_str(), b.ToString().c_str());
  }
  std::vector<int64_t> sizes;
  WEFT_RETURN_IF_ERROR(ReadSizes(c, "input_sizes", 0x9u, &sizes));
  WEFT_RETURN_IF_ERROR(CheckWindows(c, true));
  WEFT_RETURN_IF_ERROR(CheckWindowIndexFits(c));
  ResolveDim(&sizes, 0, c.input_shapes[grad], 0);
  ResolveDim(&sizes, 3, c.input_shapes[grad], 3);
  const int64_t channels = sizes[3];
  c.output_dtypes = {c.input_dtypes[grad]};
  c.output_shapes = {ShapeInfo::Of(std::move(sizes))};
  if (relu) {
    c.output_dtypes.push_back(c.input_dtypes[grad]);
    c.output_shapes.push_back(ShapeInfo::Of({channels}));
  }
  return nullptr;
}

std::vector<AttrDef> ConvAttrs(const char* sizes) {
  return {Required(sizes, AttrType::kIntList),
          Required("strides", AttrType::kIntList),
          Required("padding", AttrType::kString),
          AttrDef{"dilations", AttrType::kIntList, false,
                  IntListValue({1, 1, 1, 1})},
          AttrDef{"data_format", AttrType::kString, false,
                  StringValue("NHWC")}};
}

std::vector<AttrDef> PoolAttrs() {
  return {Required("ksize", AttrType::kIntList),
          Required("strides", AttrType::kIntList),
          Required("padding", AttrType::kString),
          AttrDef{"data_format", AttrType::kString, false,
                  StringValue("NHWC")}};
}

}  // namespace

void RegisterReduceNnGradientOps(OpRegistry* r) {
  r->Add(ReductionGrad("SumGrad",
                       "grad of Sum(x, axes, keep_dims) spread over x's "
                       "shape: each element gets its reduction's gradient."));
  r->Add(ReductionGrad("MeanGrad",
                       "grad of Mean(x, axes, keep_dims) spread over x's "
                       "shape, divided by the reduction's element count."));
  r->Add(ReductionGrad("ProdGrad",
                       "Gradient of Prod(x, axes, keep_dims): grad times the "
                       "product of the other elements (zeros handled "
                       "exactly)."));
  {
    OpDef d = GradOp("Conv2DBackpropInput", {"filter", "out_backprop"},
                     InferConvBackpropInput,
                     "Gradient of Conv2D with respect to its input, of "
                     "shape input_sizes (-1 batch/channels: from the "
                     "operands).");
    d.attrs = ConvAttrs("input_sizes");
    r->Add(std::move(d));
  }
  {
    OpDef d = GradOp("Conv2DBackpropFilter", {"input", "out_backprop"},
                     InferConvBackpropFilter,
                     "Gradient of Conv2D with respect to its filter, of "
                     "shape filter_sizes.");
    d.attrs = ConvAttrs("filter_sizes");
    r->Add(std::move(d));
  }
  {
    OpDef d = GradOp("MaxPoolGrad", {"orig_input", "grad"}, InferMaxPoolGrad,
                     "Gradient of MaxPool: each window's gradient goes to "
                     "its maximum (the first in row-major order on ties, "
                     "the first NaN if it holds one).");
    d.attrs = PoolAttrs();
    r->Add(std::move(d));
  }
  {
    // What the planner makes of ReluGrad(MaxPoolGrad(x, g), x) when
    // nothing else reads the MaxPoolGrad (fuse.cc); also usable directly.
    OpDef d = GradOp("MaxPoolReluGrad", {"orig_input", "grad"},
                     InferMaxPoolGrad,
                     "ReluGrad(MaxPoolGrad(orig_input, grad), orig_input) "
                     "in one kernel: each window's gradient goes to its "
                     "maximum (as MaxPoolGrad) where that maximum is > 0.");
    d.attrs = PoolAttrs();
    r->Add(std::move(d));
  }
  // What the planner makes of MaxPoolGrad (and MaxPoolReluGrad) when the
  // forward MaxPool can give its window index (fuse.cc).
  auto from_index = [r](const char* name, std::vector<std::string> inputs,
                        const char* summary) {
    OpDef d = GradOp(name, std::move(inputs), InferGradFromWindowIndex,
                     summary);
    d.num_outputs = d.input_names.size() == 3 ? 2 : 1;
    d.attrs = PoolAttrs();
    d.attrs.insert(d.attrs.begin(),
                   Required("input_sizes", AttrType::kIntList));
    r->Add(std::move(d));
  };
  from_index("MaxPoolGradFromWindowIndex", {"window_index", "grad"},
             "Gradient of MaxPool from MaxPoolWithWindowIndex's "
             "window_index: each window's gradient goes to the element the "
             "index names.");
  from_index("MaxPoolReluGradFromWindowIndex",
             {"orig_output", "window_index", "grad"},
             "MaxPoolReluGrad from MaxPoolWithWindowIndex's outputs: each "
             "window's gradient goes to the element the index names where "
             "orig_output (the window's maximum) is > 0 (backprop), and "
             "backprop summed over all but the channel axis "
             "(bias_backprop [C]).");
  {
    OpDef d = GradOp("AvgPoolGrad", {"grad"}, InferAvgPoolGrad,
                     "Gradient of AvgPool: each window's gradient shared "
                     "among its valid elements.");
    d.attrs = PoolAttrs();
    d.attrs.insert(d.attrs.begin(), Required("input_sizes", AttrType::kIntList));
    r->Add(std::move(d));
  }
}

}  // namespace weft
