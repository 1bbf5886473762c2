// Neural-network ops: softmax, losses, convolution, pooling, normalisation.
//
// Convolution and pooling follow TensorFlow's NHWC conventions, so that
// models and reference numbers carry over unchanged; every attribute is
// checked here, once, so that kernels on any device may trust them.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"

namespace weft {
namespace {

AttrValue DtypeValue(weft_dtype t) {
  AttrValue v;
  v.type = AttrType::kDtype;
  v.i = t;
  return v;
}

// The same dim from two sources: equal, or one of them unknown.
weft_status* MergeDim(const InferenceContext& c, int64_t a, int64_t b,
                      const char* what, const ShapeInfo& sa,
                      const ShapeInfo& sb, int64_t* out) {
  if (a >= 0 && b >= 0 && a != b)
    return c.Fail("%s differs: %lld in %s vs %lld in %s", what,
                  static_cast<long long>(a), sa.ToString().c_str(),
                  static_cast<long long>(b), sb.ToString().c_str());
  *out = a >= 0 ? a : b;
  return nullptr;
}

weft_status* CheckRank(const InferenceContext& c, const ShapeInfo& s,
                       const char* input, int32_t rank) {
  if (s.known_rank() && s.rank != rank)
    return c.Fail("%s must have rank %d, got %s", input, rank,
                  s.ToString().c_str());
  return nullptr;
}

// The last dim of a rank->=1 shape, -1 when unknown.
int64_t LastDim(const ShapeInfo& s) {
  return s.known_rank() && s.rank > 0 ? s.dims[s.rank - 1] : -1;
}

weft_status* CheckNhwc(const InferenceContext& c) {
  const std::string& f = c.attr("data_format")->s;
  if (f != "NHWC")
    return c.Fail("data_format '%s' is not supported; only \"NHWC\" is",
                  f.c_str());
  return nullptr;
}

weft_status* ReadPadding(const InferenceContext& c, bool* same) {
  const std::string& p = c.attr("padding")->s;
  if (p != "SAME" && p != "VALID")
    return c.Fail("padding '%s' is not one of \"SAME\", \"VALID\"",
                  p.c_str());
  *same = p == "SAME";
  return nullptr;
}

AttrDef DataFormatAttr() {
  return AttrDef{"data_format", AttrType::kString, false,
                 StringValue("NHWC")};
}

// ---- Shape functions ------------------------------------------------------

weft_status* InferBiasAdd(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckNhwc(c));
  const ShapeInfo& value = c.input_shapes[0];
  const ShapeInfo& bias = c.input_shapes[1];
  if (value.rank == 0)
    return c.Fail("value must have rank >= 1 (channels last), got a scalar");
  WEFT_RETURN_IF_ERROR(CheckRank(c, bias, "bias", 1));
  ShapeInfo out = value;
  int64_t channels = -1;
  WEFT_RETURN_IF_ERROR(MergeDim(c, LastDim(value), LastDim(bias),
                                "the channel count (last dim)", value, bias,
                                &channels));
  if (out.known_rank()) out.dims[out.rank - 1] = channels;
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {std::move(out)};
  return nullptr;
}

weft_status* InferLastAxisUnary(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  if (c.input_shapes[0].rank == 0)
    return c.Fail("logits must have rank >= 1, got a scalar");
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {c.input_shapes[0]};
  return nullptr;
}

// Both losses: features [B, C] → loss [B], backprop [B, C].
void SetLossOutputs(InferenceContext& c, int64_t batch, int64_t classes) {
  c.output_dtypes = {c.input_dtypes[0], c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of({batch}), ShapeInfo::Of({batch, classes})};
}

weft_status* InferSoftmaxXent(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  const ShapeInfo& f = c.input_shapes[0];
  const ShapeInfo& l = c.input_shapes[1];
  WEFT_RETURN_IF_ERROR(CheckRank(c, f, "features", 2));
  WEFT_RETURN_IF_ERROR(CheckRank(c, l, "labels", 2));
  int64_t batch = -1, classes = -1;
  WEFT_RETURN_IF_ERROR(MergeDim(c, f.known_rank() ? f.dims[0] : -1,
                                l.known_rank() ? l.dims[0] : -1,
                                "the batch size", f, l, &batch));
  WEFT_RETURN_IF_ERROR(MergeDim(c, LastDim(f), LastDim(l),
                                "the class count", f, l, &classes));
  SetLossOutputs(c, batch, classes);
  return nullptr;
}

weft_status* InferSparseSoftmaxXent(InferenceContext& c) {
  // Features and labels have different dtypes, so T is set from the
  // features alone and the labels get their own attribute.
  weft_dtype labels_type = c.input_dtypes[1];
  if (labels_type != WEFT_INT32 && labels_type != WEFT_INT64)
    return c.Fail("labels must be int32 or int64, got %s",
                  weft_dtype_name(labels_type));
  SetAttr(c.attrs, "T", DtypeValue(c.input_dtypes[0]));
  SetAttr(c.attrs, "Tlabels", DtypeValue(labels_type));
  const ShapeInfo& f = c.input_shapes[0];
  const ShapeInfo& l = c.input_shapes[1];
  WEFT_RETURN_IF_ERROR(CheckRank(c, f, "features", 2));
  WEFT_RETURN_IF_ERROR(CheckRank(c, l, "labels", 1));
  int64_t batch = -1;
  WEFT_RETURN_IF_ERROR(MergeDim(c, f.known_rank() ? f.dims[0] : -1,
                                l.known_rank() ? l.dims[0] : -1,
                                "the batch size", f, l, &batch));
  SetLossOutputs(c, batch, LastDim(f));
  return nullptr;
}

weft_status* InferConv2D(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckNhwc(c));
  int64_t sh, sw, dh, dw;
  bool same = false;  // set by the padding check before any use
  WEFT_RETURN_IF_ERROR(ReadWindowAttr(c, "strides", &sh, &sw));
  WEFT_RETURN_IF_ERROR(ReadWindowAttr(c, "dilations", &dh, &dw));
  WEFT_RETURN_IF_ERROR(ReadPadding(c, &same));
  const ShapeInfo& in = c.input_shapes[0];
  const ShapeInfo& filter = c.input_shapes[1];
  WEFT_RETURN_IF_ERROR(CheckRank(c, in, "input [N, H, W, C]", 4));
  WEFT_RETURN_IF_ERROR(CheckRank(c, filter, "filter [KH, KW, Cin, Cout]", 4));
  auto dim = [](const ShapeInfo& s, int i) {
    return s.known_rank() ? s.dims[i] : int64_t{-1};
  };
  const int64_t kh = dim(filter, 0), kw = dim(filter, 1);
  if (kh == 0 || kw == 0)
    return c.Fail("filter %s has an empty window",
                  filter.ToString().c_str());
  const int64_t cin = dim(in, 3), fin = dim(filter, 2);
  if (cin >= 0 && fin >= 0 && cin != fin)
    return c.Fail("input %s has %lld channels but filter %s expects %lld",
                  in.ToString().c_str(), static_cast<long long>(cin),
                  filter.ToString().c_str(), static_cast<long long>(fin));
  // SAME sizes do not depend on the window, so an unknown filter still
  // gives them.
  int64_t oh = -1, ow = -1;
  if (kh > 0 || same)
    WEFT_RETURN_IF_ERROR(
        WindowedSize(c, "height", "dilations", dim(in, 1), kh, dh, sh, same,
                     &oh));
  if (kw > 0 || same)
    WEFT_RETURN_IF_ERROR(
        WindowedSize(c, "width", "dilations", dim(in, 2), kw, dw, sw, same,
                     &ow));
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of({dim(in, 0), oh, ow, dim(filter, 3)})};
  return nullptr;
}

