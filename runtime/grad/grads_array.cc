// Gradients of the array ops: data movement, so each gradient moves the
// incoming gradient back (and sums where the forward op copied).
#include <vector>

#include "grad/grad_builder.h"

namespace weft {
namespace {

int32_t NormalizeAxis(int64_t axis, int32_t rank) {
  return static_cast<int32_t>(axis < 0 ? axis + rank : axis);
}

void IntList(weft_op_builder* b, const char* name,
             const std::vector<int64_t>& v) {
  weft_op_set_attr_int_list(b, name, v.data(), static_cast<int32_t>(v.size()));
}

void ConcatGrad(GradBuilder& g) {
  const weft_node* n = g.node();
  const ShapeInfo& out = GradBuilder::Shape(g.y());
  if (!out.known_rank()) {
    g.Fail(Errorf(WEFT_UNIMPLEMENTED,
                  "the gradient of Concat '%s' needs its "
                  "rank known when the graph is built",
                  n->name.c_str()));
    return;
  }
  int32_t axis = NormalizeAxis(g.attr("axis")->i, out.rank);
  int64_t offset = 0;  // where input i starts along axis
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    if (g.wanted(static_cast<int>(i))) {
      if (offset < 0) {
        g.Fail(Errorf(WEFT_UNIMPLEMENTED,
                      "the gradient of Concat '%s' for input %zu needs the "
                      "sizes of the inputs before it along axis %d known "
                      "when the graph is built",
                      n->name.c_str(), i, axis));
        return;
      }
      std::vector<int64_t> begin(out.rank, 0);
      begin[axis] = offset;
      weft_op_builder* b = g.Begin("PadGrad", {g.dy(), g.x(i)});
      IntList(b, "begin", begin);
      g.Set(static_cast<int>(i), g.Finish(b));
    }
    int64_t d = GradBuilder::Shape(g.x(i)).dims[axis];
    offset = offset < 0 || d < 0 ? -1 : offset + d;
  }
}

// Split and Unpack: their outputs' gradients joined back (by Concat or
// Pack), zeros standing in for outputs no gradient reached.
void JoinOutputs(GradBuilder& g, const char* join) {
  const weft_node* n = g.node();
  std::vector<weft_output> parts;
  for (size_t o = 0; o < n->output_dtypes.size(); ++o) {
    weft_output d = g.dy(static_cast<int>(o));
    if (d.node == nullptr) d = g.Apply("ZerosLike", {g.y(static_cast<int>(o))});
    parts.push_back(d);
  }
  weft_op_builder* b = g.Begin(join, {});
  weft_op_add_input_list(b, parts.data(), static_cast<int32_t>(parts.size()));
  weft_op_set_attr_int(b, "axis", g.attr("axis")->i);
  g.Set(0, g.Finish(b));
}

}  // namespace

void RegisterArrayGradients() {
  for (const char* op : {"Reshape", "ExpandDims", "Squeeze"})
    RegisterGradientWith(
        op, [](GradBuilder& g) { g.Set(0, g.ReshapeTo(g.dy(), g.x(0))); });
  RegisterGradientWith("ReshapeLike", [](GradBuilder& g) {
    g.Set(0, g.ReshapeTo(g.dy(), g.x(0)));
  });
  RegisterGradientWith("Transpose", [](GradBuilder& g) {
    const std::vector<int64_t>& perm = g.attr("perm")->ints;
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[NormalizeAxis(perm[i], static_cast<int32_t>(perm.size()))] =
          static_cast<int64_t>(i);
    weft_op_builder* b = g.Begin("Transpose", {g.dy()});
    IntList(b, "perm", inverse);
    g.Set(0, g.Finish(b));
  });
  RegisterGradientWith("Slice", [](GradBuilder& g) {
    weft_op_builder* b = g.Begin("SliceGrad", {g.dy(), g.x(0)});
    IntList(b, "begin", g.attr("begin")->ints);
    g.Set(0, g.Finish(b));
  });
  RegisterGradientWith("Pad", [](GradBuilder& g) {
    const std::vector<int64_t>& pads = g.attr("paddings")->ints;
    std::vector<int64_t> begin;
    for (size_t i = 0; i < pads.size(); i += 2) begin.push_back(pads[i]);
    weft_op_builder* b = g.Begin("PadGrad", {g.dy(), g.x(0)});
    IntList(b, "begin", begin);
    g.Set(0, g.Finish(b));
  });
  // Tile's copies sum back, as broadcasting's do.
  RegisterGradientWith(
      "Tile", [](GradBuilder& g) { g.Set(0, g.SumTo(g.dy(), g.x(0))); });
  RegisterGradientWith(
      "Fill", [](GradBuilder& g) { g.Set(0, g.SumTo(g.dy(), g.x(0))); });
  RegisterGradientWith("Concat", ConcatGrad);
  RegisterGradientWith("Pack", [](GradBuilder& g) {
    const weft_node* n = g.node();
    weft_op_builder* b = g.Begin("Unpack", {g.dy()});
    weft_op_set_attr_int(b, "num", static_cast<int64_t>(n->inputs.size()));
    weft_op_set_attr_int(b, "axis", g.attr("axis")->i);
    weft_output parts = g.Finish(b);
    for (size_t i = 0; i < n->inputs.size(); ++i)
      g.Set(static_cast<int>(i),
            weft_output{parts.node, static_cast<int32_t>(i)});
  });
  RegisterGradientWith("Split",
                       [](GradBuilder& g) { JoinOutputs(g, "Concat"); });
  RegisterGradientWith("Unpack",
                       [](GradBuilder& g) { JoinOutputs(g, "Pack"); });
  RegisterGradientWith("Gather", [](GradBuilder& g) {
    if (!g.wanted(0)) return;
    weft_op_builder* b = g.Begin("GatherGrad", {g.dy(), g.x(1), g.x(0)});
    weft_op_set_attr_int(b, "axis", g.attr("axis")->i);
    g.Set(0, g.Finish(b));
  });

  // The gradient ops of this family.  SliceGrad and PadGrad are each
  // other's gradient in `grad`; `like` gives only a shape.
  RegisterGradientWith("SliceGrad", [](GradBuilder& g) {
    weft_op_builder* b = g.Begin("PadGrad", {g.dy(), g.x(0)});
    IntList(b, "begin", g.attr("begin")->ints);
    g.Set(0, g.Finish(b));
  });
  RegisterGradientWith("PadGrad", [](GradBuilder& g) {
    weft_op_builder* b = g.Begin("SliceGrad", {g.dy(), g.x(0)});
    IntList(b, "begin", g.attr("begin")->ints);
    g.Set(0, g.Finish(b));
  });
  // Their gradients would broadcast and gather: not built.
  RegisterNotDifferentiable("SumToShapeOf");
  RegisterNotDifferentiable("GatherGrad");
}

}  // namespace weft
