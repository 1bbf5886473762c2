// ONNX's convolution, pooling and normalization ops onto Weft's NHWC
// Conv2D, MaxPool and AvgPool (1-D ones as 2-D with a height of 1) and
// element-wise ops.  Results stay NHWC (onnx_importer.h, Layout).
//
// Padding: ONNX gives explicit pads (and ceil_mode); Weft gives
// TensorFlow's SAME and VALID.  Pads equal to SAME's are SAME; others are a
// Pad node before a VALID op: zeros for convolution, -inf for MaxPool, and
// for AveragePool zeros with the divisor computed by pooling a padded
// tensor of ones, so that padding counts or not as count_include_pad says.
#include <cmath>
#include <limits>

#include "model/onnx_importer.h"

namespace weft {
namespace onnx_import {

namespace {

enum class PadMode { kValid, kSame, kExplicit };

// A 2-D window in NHWC terms: kernel, strides, dilations, pads on each
// side of H and W.
struct Window {
  int64_t k[2] = {1, 1}, s[2] = {1, 1}, d[2] = {1, 1};
  int64_t before[2] = {0, 0}, after[2] = {0, 0};
  PadMode mode = PadMode::kValid;
};

// Reads kernel_shape, strides, dilations, pads, auto_pad (and ceil_mode
// when `pooling`) for `spatial` (1 or 2) dims of input sizes in[0..1] (-1
// unknown; a 1-D op's H is 1), and picks how Weft pads.
Window ReadWindow(OnnxNode& n, int spatial, const int64_t in[2],
                  const std::vector<int64_t>& kernel_from_weights,
                  bool pooling) {
  Window w;
  std::vector<int64_t> k = n.Ints("kernel_shape", kernel_from_weights);
  const std::vector<int64_t> ones(spatial, 1), zeros(2 * spatial, 0);
  std::vector<int64_t> s = n.Ints("strides", ones);
  std::vector<int64_t> d = n.Ints("dilations", ones);
  std::vector<int64_t> p = n.Ints("pads", zeros);
  const std::string auto_pad = n.String("auto_pad", "NOTSET");
  const bool ceil_mode = pooling && n.Int("ceil_mode", 0) != 0;
  if (static_cast<int>(k.size()) != spatial ||
      static_cast<int>(s.size()) != spatial ||
      static_cast<int>(d.size()) != spatial ||
      static_cast<int>(p.size()) != 2 * spatial)
    Fail(WEFT_INVALID_ARGUMENT,
         "kernel_shape " + JoinInts(k) + ", strides " + JoinInts(s) +
             ", dilations " + JoinInts(d) + " and pads " + JoinInts(p) +
             " do not fit " + std::to_string(spatial) + " spatial dims");
  const int off = 2 - spatial;  // a 1-D op's only axis is W
  for (int i = 0; i < spatial; ++i) {
    const int64_t limit = std::numeric_limits<int32_t>::max();
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || k[i] > limit || s[i] > limit ||
        d[i] > limit || p[i] < 0 || p[spatial + i] < 0 || p[i] > limit ||
        p[spatial + i] > limit)
      Fail(WEFT_INVALID_ARGUMENT,
           "kernel_shape " + JoinInts(k) + ", strides " + JoinInts(s) +
               ", dilations " + JoinInts(d) + " or pads " + JoinInts(p) +
               " out of range");
    w.k[off + i] = k[i];
    w.s[off + i] = s[i];
    w.d[off + i] = d[i];
    w.before[off + i] = p[i];
    w.after[off + i] = p[spatial + i];
  }
  bool same_upper_unknown = false;
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = (w.k[i] - 1) * w.d[i] + 1;
    if (auto_pad == "VALID") {
      w.before[i] = w.after[i] = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in[i] < 0) {
        if (auto_pad == "SAME_LOWER")
          Unsupported("auto_pad SAME_LOWER with spatial dims unknown");
        same_upper_unknown = true;
        continue;
      }
      const int64_t out = (in[i] + w.s[i] - 1) / w.s[i];
      const int64_t total = std::max<int64_t>((out - 1) * w.s[i] + extent -
                                                  in[i], 0);
      w.before[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.after[i] = total - w.before[i];
    } else if (auto_pad != "NOTSET") {
      Fail(WEFT_INVALID_ARGUMENT, "auto_pad '" + auto_pad + "' is unknown");
    }
    if (ceil_mode && auto_pad == "NOTSET") {
      if (in[i] < 0)
        Unsupported("ceil_mode with spatial dims unknown");
      const int64_t span = in[i] + w.before[i] + w.after[i] - extent;
      if (span >= 0 && span % w.s[i] != 0)
        w.after[i] += w.s[i] - span % w.s[i];
    }
  }
  if (same_upper_unknown) {
    w.mode = PadMode::kSame;
    return w;
  }
  bool zero = true, same = true;
  for (int i = 0; i < 2; ++i) {
    zero = zero && w.before[i] == 0 && w.after[i] == 0;
    if (in[i] < 0) {
      same = false;
      continue;
    }
    const int64_t extent = (w.k[i] - 1) * w.d[i] + 1;
    const int64_t out = (in[i] + w.s[i] - 1) / w.s[i];
    const int64_t total =
        std::max<int64_t>((out - 1) * w.s[i] + extent - in[i], 0);
    same = same && w.before[i] == total / 2 && w.after[i] == total - total / 2;
  }
  w.mode = zero ? PadMode::kValid : same ? PadMode::kSame : PadMode::kExplicit;
  return w;
}

void SetWindowAttrs(weft_op_builder* b, const Window& w, const char* padding) {
  const int64_t strides[4] = {1, w.s[0], w.s[1], 1};
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_string(b, "padding", padding);
}

// Pads an NHWC tensor by the window's pads (or those given).
weft_output PadNhwc(Importer& im, weft_output x, const int64_t before[2],
                    const int64_t after[2], double value) {
  const int64_t paddings[8] = {0, 0, before[0], after[0],
                               before[1], after[1], 0, 0};
  return im.Op("Pad", {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "paddings", paddings, 8);
    weft_op_set_attr_float(b, "constant_value", value);
  });
}