// Conv2D's and FusedConv2D's attributes.
std::vector<AttrDef> ConvAttrs() {
  return {Required("strides", AttrType::kIntList),
          Required("padding", AttrType::kString),
          AttrDef{"dilations", AttrType::kIntList, false,
                  IntListValue({1, 1, 1, 1})},
          DataFormatAttr()};
}

weft_status* InferPool(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  WEFT_RETURN_IF_ERROR(CheckNhwc(c));
  int64_t kh, kw, sh, sw;
  bool same = false;  // set by the padding check before any use
  WEFT_RETURN_IF_ERROR(ReadWindowAttr(c, "ksize", &kh, &kw));
  WEFT_RETURN_IF_ERROR(ReadWindowAttr(c, "strides", &sh, &sw));
  WEFT_RETURN_IF_ERROR(ReadPadding(c, &same));
  const ShapeInfo& in = c.input_shapes[0];
  WEFT_RETURN_IF_ERROR(CheckRank(c, in, "value [N, H, W, C]", 4));
  if (!in.known_rank()) {
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {ShapeInfo::Of({-1, -1, -1, -1})};
    return nullptr;
  }
  int64_t oh, ow;
  WEFT_RETURN_IF_ERROR(
      WindowedSize(c, "height", "ksize", in.dims[1], kh, 1, sh, same, &oh));
  WEFT_RETURN_IF_ERROR(
      WindowedSize(c, "width", "ksize", in.dims[2], kw, 1, sw, same, &ow));
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of({in.dims[0], oh, ow, in.dims[3]})};
  return nullptr;
}

