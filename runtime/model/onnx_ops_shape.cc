// ONNX's shape and data-movement ops onto Weft's.  ONNX passes shapes,
// axes, starts and pads as tensors; Weft takes them as attributes, so they
// are read while importing (OnnxNode::IntsIn).  Constants and Range are
// computed here.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/onnx_importer.h"
#include "ops/shape_checks.h"

namespace weft {
namespace onnx_import {

namespace {

// Tensors this importer computes itself (Range, EyeLike) stay small.
constexpr int64_t kMaxMadeElements = int64_t{1} << 24;

// nhwc axis j holds nchw axis kNchwOfNhwc[j]; nchw axis i is nhwc axis
// kNhwcOfNchw[i].
constexpr int64_t kNchwOfNhwc[4] = {0, 2, 3, 1};
constexpr int64_t kNhwcOfNchw[4] = {0, 3, 1, 2};

int32_t KnownRank(Importer& im, weft_output x) {
  int32_t rank = im.Rank(x);
  if (rank < 0) Unsupported("the input's rank must be known");
  return rank;
}

std::vector<int64_t> Axes(OnnxNode& n, int input, bool* given) {
  *given = true;
  if (n.HasAttr("axes")) return n.Ints("axes", {});
  if (n.Has(input)) return n.IntsIn(input, "axes");
  *given = false;
  return {};
}

void TransposeOp(OnnxNode& n) {
  Importer& im = n.importer();
  const bool nhwc = n.PrefersNhwc(0);
  const int32_t rank = nhwc ? 4 : KnownRank(im, n.In(0));
  std::vector<int64_t> perm(rank);
  for (int32_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  perm = n.Ints("perm", perm);
  std::vector<bool> seen(rank, false);
  if (static_cast<int32_t>(perm.size()) != rank)
    Fail(WEFT_INVALID_ARGUMENT, "perm " + JoinInts(perm) + " for rank " +
                                    std::to_string(rank));
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      Fail(WEFT_INVALID_ARGUMENT, "perm " + JoinInts(perm) +
                                      " is not a permutation");
    seen[p] = true;
  }
  const std::vector<int64_t> to_nchw = {0, 3, 1, 2};
  if (nhwc) {
    // Transposing NCHW data held as NHWC: one Transpose of the NHWC value,
    // none at all for the transpose to NHWC.
    std::vector<int64_t> composed(4);
    for (int i = 0; i < 4; ++i) composed[i] = kNhwcOfNchw[perm[i]];
    weft_output x = n.InNhwc(0);
    bool identity = true;
    for (int i = 0; i < 4; ++i) identity = identity && composed[i] == i;
    n.SetOut(0, identity ? im.Op("Identity", {x}) : im.Transpose(x, composed));
    return;
  }
  if (rank == 4 && perm == to_nchw) {
    // NHWC data made NCHW: the input is the result's NHWC form.
    n.SetOutNhwc(0, im.Op("Identity", {n.In(0)}));
    return;
  }
  n.SetOut(0, im.Transpose(n.In(0), perm));
}

void ReshapeOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  std::vector<int64_t> shape =
      n.opset() < 5 ? n.Ints("shape", {}) : n.IntsIn(1, "shape");
  const bool allow_zero = n.Int("allowzero", 0) != 0;
  if (shape.size() > WEFT_MAX_RANK)
    Fail(WEFT_INVALID_ARGUMENT, "shape of rank " +
                                    std::to_string(shape.size()));
  bool has_minus_one =
      std::count(shape.begin(), shape.end(), int64_t{-1}) > 0;
  if (!allow_zero) {
    std::vector<int64_t> dims = im.Dims(x);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 0) continue;
      // 0 copies the input's dim.
      if (i < dims.size() && dims[i] >= 0) {
        shape[i] = dims[i];
      } else if (!has_minus_one && i < dims.size()) {
        shape[i] = -1;
        has_minus_one = true;
      } else {
        Unsupported("shape " + JoinInts(shape) + " copies dim " +
                    std::to_string(i) + " of the input, which is unknown");
      }
    }
  }
  n.SetOut(0, im.Reshape(x, shape));
}

