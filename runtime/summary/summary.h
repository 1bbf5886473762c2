// TensorBoard summaries: the `Summary` protos (tf_summary.proto) that the
// summary ops output serialized and the summary writer writes inside its
// events, made from values in host memory.  One function per kind, each
// appending one value to a Summary (an image summary: one value per
// image).  Serialized Summary messages concatenate into one holding all
// their values (protobuf's rule for repeated fields), which is how
// MergeSummary merges them.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/dims.h"
#include "weft/dtype.h"
#include "weft/status.h"

namespace weft {
namespace tf {
class Summary;
}  // namespace tf

namespace summary {

// A tag TensorBoard can show: non-empty, at most 1024 bytes, valid UTF-8
// (its reader decodes tags as text), no control characters.  `where`
// prefixes the message.
weft_status* CheckTag(const std::string& tag, const std::string& where);

// The real dtypes a value summarized as a number may have.
bool IsSummarizable(weft_dtype dtype);
// Element `i` of `data` (of a summarizable dtype) as a double.
double ElementAsDouble(weft_dtype dtype, const void* data, int64_t i);

// A scalar, shown on TensorBoard's scalar dashboard.
void Scalar(const std::string& tag, double value, tf::Summary* out);

// The distribution of `n` values of `dtype` as a histogram over
// exponentially growing buckets (one bucket per 10% from 1e-12 to 1e20,
// mirrored for negative values, plus zero), runs of empty buckets merged.
// A NaN or infinite value is INVALID_ARGUMENT (TensorBoard cannot draw it).
weft_status* Histogram(const std::string& tag, weft_dtype dtype,
                       const void* data, int64_t n, tf::Summary* out);

// Images of shape [N, H, W, C] or [H, W, C], C 1 (grey), 2 (grey + alpha),
// 3 (RGB) or 4 (RGBA), uint8 as they are, float32 in [0, 1] (scaled by
// 255, rounded; values outside are clamped); the first `max_images`
// encoded as PNG.  One image is tagged `tag`, several "tag/0", "tag/1"...
weft_status* Images(const std::string& tag, weft_dtype dtype,
                    const Dims& dims, const void* data, int64_t max_images,
                    tf::Summary* out);

// Text (Markdown), shown on TensorBoard's text dashboard: a string tensor
// with the text plugin's metadata.
void Text(const std::string& tag, const std::string& text, tf::Summary* out);

// Parses `bytes` into *out, checking that they are a Summary whose values
// all have valid tags (INVALID_ARGUMENT naming `where` otherwise): what the
// writer and MergeSummary accept from a summary op's output.
weft_status* ParseSummary(const void* bytes, size_t n,
                          const std::string& where, tf::Summary* out);

}  // namespace summary
}  // namespace weft