weft_status* InferBatchNorm(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  static const char* const kNames[] = {"t", "m", "v", "beta", "gamma"};
  const ShapeInfo& t = c.input_shapes[0];
  if (t.rank == 0)
    return c.Fail("t must have rank >= 1 (channels last), got a scalar");
  int64_t channels = LastDim(t);
  for (int i = 1; i < 5; ++i) {
    const ShapeInfo& p = c.input_shapes[i];
    WEFT_RETURN_IF_ERROR(CheckRank(c, p, kNames[i], 1));
    char what[64];
    std::snprintf(what, sizeof what, "the channel count of t and %s",
                  kNames[i]);
    WEFT_RETURN_IF_ERROR(
        MergeDim(c, channels, LastDim(p), what, t, p, &channels));
  }
  if (c.attr("variance_epsilon")->f < 0)
    return c.Fail("variance_epsilon must be >= 0, got %g",
                  c.attr("variance_epsilon")->f);
  ShapeInfo out = t;
  if (out.known_rank()) out.dims[out.rank - 1] = channels;
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {std::move(out)};
  return nullptr;
}

OpDef PoolOp(const char* name, const char* summary) {
  OpDef d = TypedOp(name, {"value"}, kFloatTypes, InferPool, summary);
  d.attrs = {Required("ksize", AttrType::kIntList),
             Required("strides", AttrType::kIntList),
             Required("padding", AttrType::kString), DataFormatAttr()};
  return d;
}

}  // namespace