void Flatten(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  const int32_t rank = KnownRank(im, x);
  int64_t axis = n.Int("axis", 1);
  if (axis < -rank || axis > rank)
    Fail(WEFT_INVALID_ARGUMENT, "axis " + std::to_string(axis) +
                                    " for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  std::vector<int64_t> dims = im.Dims(x);
  int64_t outer = 1, inner = 1;
  for (int32_t i = 0; i < rank; ++i) {
    int64_t& part = i < axis ? outer : inner;
    part = (dims[i] < 0 || part < 0) ? -1 : part * dims[i];
  }
  if (outer < 0 && inner < 0)
    Unsupported("dims " + JoinInts(dims) + " leave both sides of axis " +
                std::to_string(axis) + " unknown");
  n.SetOut(0, im.Reshape(x, {outer, inner}));
}

void ConcatOp(OnnxNode& n) {
  Importer& im = n.importer();
  if (n.num_inputs() < 1) Fail(WEFT_INVALID_ARGUMENT, "no inputs");
  bool all_nhwc = true;
  for (int i = 0; i < n.num_inputs(); ++i)
    all_nhwc = all_nhwc && n.PrefersNhwc(i);
  const int64_t raw_axis = n.Int("axis", n.opset() < 4 ? 1 : 0);
  std::vector<weft_output> inputs;
  if (all_nhwc) {
    const int64_t axis = NormalizeAxis(raw_axis, 4, "axis");
    for (int i = 0; i < n.num_inputs(); ++i) inputs.push_back(n.InNhwc(i));
    n.SetOutNhwc(0, im.OpList("Concat", inputs, [&](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", kNhwcOfNchw[axis]);
    }));
    return;
  }
  for (int i = 0; i < n.num_inputs(); ++i) inputs.push_back(n.In(i));
  const int64_t axis =
      NormalizeAxis(raw_axis, KnownRank(im, inputs[0]), "axis");
  n.SetOut(0, im.OpList("Concat", inputs, [&](weft_op_builder* b) {
    weft_op_set_attr_int(b, "axis", axis);
  }));
}

// A box of x: begin and size per axis (size -1: to the end).
weft_output SliceBox(Importer& im, weft_output x,
                     const std::vector<int64_t>& begin,
                     const std::vector<int64_t>& size) {
  return im.Op("Slice", {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "begin", begin.data(),
                              static_cast<int32_t>(begin.size()));
    weft_op_set_attr_int_list(b, "size", size.data(),
                              static_cast<int32_t>(size.size()));
  });
}

void SplitOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  const int32_t rank = KnownRank(im, x);
  const int64_t axis = NormalizeAxis(n.Int("axis", 0), rank, "axis");
  const int outputs = n.num_outputs();
  n.Ignore("num_outputs");  // opset 18's; the outputs themselves say it
  std::vector<int64_t> sizes = n.Ints("split", {});
  if (sizes.empty() && n.Has(1)) sizes = n.IntsIn(1, "split");
  if (outputs < 1) Fail(WEFT_INVALID_ARGUMENT, "no outputs");
  if (!sizes.empty() && static_cast<int>(sizes.size()) != outputs)
    Fail(WEFT_INVALID_ARGUMENT, "split " + JoinInts(sizes) + " for " +
                                    std::to_string(outputs) + " outputs");
  bool equal = true;
  for (int64_t s : sizes) {
    if (s < 0) Fail(WEFT_INVALID_ARGUMENT, "split " + JoinInts(sizes));
    equal = equal && s == sizes[0];
  }
  if (equal) {
    weft_node* node = im.Node("Split", {x}, [&](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", axis);
      weft_op_set_attr_int(b, "num_split", outputs);
    });
    for (int i = 0; i < outputs; ++i) n.SetOut(i, {node, i});
    return;
  }
  std::vector<int64_t> begin(rank, 0), size(rank, -1);
  int64_t offset = 0;
  for (int i = 0; i < outputs; ++i) {
    begin[axis] = offset;
    size[axis] = sizes[i];
    n.SetOut(i, SliceBox(im, x, begin, size));
    if (!CheckedAdd(offset, sizes[i], &offset))
      Fail(WEFT_INVALID_ARGUMENT, "split " + JoinInts(sizes));
  }
}

void SliceOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  const int32_t rank = KnownRank(im, x);
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.Ints("starts", {});
    ends = n.Ints("ends", {});
    axes = n.Ints("axes", {});
  } else {
    starts = n.IntsIn(1, "starts");
    ends = n.IntsIn(2, "ends");
    if (n.Has(3)) axes = n.IntsIn(3, "axes");
    if (n.Has(4)) steps = n.IntsIn(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    Fail(WEFT_INVALID_ARGUMENT, "starts " + JoinInts(starts) + ", ends " +
                                    JoinInts(ends) + ", axes " +
                                    JoinInts(axes) + " and steps " +
                                    JoinInts(steps) + " differ in length");
  std::vector<int64_t> dims = im.Dims(x);
  std::vector<int64_t> begin(rank, 0), size(rank, -1);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = NormalizeAxis(axes[i], rank, "axis");
    if (seen[a]) Fail(WEFT_INVALID_ARGUMENT, "axes " + JoinInts(axes));
    seen[a] = true;
    if (steps[i] != 1)
      Unsupported("steps " + JoinInts(steps) + ": Weft's Slice takes "
                  "contiguous boxes (step 1)");
    int64_t s = starts[i], e = ends[i];
    const int64_t d = dims[a];
    if (d < 0) {
      if (s >= 0 && e >= std::numeric_limits<int32_t>::max()) {
        begin[a] = s;  // from s to the end of an unknown dim
        continue;
      }
      Unsupported("slicing axis " + std::to_string(a) +
                  ", whose size is unknown, at starts " + JoinInts(starts) +
                  " and ends " + JoinInts(ends));
    }
    if (s < 0) s = s < -d ? 0 : s + d;
    if (e < 0) e = e < -d ? 0 : e + d;
    s = std::min(s, d);
    e = std::min(e, d);
    begin[a] = s;
    size[a] = std::max<int64_t>(e - s, 0);
  }
  n.SetOut(0, SliceBox(im, x, begin, size));
}

void SqueezeOp(OnnxNode& n) {
  Importer& im = n.importer();
  bool given = false;
  std::vector<int64_t> axes = Axes(n, 1, &given);
  n.SetOut(0, im.Op("Squeeze", {n.In(0)}, [&](weft_op_builder* b) {
    if (given)
      weft_op_set_attr_int_list(b, "squeeze_dims", axes.data(),
                                static_cast<int32_t>(axes.size()));
  }));
}

void UnsqueezeOp(OnnxNode& n) {
  Importer& im = n.importer();
  bool given = false;
  std::vector<int64_t> axes = Axes(n, 1, &given);
  weft_output x = n.In(0);
  const int64_t out_rank = KnownRank(im, x) + static_cast<int64_t>(axes.size());
  if (out_rank > WEFT_MAX_RANK)
    Fail(WEFT_INVALID_ARGUMENT, "axes " + JoinInts(axes) + " make rank " +
                                    std::to_string(out_rank));
  for (int64_t& a : axes) a = NormalizeAxis(a, out_rank, "axis");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    Fail(WEFT_INVALID_ARGUMENT, "axes " + JoinInts(axes) + " repeat");
  // Inserted in increasing order, each axis is where the output has it.
  weft_output y = x;
  for (int64_t a : axes)
    y = im.Op("ExpandDims", {y},
              [a](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", a); });
  if (axes.empty()) y = im.Op("Identity", {x});
  n.SetOut(0, y);
}

void GatherOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output data = n.In(0), indices = n.In(1);
  const int32_t rank = KnownRank(im, data);
  const int64_t axis = NormalizeAxis(n.Int("axis", 0), rank, "axis");
  const int64_t dim = im.Dims(data)[axis];
  const weft_dtype it = im.Dtype(indices);
  if (it != WEFT_INT32 && it != WEFT_INT64)
    Fail(WEFT_INVALID_ARGUMENT, "indices are not int32 or int64");
  // ONNX counts negative indices from the end; Weft refuses them.
  const weft_tensor* known = im.Fold(indices);
  bool negative = true;
  if (known != nullptr) {
    std::vector<int64_t> v = IntsOf(known, "indices");
    negative = std::any_of(v.begin(), v.end(), [](int64_t i) { return i < 0; });
  }
  if (negative) {
    weft_output size;
    if (dim >= 0) {
      size = im.Scalar(it, static_cast<double>(dim));
    } else {
      weft_output shape = im.Op("Shape", {data}, [it](weft_op_builder* b) {
        weft_op_set_attr_dtype(b, "out_type", it);
      });
      size = im.Op("Gather", {shape, im.Scalar(it, static_cast<double>(axis))});
    }
    weft_output zero = im.Scalar(it, 0);
    weft_output below = im.Op("Less", {indices, zero});
    indices = im.Op("Add", {indices, im.Op("Select", {below, size, zero})});
  }
  n.SetOut(0, im.Op("Gather", {data, indices}, [&](weft_op_builder* b) {
    weft_op_set_attr_int(b, "axis", axis);
  }));
}

void TileOp(OnnxNode& n) {
  Importer& im = n.importer();
  if (n.opset() < 6) Unsupported("Tile before opset 6 (tiles and axis)");
  std::vector<int64_t> repeats = n.IntsIn(1, "repeats");
  n.SetOut(0, im.Op("Tile", {n.In(0)}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "multiples", repeats.data(),
                              static_cast<int32_t>(repeats.size()));
  }));
}

void ExpandOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  std::vector<int64_t> shape = n.IntsIn(1, "shape");
  const int32_t rank = KnownRank(im, x);
  const size_t out_rank = std::max<size_t>(rank, shape.size());
  if (out_rank > WEFT_MAX_RANK)
    Fail(WEFT_INVALID_ARGUMENT, "shape " + JoinInts(shape));
  std::vector<int64_t> dims = im.Dims(x);
  dims.insert(dims.begin(), out_rank - dims.size(), 1);
  shape.insert(shape.begin(), out_rank - shape.size(), 1);
  std::vector<int64_t> multiples(out_rank, 1);
  bool tile = false;
  for (size_t i = 0; i < out_rank; ++i) {
    const int64_t xd = dims[i], sd = shape[i];
    if (sd < 0) Fail(WEFT_INVALID_ARGUMENT, "shape " + JoinInts(shape));
    if (sd == 1 || xd == sd) continue;
    if (xd == 1) {
      multiples[i] = sd;
      tile = true;
    } else if (xd < 0) {
      Unsupported("expanding axis " + std::to_string(i) +
                  " of unknown size to " + std::to_string(sd));
    } else {
      Fail(WEFT_INVALID_ARGUMENT, "dims " + JoinInts(im.Dims(x)) +
                                      " do not broadcast to " +
                                      JoinInts(shape));
    }
  }
  weft_output y = x;
  for (size_t r = rank; r < out_rank; ++r)
    y = im.Op("ExpandDims", {y},
              [](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", 0); });
  if (tile)
    y = im.Op("Tile", {y}, [&](weft_op_builder* b) {
      weft_op_set_attr_int_list(b, "multiples", multiples.data(),
                                static_cast<int32_t>(multiples.size()));
    });
  if (y.node == x.node && y.index == x.index) y = im.Op("Identity", {x});
  n.SetOut(0, y);
}

// Edge and reflect padding, one Gather per padded axis: the indices of the
// input each output position copies.
weft_output GatherPad(Importer& im, weft_output x,
                      const std::vector<int64_t>& pads, bool reflect) {
  const int32_t rank = KnownRank(im, x);
  std::vector<int64_t> dims = im.Dims(x);
  if (static_cast<int32_t>(pads.size()) != 2 * rank)
    Fail(WEFT_INVALID_ARGUMENT, "pads " + JoinInts(pads) + " for rank " +
                                    std::to_string(rank));
  weft_output y = x;
  for (int32_t a = 0; a < rank; ++a) {
    const int64_t before = pads[a], after = pads[rank + a], d = dims[a];
    if (before == 0 && after == 0) continue;
    if (before < 0 || after < 0)
      Unsupported("negative pads with mode edge or reflect");
    if (d < 1 || (reflect && d < 2))
      Unsupported("padding an axis of unknown size, or too small to " +
                  std::string(reflect ? "reflect" : "repeat"));
    int64_t count = 0;
    if (!CheckedAdd(before, after, &count) ||
        !CheckedAdd(count, d, &count) || count > kMaxMadeElements)
      Fail(WEFT_INVALID_ARGUMENT, "pads " + JoinInts(pads));
    std::vector<int64_t> index;
    const int64_t period = 2 * (d - 1);
    for (int64_t j = -before; j < d + after; ++j) {
      if (!reflect) {
        index.push_back(std::min(std::max<int64_t>(j, 0), d - 1));
      } else {
        int64_t m = (j < 0 ? -j : j) % period;
        index.push_back(m >= d ? period - m : m);
      }
    }
    y = im.Op("Gather", {y, im.Int64s(index)}, [a](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", a);
    });
  }
  return y.node == x.node ? im.Op("Identity", {x}) : y;
}

void PadOp(OnnxNode& n) {
  Importer& im = n.importer();
  const std::string mode = n.String("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    Fail(WEFT_INVALID_ARGUMENT, "mode '" + mode + "' is unknown");
  std::vector<int64_t> pads;
  double value = 0;
  if (n.opset() < 11) {
    pads = n.Ints("pads", {});
    value = n.Float("value", 0.0);
  } else {
    pads = n.IntsIn(1, "pads");
    if (n.Has(2)) {
      std::vector<double> v = DoublesOf(n.ConstIn(2, "constant_value"),
                                        "constant_value");
      if (v.size() != 1)
        Fail(WEFT_INVALID_ARGUMENT, "constant_value is not one value");
      value = v[0];
    }
    if (n.Has(3)) Unsupported("the axes input (opset 18)");
  }
  if (mode != "constant") {
    n.SetOut(0, GatherPad(im, n.In(0), pads, mode == "reflect"));
    return;
  }
  const bool nhwc = n.PrefersNhwc(0);
  weft_output x = nhwc ? n.InNhwc(0) : n.In(0);
  const int32_t rank = KnownRank(im, x);
  if (static_cast<int32_t>(pads.size()) != 2 * rank)
    Fail(WEFT_INVALID_ARGUMENT, "pads " + JoinInts(pads) + " for rank " +
                                    std::to_string(rank));
  // Weft's paddings are [before, after] per axis (of the layout held);
  // ONNX's all befores, then all afters.  Negative pads crop.
  std::vector<int64_t> paddings(2 * rank), begin(rank, 0), size(rank, -1);
  bool crop = false;
  std::vector<int64_t> dims = im.Dims(x);
  for (int32_t j = 0; j < rank; ++j) {
    const int32_t i = nhwc ? static_cast<int32_t>(kNchwOfNhwc[j]) : j;
    const int64_t before = pads[i], after = pads[rank + i];
    paddings[2 * j] = std::max<int64_t>(before, 0);
    paddings[2 * j + 1] = std::max<int64_t>(after, 0);
    if (before < 0 || after < 0) {
      if (dims[j] < 0) Unsupported("cropping an axis of unknown size");
      crop = true;
      begin[j] = std::max<int64_t>(-before, 0);
      size[j] = dims[j] + std::min<int64_t>(before, 0) +
                std::min<int64_t>(after, 0);
      if (size[j] < 0)
        Fail(WEFT_INVALID_ARGUMENT, "pads " + JoinInts(pads) +
                                        " crop more than the input holds");
    }
  }
  weft_output y = x;
  if (crop) y = SliceBox(im, y, begin, size);
  y = im.Op("Pad", {y}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "paddings", paddings.data(),
                              static_cast<int32_t>(paddings.size()));
    weft_op_set_attr_float(b, "constant_value", value);
  });
  if (nhwc)
    n.SetOutNhwc(0, y);
  else
    n.SetOut(0, y);
}

void ShapeOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  int64_t start = n.Int("start", 0);
  int64_t end = n.Int("end", std::numeric_limits<int64_t>::max());
  const int32_t rank = im.Rank(x);
  if (rank >= 0) {
    start = start < 0 ? std::max<int64_t>(start + rank, 0)
                      : std::min<int64_t>(start, rank);
    end = end < 0 ? std::max<int64_t>(end + rank, 0)
                  : std::min<int64_t>(end, rank);
    end = std::max(end, start);
    std::vector<int64_t> dims = im.Dims(x);
    std::vector<int64_t> part(dims.begin() + start, dims.begin() + end);
    if (std::all_of(part.begin(), part.end(),
                    [](int64_t d) { return d >= 0; })) {
      n.SetOut(0, im.Int64s(part));
      return;
    }
  } else if (start != 0 || end != std::numeric_limits<int64_t>::max()) {
    Unsupported("start and end on an input of unknown rank");
  }
  weft_output shape = im.Op("Shape", {x}, [](weft_op_builder* b) {
    weft_op_set_attr_dtype(b, "out_type", WEFT_INT64);
  });
  if (rank >= 0 && (start != 0 || end != rank))
    shape = SliceBox(im, shape, {start}, {end - start});
  n.SetOut(0, shape);
}