const char* PaddingName(PadMode m) {
  return m == PadMode::kSame ? "SAME" : "VALID";
}

// The input of a 1-D or 2-D conv or pool as NHWC, with the spatial count
// and input sizes; `rank` of the ONNX input.
weft_output SpatialInput(OnnxNode& n, int* spatial, int64_t in[2]) {
  Importer& im = n.importer();
  weft_output x;
  int32_t rank = n.PrefersNhwc(0) ? 4 : im.Rank(n.In(0));
  if (rank == 4) {
    x = n.InNhwc(0);
    *spatial = 2;
  } else if (rank == 3) {
    // [N, C, W] -> [N, C, 1, W] -> NHWC [N, 1, W, C]
    x = im.Op("ExpandDims", {n.In(0)},
              [](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", 2); });
    x = im.Transpose(x, {0, 2, 3, 1});
    *spatial = 1;
  } else {
    Unsupported("an input of rank " + std::to_string(rank) +
                ": Weft convolves and pools 1-D and 2-D images (rank 3 or 4)");
  }
  std::vector<int64_t> dims = im.Dims(x);
  in[0] = dims.size() == 4 ? dims[1] : -1;
  in[1] = dims.size() == 4 ? dims[2] : -1;
  return x;
}

// Sets output 0 from an NHWC result, back to [N, C, W] for 1-D ops.
void SetSpatialOut(OnnxNode& n, int spatial, weft_output y) {
  Importer& im = n.importer();
  if (spatial == 2) {
    n.SetOutNhwc(0, y);
    return;
  }
  y = im.Transpose(y, {0, 3, 1, 2});
  const int64_t axis = 2;
  n.SetOut(0, im.Op("Squeeze", {y}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "squeeze_dims", &axis, 1);
  }));
}

void RequireFloatInput(Importer& im, weft_output x, const char* op) {
  weft_dtype d = im.Dtype(x);
  if (d != WEFT_FLOAT32 && d != WEFT_FLOAT64)
    Unsupported(std::string(op) + " of " + weft_dtype_name(d) +
                " (Weft's runs on float32 and float64)");
}