void RegisterNnOps(OpRegistry* r) {
  {
    OpDef d = TypedOp("BiasAdd", {"value", "bias"}, kNumericTypes,
                     InferBiasAdd, "value + bias along the last axis.");
    d.attrs = {DataFormatAttr()};
    r->Add(std::move(d));
  }
  r->Add(TypedOp("Softmax", {"logits"}, kFloatTypes, InferLastAxisUnary,
                "Softmax over the last axis."));
  r->Add(TypedOp("LogSoftmax", {"logits"}, kFloatTypes, InferLastAxisUnary,
                "Log of the softmax over the last axis."));
  {
    OpDef d = TypedOp("SoftmaxCrossEntropyWithLogits", {"features", "labels"},
                     kFloatTypes, InferSoftmaxXent,
                     "Cross-entropy of softmax(features) against label "
                     "distributions: loss [B], backprop [B, C].");
    d.num_outputs = 2;
    r->Add(std::move(d));
  }
  {
    OpDef d = TypedOp("SparseSoftmaxCrossEntropyWithLogits",
                     {"features", "labels"}, kFloatTypes,
                     InferSparseSoftmaxXent,
                     "Cross-entropy of softmax(features) against class "
                     "indices: loss [B], backprop [B, C].");
    d.num_outputs = 2;
    // Set by the shape function from the labels' dtype, like T.
    d.attrs = {AttrDef{"Tlabels", AttrType::kDtype, false, {}, false}};
    r->Add(std::move(d));
  }
  {
    OpDef d = TypedOp("Conv2D", {"input", "filter"}, kFloatTypes, InferConv2D,
                     "2-D convolution, NHWC input and HWIO filter.");
    d.attrs = ConvAttrs();
    r->Add(std::move(d));
  }
  {
    // What the planner makes of Conv2D -> BiasAdd -> Relu when nothing else
    // reads the first two (plan.cc's fusion pass); also usable directly.
    OpDef d = TypedOp(
        "FusedConv2D", {"input", "filter", "bias"}, kFloatTypes,
        [](InferenceContext& c) -> weft_status* {
          const ShapeInfo bias = c.input_shapes[2];
          const weft_dtype bias_type = c.input_dtypes[2];
          c.input_shapes.pop_back();
          c.input_dtypes.pop_back();
          WEFT_RETURN_IF_ERROR(InferConv2D(c));
          if (bias_type != c.output_dtypes[0])
            return c.Fail("bias is %s, the convolution %s",
                          weft_dtype_name(bias_type),
                          weft_dtype_name(c.output_dtypes[0]));
          const ShapeInfo& out = c.output_shapes[0];
          if (bias.known_rank() &&
              (bias.rank != 1 || (bias.dims[0] >= 0 && out.known_rank() &&
                                  out.dims[3] >= 0 &&
                                  bias.dims[0] != out.dims[3])))
            return c.Fail("bias %s is not [Cout] for output %s",
                          bias.ToString().c_str(), out.ToString().c_str());
          return nullptr;
        },
        "relu(conv2d(input, filter) + bias): Conv2D, BiasAdd and Relu in "
        "one kernel.");
    d.attrs = ConvAttrs();
    r->Add(std::move(d));
  }
  r->Add(PoolOp("MaxPool",
                "Maximum over sliding windows (NHWC); NaN if the window "
                "holds one."));
  {
    // What the planner makes of a MaxPool whose gradient it computes from
    // the window index instead of the pool's input (fuse.cc): the
    // gradient then never reads the (larger) input again.
    OpDef d = PoolOp(
        "MaxPoolWithWindowIndex",
        "MaxPool, and for each output element the position (row-major in "
        "the unclipped ksize window) of the element it is (the first "
        "maximum; the first NaN), as uint8: windows of at most 256 "
        "elements.  MaxPoolGradFromWindowIndex reads it.");
    d.num_outputs = 2;
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(InferPool(c));
      WEFT_RETURN_IF_ERROR(CheckWindowIndexFits(c));
      c.output_dtypes.push_back(WEFT_UINT8);
      c.output_shapes.push_back(c.output_shapes[0]);
      return nullptr;
    };
    r->Add(std::move(d));
  }
  r->Add(PoolOp("AvgPool", "Mean over sliding windows (NHWC); SAME padding "
                           "averages the valid elements only."));
  {
    OpDef d = TypedOp("BatchNormWithGlobalNormalization",
                     {"t", "m", "v", "beta", "gamma"}, kFloatTypes,
                     InferBatchNorm,
                     "(t - m) / sqrt(v + variance_epsilon) * gamma + beta, "
                     "per channel (last axis).");
    AttrValue no;
    no.type = AttrType::kBool;
    // No default epsilon: its value changes results, so the model says it.
    d.attrs = {Required("variance_epsilon", AttrType::kFloat),
               AttrDef{"scale_after_normalization", AttrType::kBool, false,
                       no}};
    r->Add(std::move(d));
  }
}

}  // namespace weft