void SizeOp(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  if (im.FullyKnown(x)) {
    int64_t count = 1;
    for (int64_t d : im.Dims(x)) count *= d;  // within 2^48: Weft checks
    n.SetOut(0, im.Const(MakeIntTensor(WEFT_INT64, {}, {count})));
    return;
  }
  n.SetOut(0, im.Op("Size", {x}, [](weft_op_builder* b) {
    weft_op_set_attr_dtype(b, "out_type", WEFT_INT64);
  }));
}

void ConstantOfShape(OnnxNode& n) {
  Importer& im = n.importer();
  std::vector<int64_t> shape = n.IntsIn(0, "shape");
  if (shape.size() > WEFT_MAX_RANK)
    Fail(WEFT_INVALID_ARGUMENT, "shape " + JoinInts(shape));
  weft_output value;
  if (const onnx::TensorProto* t = n.TensorAttr("value")) {
    TensorPtr v = TensorFromProto(*t, "attribute value");
    if (weft_tensor_element_count(v.get()) != 1)
      Fail(WEFT_INVALID_ARGUMENT, "attribute value is not one element");
    value = im.Reshape(im.Const(std::move(v)), {});
  } else {
    value = im.Scalar(WEFT_FLOAT32, 0);
  }
  n.SetOut(0, im.Op("Fill", {value}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "shape", shape.data(),
                              static_cast<int32_t>(shape.size()));
  }));
}

void ConstantOp(OnnxNode& n) {
  Importer& im = n.importer();
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int",
                           "value_ints", "value_string", "value_strings",
                           "sparse_value"})
    given += n.HasAttr(name);
  if (given != 1)
    Fail(WEFT_INVALID_ARGUMENT, "a Constant needs exactly one value "
                                "attribute, not " + std::to_string(given));
  if (n.HasAttr("value_string") || n.HasAttr("value_strings"))
    Unsupported("string constants (Weft has no string dtype)");
  if (n.HasAttr("sparse_value")) Unsupported("sparse constants");
  TensorPtr t;
  if (const onnx::TensorProto* p = n.TensorAttr("value")) {
    t = TensorFromProto(*p, "attribute value");
  } else if (n.HasAttr("value_float")) {
    t = MakeTensor(WEFT_FLOAT32, {}, {n.Float("value_float", 0)});
  } else if (n.HasAttr("value_floats")) {
    std::vector<float> f = n.Floats("value_floats");
    t = MakeTensor(WEFT_FLOAT32, {static_cast<int64_t>(f.size())},
                   std::vector<double>(f.begin(), f.end()));
  } else if (n.HasAttr("value_int")) {
    t = MakeIntTensor(WEFT_INT64, {}, {n.Int("value_int", 0)});
  } else {
    std::vector<int64_t> v = n.Ints("value_ints", {});
    t = MakeIntTensor(WEFT_INT64, {static_cast<int64_t>(v.size())}, v);
  }
  n.SetOut(0, im.Const(std::move(t)));
}