void Conv(OnnxNode& n) {
  Importer& im = n.importer();
  int spatial = 0;
  int64_t in[2];
  weft_output x = SpatialInput(n, &spatial, in);
  RequireFloatInput(im, x, "Conv");
  weft_output w = n.In(1);
  std::vector<int64_t> wd = im.Dims(w);
  if (static_cast<int>(wd.size()) != spatial + 2)
    Fail(WEFT_INVALID_ARGUMENT, "the weights have dims " + JoinInts(wd) +
                                    ", not rank " +
                                    std::to_string(spatial + 2));
  const int64_t group = n.Int("group", 1);
  Window win = ReadWindow(
      n, spatial, in, std::vector<int64_t>(wd.begin() + 2, wd.end()), false);
  if (spatial == 1)
    w = im.Op("ExpandDims", {w},
              [](weft_op_builder* b) { weft_op_set_attr_int(b, "axis", 2); });
  weft_output filter = im.Transpose(w, {2, 3, 1, 0});  // [KH, KW, C/g, M]
  if (win.mode == PadMode::kExplicit) {
    x = PadNhwc(im, x, win.before, win.after, 0);
    win.mode = PadMode::kValid;
  }
  auto conv = [&](weft_output input, weft_output f) {
    return im.Op("Conv2D", {input, f}, [&](weft_op_builder* b) {
      SetWindowAttrs(b, win, PaddingName(win.mode));
      const int64_t dil[4] = {1, win.d[0], win.d[1], 1};
      weft_op_set_attr_int_list(b, "dilations", dil, 4);
    });
  };
  weft_output y;
  if (group == 1) {
    y = conv(x, filter);
  } else {
    // Grouped: each group of input channels with its filters, then the
    // outputs joined in group order.
    const int64_t m = wd[0];
    if (group < 1 || m < 0 || m % group != 0 || group > 4096)
      Unsupported("group " + std::to_string(group) + " with " +
                  std::to_string(m) + " output channels");
    auto split = [&](weft_output v) {
      return im.Node("Split", {v}, [&](weft_op_builder* b) {
        weft_op_set_attr_int(b, "axis", 3);
        weft_op_set_attr_int(b, "num_split", group);
      });
    };
    weft_node* xs = split(x);
    weft_node* fs = split(filter);
    std::vector<weft_output> parts;
    for (int32_t g = 0; g < group; ++g)
      parts.push_back(conv({xs, g}, {fs, g}));
    y = im.OpList("Concat", parts, [](weft_op_builder* b) {
      weft_op_set_attr_int(b, "axis", 3);
    });
  }
  if (n.Has(2)) y = im.Op("BiasAdd", {y, n.In(2)});
  SetSpatialOut(n, spatial, y);
}

void PoolAttrs(weft_op_builder* b, const Window& w, PadMode mode) {
  const int64_t ksize[4] = {1, w.k[0], w.k[1], 1};
  weft_op_set_attr_int_list(b, "ksize", ksize, 4);
  SetWindowAttrs(b, w, PaddingName(mode));
}

void MaxPoolOp(OnnxNode& n) {
  Importer& im = n.importer();
  int spatial = 0;
  int64_t in[2];
  weft_output x = SpatialInput(n, &spatial, in);
  // Integers of up to 16 bits are exact in float32, and a maximum of exact
  // values is exact: pooled there and cast back.
  const weft_dtype dt = im.Dtype(x);
  const bool narrow_int = dt == WEFT_UINT8 || dt == WEFT_INT8 ||
                          dt == WEFT_UINT16 || dt == WEFT_INT16;
  if (narrow_int) x = im.Cast(x, WEFT_FLOAT32);
  else RequireFloatInput(im, x, "MaxPool");
  n.Ignore("storage_order");  // the layout of Indices, which is refused
  Window w = ReadWindow(n, spatial, in, {}, true);
  if (w.d[0] != 1 || w.d[1] != 1)
    Unsupported("dilations other than 1 (Weft's MaxPool has none)");
  if (w.mode == PadMode::kExplicit) {
    x = PadNhwc(im, x, w.before, w.after, -INFINITY);
    w.mode = PadMode::kValid;
  }
  weft_output y = im.Op("MaxPool", {x}, [&](weft_op_builder* b) {
    PoolAttrs(b, w, w.mode);
  });
  SetSpatialOut(n, spatial, narrow_int ? im.Cast(y, dt) : y);
}

