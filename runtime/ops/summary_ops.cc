// TensorBoard's summary ops (weft/summary.h): each outputs a serialized
// `Summary` protocol buffer as a uint8 vector in host memory, which a
// program fetches and hands to weft_summary_writer_add_summary.
//
//   ScalarSummary(value)          one number of a real dtype (or bool)
//   HistogramSummary(values)      the distribution of a tensor's values
//   ImageSummary(images)          [N, H, W, C] uint8 or float32 in [0, 1],
//                                 the first `max_images` as PNG
//   TextSummary(text)             a uint8 vector of UTF-8 text
//   MergeSummary(summaries...)    their values in one Summary
//
// Runtime ops: the values are read into host memory through the run's
// copies (from any device), and the outputs are host memory wherever the
// node is placed (OpDef::host_outputs).
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "ops/runtime_op.h"
#include "summary/summary.h"
#include "tensor/buffer.h"
#include "tf_summary.pb.h"

namespace weft {
namespace {

const std::string& Tag(RuntimeOpContext* ctx) {
  static const std::string empty;
  const AttrValue* a = FindAttr(ctx->node()->attrs, "tag");
  return a != nullptr ? a->s : empty;
}

// Input `i` copied into host memory.
weft_status* InputBytes(RuntimeOpContext* ctx, int32_t i,
                        std::vector<char>* out) {
  const TensorValue& v = ctx->input(i);
  out->resize(v.byte_size());
  return out->empty() ? nullptr
                      : ctx->ReadToHost(v, out->data(), out->size());
}

// Output 0: `s` serialized, as a uint8 vector in host memory.
weft_status* SetSummary(RuntimeOpContext* ctx, const tf::Summary& s) {
  TensorValue out;
  out.dtype = WEFT_UINT8;
  const size_t size = s.ByteSizeLong();
  const int64_t n = static_cast<int64_t>(size);
  out.dims = Dims(&n, 1);
  if (size > static_cast<size_t>(INT32_MAX))
    return Errorf(WEFT_RESOURCE_EXHAUSTED, "%s: a summary of %zu bytes; "
                  "protocol buffers hold at most 2 GiB",
                  NodeWhere(ctx->node()).c_str(), size);
  if (n > 0) {
    out.buffer = AllocateHostBuffer(size, false);
    if (!out.buffer)
      return Errorf(WEFT_RESOURCE_EXHAUSTED, "%s: out of memory for a "
                    "summary of %zu bytes", NodeWhere(ctx->node()).c_str(),
                    size);
    s.SerializeToArray(out.host_data(), static_cast<int>(size));
  }
  ctx->set_output(0, std::move(out));
  return nullptr;
}

weft_status* ScalarSummary(RuntimeOpContext* ctx) {
  const TensorValue& v = ctx->input(0);
  if (v.elements() != 1)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: the value has %lld elements "
                  "(shape %s); a scalar summary takes one",
                  NodeWhere(ctx->node()).c_str(),
                  static_cast<long long>(v.elements()),
                  v.dims.ToString().c_str());
  std::vector<char> bytes;
  WEFT_RETURN_IF_ERROR(InputBytes(ctx, 0, &bytes));
  tf::Summary s;
  summary::Scalar(Tag(ctx), summary::ElementAsDouble(v.dtype, bytes.data(), 0),
                  &s);
  return SetSummary(ctx, s);
}

weft_status* HistogramSummary(RuntimeOpContext* ctx) {
  const TensorValue& v = ctx->input(0);
  std::vector<char> bytes;
  WEFT_RETURN_IF_ERROR(InputBytes(ctx, 0, &bytes));
  tf::Summary s;
  WEFT_RETURN_IF_ERROR(Annotate(
      summary::Histogram(Tag(ctx), v.dtype, bytes.data(), v.elements(), &s),
      NodeWhere(ctx->node())));
  return SetSummary(ctx, s);
}

weft_status* ImageSummary(RuntimeOpContext* ctx) {
  const TensorValue& v = ctx->input(0);
  const AttrValue* max = FindAttr(ctx->node()->attrs, "max_images");
  std::vector<char> bytes;
  WEFT_RETURN_IF_ERROR(InputBytes(ctx, 0, &bytes));
  tf::Summary s;
  WEFT_RETURN_IF_ERROR(Annotate(
      summary::Images(Tag(ctx), v.dtype, v.dims, bytes.data(),
                      max != nullptr ? max->i : 3, &s),
      NodeWhere(ctx->node())));
  return SetSummary(ctx, s);
}

weft_status* TextSummary(RuntimeOpContext* ctx) {
  std::vector<char> bytes;
  WEFT_RETURN_IF_ERROR(InputBytes(ctx, 0, &bytes));
  tf::Summary s;
  summary::Text(Tag(ctx), std::string(bytes.begin(), bytes.end()), &s);
  return SetSummary(ctx, s);
}

weft_status* MergeSummary(RuntimeOpContext* ctx) {
  tf::Summary merged;
  for (int32_t i = 0; i < ctx->num_inputs(); ++i) {
    std::vector<char> bytes;
    WEFT_RETURN_IF_ERROR(InputBytes(ctx, i, &bytes));
    tf::Summary part;
    WEFT_RETURN_IF_ERROR(summary::ParseSummary(
        bytes.data(), bytes.size(),
        NodeWhere(ctx->node()) + " input " + std::to_string(i), &part));
    merged.MergeFrom(part);
  }
  return SetSummary(ctx, merged);
}

// Output: a uint8 vector of unknown length.
void SetBytesOutput(InferenceContext& c) {
  c.output_dtypes = {WEFT_UINT8};
  ShapeInfo s;
  s.rank = 1;
  s.dims = {-1};
  c.output_shapes = {std::move(s)};
}

weft_status* CheckTagAttr(InferenceContext& c) {
  const AttrValue* tag = c.attr("tag");
  weft_status* st = summary::CheckTag(tag != nullptr ? tag->s : "",
                                      "attribute tag");
  if (st == nullptr) return nullptr;
  std::string why = weft_status_message(st);
  weft_status_destroy(st);
  return c.Fail("%s", why.c_str());
}

weft_status* InferValue(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(CheckTagAttr(c));
  if (!summary::IsSummarizable(c.input_dtypes[0]))
    return c.Fail("input must be a real number or bool, got %s",
                  weft_dtype_name(c.input_dtypes[0]));
  if (c.op == "ScalarSummary") {
    const ShapeInfo& in = c.input_shapes[0];
    int64_t n = 1;
    for (int64_t d : in.dims) n = d < 0 || n < 0 ? -1 : n * d;
    if (in.known_rank() && n >= 0 && n != 1)
      return c.Fail("the value must have one element, got shape %s",
                    in.ToString().c_str());
  }
  SetBytesOutput(c);
  return nullptr;
}

weft_status* InferImage(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(CheckTagAttr(c));
  const weft_dtype t = c.input_dtypes[0];
  if (t != WEFT_UINT8 && t != WEFT_FLOAT32)
    return c.Fail("images must be uint8 or float32, got %s",
                  weft_dtype_name(t));
  const ShapeInfo& in = c.input_shapes[0];
  if (in.known_rank() && in.rank != 4)
    return c.Fail("images must be [N, H, W, C], got shape %s",
                  in.ToString().c_str());
  if (in.known_rank() && in.dims[3] >= 0 && (in.dims[3] < 1 || in.dims[3] > 4))
    return c.Fail("images must have 1, 2, 3 or 4 channels, got %lld",
                  static_cast<long long>(in.dims[3]));
  const AttrValue* max = c.attr("max_images");
  if (max != nullptr && max->i < 1)
    return c.Fail("attribute max_images must be at least 1, got %lld",
                  static_cast<long long>(max->i));
  SetBytesOutput(c);
  return nullptr;
}

// Inputs that must already be bytes: TextSummary's text, MergeSummary's
// summaries.
weft_status* InferBytes(InferenceContext& c) {
  if (c.op == "TextSummary") WEFT_RETURN_IF_ERROR(CheckTagAttr(c));
  for (size_t i = 0; i < c.input_dtypes.size(); ++i) {
    if (c.input_dtypes[i] != WEFT_UINT8)
      return c.Fail("input %zu must be uint8 (bytes), got %s", i,
                    weft_dtype_name(c.input_dtypes[i]));
    const ShapeInfo& in = c.input_shapes[i];
    if (in.known_rank() && in.rank != 1)
      return c.Fail("input %zu must be a vector of bytes, got shape %s", i,
                    in.ToString().c_str());
  }
  SetBytesOutput(c);
  return nullptr;
}

// A summary op: attribute `tag` (but MergeSummary), one output of bytes
// in host memory.
OpDef SummaryOp(const char* name, std::vector<std::string> inputs,
                RuntimeOpFn fn,
                std::function<weft_status*(InferenceContext&)> infer,
                const char* summary_text) {
  OpDef d = RuntimeOp(name, std::move(inputs), fn, summary_text);
  d.attrs = {Required("tag", AttrType::kString)};
  d.infer = std::move(infer);
  d.host_outputs = true;
  d.outputs_doc = "summary: a serialized Summary protocol buffer (uint8)";
  return d;
}

}  // namespace