void RangeOp(OnnxNode& n) {
  Importer& im = n.importer();
  const weft_tensor* ts = n.ConstIn(0, "start");
  const weft_tensor* tl = n.ConstIn(1, "limit");
  const weft_tensor* td = n.ConstIn(2, "delta");
  const weft_dtype dt = weft_tensor_dtype(ts);
  std::vector<double> s = DoublesOf(ts, "start"), l = DoublesOf(tl, "limit"),
                      d = DoublesOf(td, "delta");
  if (s.size() != 1 || l.size() != 1 || d.size() != 1)
    Fail(WEFT_INVALID_ARGUMENT, "start, limit and delta must be scalars");
  if (d[0] == 0 || !std::isfinite(s[0] + l[0] + d[0]))
    Fail(WEFT_INVALID_ARGUMENT, "delta 0 or values not finite");
  const double count = std::max(std::ceil((l[0] - s[0]) / d[0]), 0.0);
  if (count > static_cast<double>(kMaxMadeElements))
    Unsupported("a Range of " + std::to_string(count) + " elements");
  const int64_t c = static_cast<int64_t>(count);
  if (IsInteger(dt)) {
    std::vector<int64_t> si = IntsOf(ts, "start"), di = IntsOf(td, "delta");
    std::vector<int64_t> v(c);
    for (int64_t i = 0; i < c; ++i)
      if (!CheckedMul(i, di[0], &v[i]) || !CheckedAdd(v[i], si[0], &v[i]))
        Fail(WEFT_INVALID_ARGUMENT, "Range leaves int64");
    n.SetOut(0, im.Const(MakeIntTensor(dt, {c}, v)));
    return;
  }
  std::vector<double> v(c);
  // ONNX defines Range by repeated addition in the tensor's type.
  if (dt == WEFT_FLOAT32) {
    float acc = static_cast<float>(s[0]);
    for (int64_t i = 0; i < c; ++i, acc += static_cast<float>(d[0])) v[i] = acc;
  } else {
    double acc = s[0];
    for (int64_t i = 0; i < c; ++i, acc += d[0]) v[i] = acc;
  }
  n.SetOut(0, im.Const(MakeTensor(dt, {c}, v)));
}

void OneHotOp(OnnxNode& n) {
  Importer& im = n.importer();
  std::vector<double> depth_v = DoublesOf(n.ConstIn(1, "depth"), "depth");
  const weft_tensor* values = n.ConstIn(2, "values");
  std::vector<double> v = DoublesOf(values, "values");
  if (depth_v.size() != 1 || v.size() != 2)
    Fail(WEFT_INVALID_ARGUMENT, "depth must be one value and values two");
  if (!(depth_v[0] >= 1 && depth_v[0] <= 1e9))
    Fail(WEFT_INVALID_ARGUMENT, "depth " + std::to_string(depth_v[0]));
  const int64_t depth = static_cast<int64_t>(depth_v[0]);
  const int64_t axis = n.Int("axis", -1);
  weft_output idx = n.In(0);
  if (!IsInteger(im.Dtype(idx))) idx = im.Cast(idx, WEFT_INT64);
  if (im.Dtype(idx) != WEFT_INT32) idx = im.Cast(idx, WEFT_INT64);
  // Negative indices count from the end of the depth.
  const weft_dtype it = im.Dtype(idx);
  weft_output zero = im.Scalar(it, 0);
  weft_output shift = im.Op(
      "Select", {im.Op("Less", {idx, zero}),
                 im.Scalar(it, static_cast<double>(depth)), zero});
  idx = im.Op("Add", {idx, shift});
  const weft_dtype out = weft_tensor_dtype(values);
  n.SetOut(0, im.Op("OneHot", {idx}, [&](weft_op_builder* b) {
    weft_op_set_attr_int(b, "depth", depth);
    weft_op_set_attr_float(b, "off_value", v[0]);
    weft_op_set_attr_float(b, "on_value", v[1]);
    weft_op_set_attr_int(b, "axis", axis);
    weft_op_set_attr_dtype(b, "dtype", out);
  }));
}