void AveragePool(OnnxNode& n) {
  Importer& im = n.importer();
  int spatial = 0;
  int64_t in[2];
  weft_output x = SpatialInput(n, &spatial, in);
  RequireFloatInput(im, x, "AveragePool");
  const bool include_pad = n.Int("count_include_pad", 0) != 0;
  // The explicit pads alone, before ceil_mode adds any.
  Window plain = ReadWindow(n, spatial, in, {}, false);
  Window w = ReadWindow(n, spatial, in, {}, true);
  if (w.d[0] != 1 || w.d[1] != 1)
    Unsupported("dilations other than 1 (Weft's AvgPool has none)");
  auto pool = [&](weft_output v, PadMode mode) {
    return im.Op("AvgPool", {v},
                 [&](weft_op_builder* b) { PoolAttrs(b, w, mode); });
  };
  weft_output y;
  if (w.mode == PadMode::kValid || (w.mode == PadMode::kSame && !include_pad)) {
    y = pool(x, w.mode);
  } else {
    // sum / count: each a VALID average over zero-padded tensors, of x and
    // of ones where an element counts.
    weft_output sum = pool(PadNhwc(im, x, w.before, w.after, 0),
                           PadMode::kValid);
    weft_output ones = im.Op("OnesLike", {x});
    if (include_pad) {
      ones = im.Op("OnesLike",
                   {PadNhwc(im, x, plain.before, plain.after, 0)});
      int64_t extra[2] = {w.after[0] - plain.after[0],
                          w.after[1] - plain.after[1]};
      const int64_t none[2] = {0, 0};
      if (extra[0] == 0 && extra[1] == 0) {
        y = sum;
      } else {
        weft_output count =
            pool(PadNhwc(im, ones, none, extra, 0), PadMode::kValid);
        y = im.Op("Div", {sum, count});
      }
    } else {
      weft_output count = pool(PadNhwc(im, ones, w.before, w.after, 0),
                               PadMode::kValid);
      y = im.Op("Div", {sum, count});
    }
  }
  SetSpatialOut(n, spatial, y);
}

void GlobalPool(OnnxNode& n, const char* op) {
  Importer& im = n.importer();
  if (n.PrefersNhwc(0)) {
    const int64_t axes[2] = {1, 2};
    n.SetOutNhwc(0, im.Op(op, {n.InNhwc(0)}, [&](weft_op_builder* b) {
      weft_op_set_attr_int_list(b, "axes", axes, 2);
      weft_op_set_attr_bool(b, "keep_dims", 1);
    }));
    return;
  }
  weft_output x = n.In(0);
  const int32_t rank = im.Rank(x);
  if (rank < 3) Unsupported("an input of rank below 3 or unknown");
  std::vector<int64_t> axes;
  for (int32_t i = 2; i < rank; ++i) axes.push_back(i);
  n.SetOut(0, im.Op(op, {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "axes", axes.data(),
                              static_cast<int32_t>(axes.size()));
    weft_op_set_attr_bool(b, "keep_dims", 1);
  }));
}

// A per-channel vector [C] shaped to broadcast along axis 1 of a rank
// `rank` NCHW value: [C, 1, ..., 1].
weft_output PerChannel(Importer& im, weft_output v, int32_t rank) {
  if (rank <= 2) return v;
  std::vector<int64_t> shape(static_cast<size_t>(rank - 1), 1);
  shape[0] = -1;
  return im.Reshape(v, shape);
}

weft_output MeanOver(Importer& im, weft_output x,
                     const std::vector<int64_t>& axes);

// Training mode (opset 14): the batch's own statistics normalize, and the
// running ones come out moved towards them by 1 - momentum.  The variance
// is the population's (divided by the count), as ONNX defines it.
void BatchNormalizationTraining(OnnxNode& n, double eps, weft_dtype dt) {
  Importer& im = n.importer();
  const double momentum = n.Float("momentum", 0.9);
  weft_output x = n.In(0);
  const int32_t rank = im.Rank(x);
  if (rank < 2) Unsupported("an input of rank below 2 or unknown");
  if (im.Dtype(x) != dt)
    Unsupported("an input whose dtype differs from its scale's");
  std::vector<int64_t> axes = {0};
  for (int32_t i = 2; i < rank; ++i) axes.push_back(i);
  weft_output mean = MeanOver(im, x, axes);  // [1, C, 1, ...]
  weft_output d = im.Op("Sub", {x, mean});
  weft_output var = MeanOver(im, im.Op("Square", {d}), axes);
  weft_output inv =
      im.Op("Rsqrt", {im.Op("Add", {var, im.Scalar(dt, eps)})});
  weft_output y = im.Op("Mul", {im.Op("Mul", {d, inv}),
                                PerChannel(im, n.In(1), rank)});
  n.SetOut(0, im.Op("Add", {y, PerChannel(im, n.In(2), rank)}));
  auto moved = [&](weft_output running, weft_output batch) {
    return im.Op("Add", {im.Op("Mul", {running, im.Scalar(dt, momentum)}),
                         im.Op("Mul", {im.Reshape(batch, {-1}),
                                       im.Scalar(dt, 1 - momentum)})});
  };
  if (n.Wants(1)) n.SetOut(1, moved(n.In(3), mean));
  if (n.Wants(2)) n.SetOut(2, moved(n.In(4), var));
}