void RegisterSummaryOps(OpRegistry* r) {
  r->Add(SummaryOp("ScalarSummary", {"value"}, ScalarSummary, InferValue,
                   "A scalar for TensorBoard under attribute `tag`."));
  r->Add(SummaryOp("HistogramSummary", {"values"}, HistogramSummary,
                   InferValue,
                   "The histogram of a tensor's values for TensorBoard under "
                   "`tag` (NaN or infinite values fail)."));
  OpDef image = SummaryOp("ImageSummary", {"images"}, ImageSummary, InferImage,
                          "Images [N, H, W, C] (uint8, or float32 in [0, 1]) "
                          "for TensorBoard, the first `max_images` as PNG.");
  image.attrs.push_back(Optional("max_images", AttrType::kInt, IntValue(3)));
  r->Add(std::move(image));
  r->Add(SummaryOp("TextSummary", {"text"}, TextSummary, InferBytes,
                   "UTF-8 text (a uint8 vector) for TensorBoard's text "
                   "dashboard under `tag`."));
  OpDef merge = SummaryOp("MergeSummary", {"summaries"}, MergeSummary,
                          InferBytes,
                          "The values of several summaries as one summary.");
  merge.attrs.clear();
  merge.variadic = true;
  r->Add(std::move(merge));
}

}  // namespace weft