// DepthToSpace and SpaceToDepth: a Reshape to rank 6, a Transpose, and a
// Reshape back.
void BlockRearrange(OnnxNode& n, bool to_space) {
  Importer& im = n.importer();
  const int64_t bs = n.Int("blocksize", 0);
  const std::string mode = to_space ? n.String("mode", "DCR") : "DCR";
  weft_output x = n.In(0);
  std::vector<int64_t> d = im.Dims(x);
  if (d.size() != 4 || d[1] < 0 || d[2] < 0 || d[3] < 0)
    Unsupported("an input that is not rank 4 with known C, H and W");
  if (bs < 1 || bs > 4096)
    Fail(WEFT_INVALID_ARGUMENT, "blocksize " + std::to_string(bs));
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3];
  weft_output y;
  if (to_space) {
    if (C % (bs * bs) != 0)
      Fail(WEFT_INVALID_ARGUMENT, "C is not a multiple of blocksize^2");
    const int64_t c = C / (bs * bs);
    if (mode == "DCR") {
      y = im.Transpose(im.Reshape(x, {N, bs, bs, c, H, W}),
                       {0, 3, 4, 1, 5, 2});
    } else if (mode == "CRD") {
      y = im.Transpose(im.Reshape(x, {N, c, bs, bs, H, W}),
                       {0, 1, 4, 2, 5, 3});
    } else {
      Fail(WEFT_INVALID_ARGUMENT, "mode '" + mode + "'");
    }
    y = im.Reshape(y, {N, c, H * bs, W * bs});
  } else {
    if (H % bs != 0 || W % bs != 0)
      Fail(WEFT_INVALID_ARGUMENT, "H or W is not a multiple of blocksize");
    y = im.Transpose(im.Reshape(x, {N, C, H / bs, bs, W / bs, bs}),
                     {0, 3, 5, 1, 2, 4});
    y = im.Reshape(y, {N, C * bs * bs, H / bs, W / bs});
  }
  n.SetOut(0, y);
}

void EyeLike(OnnxNode& n) {
  Importer& im = n.importer();
  weft_output x = n.In(0);
  std::vector<int64_t> d = im.Dims(x);
  if (d.size() != 2 || d[0] < 0 || d[1] < 0)
    Unsupported("an input that is not a matrix of known shape");
  int64_t count = 0;
  if (!CheckedMul(d[0], d[1], &count) || count > kMaxMadeElements)
    Unsupported("an identity of " + JoinInts(d));
  const weft_dtype dt =
      n.HasAttr("dtype")
          ? DtypeFromOnnx(static_cast<int32_t>(n.Int("dtype", 0)), "dtype")
          : im.Dtype(x);
  const int64_t k = n.Int("k", 0);
  std::vector<double> v(static_cast<size_t>(count), 0.0);
  for (int64_t i = 0; i < d[0]; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < d[1]) v[i * d[1] + j] = 1;
  }
  n.SetOut(0, im.Const(MakeTensor(dt, d, v)));
}

}  // namespace

void AddShapeConverters(ConverterMap* m) {
  ConverterMap& map = *m;
  map["Transpose"] = TransposeOp;
  map["Reshape"] = ReshapeOp;
  map["Flatten"] = Flatten;
  map["Concat"] = ConcatOp;
  map["Split"] = SplitOp;
  map["Slice"] = SliceOp;
  map["Squeeze"] = SqueezeOp;
  map["Unsqueeze"] = UnsqueezeOp;
  map["Gather"] = GatherOp;
  map["Tile"] = TileOp;
  map["Expand"] = ExpandOp;
  map["Pad"] = PadOp;
  map["Shape"] = ShapeOp;
  map["Size"] = SizeOp;
  map["ConstantOfShape"] = ConstantOfShape;
  map["Constant"] = ConstantOp;
  map["Range"] = RangeOp;
  map["OneHot"] = OneHotOp;
  map["DepthToSpace"] = [](OnnxNode& n) { BlockRearrange(n, true); };
  map["SpaceToDepth"] = [](OnnxNode& n) { BlockRearrange(n, false); };
  map["EyeLike"] = EyeLike;
}

}  // namespace onnx_import
}  // namespace weft