void BatchNormalization(OnnxNode& n) {
  Importer& im = n.importer();
  const double eps = n.Float("epsilon", 1e-5);
  if (n.opset() < 9 && n.Int("spatial", 1) != 1)
    Unsupported("spatial = 0 (statistics per element)");
  if (n.opset() < 7) n.Ignore("is_test");
  weft_output scale = n.In(1), bias = n.In(2), mean = n.In(3), var = n.In(4);
  const weft_dtype dt = im.Dtype(scale);
  if (dt != WEFT_FLOAT32 && dt != WEFT_FLOAT64)
    Unsupported(std::string("BatchNormalization of ") + weft_dtype_name(dt));
  if (n.Int("training_mode", 0) != 0) {
    BatchNormalizationTraining(n, eps, dt);
    return;
  }
  n.Ignore("momentum");  // updates running statistics in training only
  // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a:
  // constants when the statistics are, so one Mul and one Add per element.
  weft_output a = im.Op(
      "Mul", {scale, im.Op("Rsqrt", {im.Op("Add", {var, im.Scalar(dt, eps)})})});
  weft_output b = im.Op("Sub", {bias, im.Op("Mul", {mean, a})});
  if (n.PrefersNhwc(0)) {
    weft_output x = n.InNhwc(0);
    n.SetOutNhwc(0, im.Op("Add", {im.Op("Mul", {x, a}), b}));
    return;
  }
  weft_output x = n.In(0);
  const int32_t rank = im.Rank(x);
  if (rank < 2) Unsupported("an input of rank below 2 or unknown");
  n.SetOut(0, im.Op("Add", {im.Op("Mul", {x, PerChannel(im, a, rank)}),
                            PerChannel(im, b, rank)}));
}

weft_output MeanOver(Importer& im, weft_output x,
                     const std::vector<int64_t>& axes) {
  return im.Op("Mean", {x}, [&](weft_op_builder* b) {
    weft_op_set_attr_int_list(b, "axes", axes.data(),
                              static_cast<int32_t>(axes.size()));
    weft_op_set_attr_bool(b, "keep_dims", 1);
  });
}

void InstanceNormalization(OnnxNode& n) {
  Importer& im = n.importer();
  const double eps = n.Float("epsilon", 1e-5);
  weft_output x = n.In(0);
  RequireFloatInput(im, x, "InstanceNormalization");
  const int32_t rank = im.Rank(x);
  if (rank < 3) Unsupported("an input of rank below 3 or unknown");
  std::vector<int64_t> axes;
  for (int32_t i = 2; i < rank; ++i) axes.push_back(i);
  weft_output d = im.Op("Sub", {x, MeanOver(im, x, axes)});
  weft_output var = MeanOver(im, im.Op("Square", {d}), axes);
  weft_output inv =
      im.Op("Rsqrt", {im.Op("Add", {var, im.Scalar(im.Dtype(x), eps)})});
  weft_output y = im.Op("Mul", {im.Op("Mul", {d, inv}),
                                PerChannel(im, n.In(1), rank)});
  n.SetOut(0, im.Op("Add", {y, PerChannel(im, n.In(2), rank)}));
}

void LayerNormalization(OnnxNode& n) {
  Importer& im = n.importer();
  const double eps = n.Float("epsilon", 1e-5);
  n.Ignore("stash_type");  // float32 statistics: what float32 inputs get
  weft_output x = n.In(0);
  RequireFloatInput(im, x, "LayerNormalization");
  const int32_t rank = im.Rank(x);
  if (rank < 1) Unsupported("an input of unknown rank");
  const int64_t axis = NormalizeAxis(n.Int("axis", -1), rank, "axis");
  std::vector<int64_t> axes;
  for (int32_t i = static_cast<int32_t>(axis); i < rank; ++i) axes.push_back(i);
  weft_output mean = MeanOver(im, x, axes);
  weft_output d = im.Op("Sub", {x, mean});
  weft_output var = MeanOver(im, im.Op("Square", {d}), axes);
  weft_output inv =
      im.Op("Rsqrt", {im.Op("Add", {var, im.Scalar(im.Dtype(x), eps)})});
  weft_output y = im.Op("Mul", {im.Op("Mul", {d, inv}), n.In(1)});
  if (n.Has(2)) y = im.Op("Add", {y, n.In(2)});
  n.SetOut(0, y);
  n.SetOut(1, mean);
  n.SetOut(2, inv);
}

void MeanVarianceNormalization(OnnxNode& n) {
  Importer& im = n.importer();
  std::vector<int64_t> axes = n.Ints("axes", {0, 2, 3});
  weft_output x = n.In(0);
  RequireFloatInput(im, x, "MeanVarianceNormalization");
  // ONNX's definition: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
  weft_output mean = MeanOver(im, x, axes);
  weft_output var = im.Op("Sub", {MeanOver(im, im.Op("Square", {x}), axes),
                                  im.Op("Square", {mean})});
  weft_output std = im.Op("Add", {im.Op("Sqrt", {var}),
                                  im.Scalar(im.Dtype(x), 1e-9)});
  n.SetOut(0, im.Op("Div", {im.Op("Sub", {x, mean}), std}));
}

void Lrn(OnnxNode& n) {
  Importer& im = n.importer();
  const double alpha = n.Float("alpha", 1e-4), beta = n.Float("beta", 0.75);
  const double bias = n.Float("bias", 1.0);
  const int64_t size = n.Int("size", 0);
  if (size < 1 || size > 4096)
    Fail(WEFT_INVALID_ARGUMENT, "size " + std::to_string(size));
  weft_output x = n.In(0);
  RequireFloatInput(im, x, "LRN");
  std::vector<int64_t> dims = im.Dims(x);
  if (dims.size() < 3 || dims[1] < 0)
    Unsupported("an input of rank below 3, or of unknown channels");
  // The sum over a window of channels is an average pool over the channel
  // axis of x^2 seen as an NHWC image [N, C, rest, 1].
  weft_output sq = im.Reshape(im.Op("Square", {x}), {dims[0], dims[1], -1, 1});
  const int64_t before[2] = {(size - 1) / 2, 0};
  const int64_t after[2] = {size - 1 - (size - 1) / 2, 0};
  Window w;
  w.k[0] = size;
  weft_output avg = im.Op("AvgPool", {PadNhwc(im, sq, before, after, 0)},
                          [&](weft_op_builder* b) {
                            PoolAttrs(b, w, PadMode::kValid);
                          });
  avg = im.Op("ReshapeLike", {avg, x});
  const weft_dtype dt = im.Dtype(x);
  weft_output base = im.Op(
      "Add", {im.Op("Mul", {avg, im.Scalar(dt, alpha)}), im.Scalar(dt, bias)});
  n.SetOut(0, im.Op("Div", {x, im.Op("Pow", {base, im.Scalar(dt, beta)})}));
}

}  // namespace

void AddNnConverters(ConverterMap* m) {
  ConverterMap& map = *m;
  map["Conv"] = Conv;
  map["MaxPool"] = MaxPoolOp;
  map["AveragePool"] = AveragePool;
  map["GlobalAveragePool"] = [](OnnxNode& n) { GlobalPool(n, "Mean"); };
  map["GlobalMaxPool"] = [](OnnxNode& n) { GlobalPool(n, "Max"); };
  map["BatchNormalization"] = BatchNormalization;
  map["InstanceNormalization"] = InstanceNormalization;
  map["LayerNormalization"] = LayerNormalization;
  map["MeanVarianceNormalization"] = MeanVarianceNormalization;
  map["LRN"] = Lrn;
}

}  // namespace onnx_import
}  // namespace weft
