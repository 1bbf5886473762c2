// Gradients through TensorArrays (runtime/ops/tensor_array.cc), as
// TensorFlow takes them: each array gets a gradient array named
// "<array>@<gradients scope>" (one per weft_gradients call, made on first
// use, growing), and
//   Read(i)      -> writes dvalue to gradient element i (adding when two
//                   reads of one element both get a gradient);
//   Write(i, v)  -> dv = gradient element i (zeros when none was written);
//   Stack        -> unstacks dvalue into the gradient array;
//   Unstack(v)   -> dv = the gradient array stacked (zeros where none).
// Flows carry the order: a gradient read happens after the gradient writes
// of every later forward read of the array, because its flow is the sum of
// theirs.  The gradient array lives at the same loop depth as the array,
// so inside a backward loop it is one per iteration of the loops around it,
// exactly as the array was in the forward loop.
#include <string>

#include "base/status.h"
#include "grad/grad_builder.h"
#include "graph/graph.h"
#include "ops/registry.h"

namespace weft {
namespace {

std::string GradArray(GradBuilder& g) {
  const AttrValue* a = g.attr("tensor_array");
  return (a != nullptr ? a->s : g.node()->name) + "@" +
         OutermostGradientScope();
}

// An op on the gradient array of the forward node's array.
weft_op_builder* OnGradArray(GradBuilder& g, const char* op,
                             std::initializer_list<weft_output> inputs) {
  weft_op_builder* b = g.Begin(op, inputs);
  weft_op_set_attr_string(b, "tensor_array", GradArray(g).c_str());
  const AttrValue* depth = g.attr("depth");
  weft_op_set_attr_int(b, "depth", depth != nullptr ? depth->i : 0);
  return b;
}

// The dims of `v` as an int32 vector: a constant when its static shape is
// fully known, else its Shape (a forward value: inside a loop gradient it
// is saved per iteration).
weft_output ShapeOf(GradBuilder& g, weft_output v) {
  const ShapeInfo& s = GradBuilder::Shape(v);
  if (!s.fully_known()) return g.Apply("Shape", {v});
  return g.Int32s(std::vector<int32_t>(s.dims.begin(), s.dims.end()));
}

void SetShapeAttr(weft_op_builder* b, const char* name, const ShapeInfo& s) {
  weft_op_set_attr_shape(b, name, s.known_rank() ? s.dims.data() : nullptr,
                         s.rank);
}

}  // namespace

void RegisterTensorArrayGradients() {
  RegisterGradientWith("TensorArrayRead", [](GradBuilder& g) {
    weft_output dy = g.dy(0);
    weft_op_builder* b =
        OnGradArray(g, "TensorArrayWrite", {g.x(0), dy, dy});
    weft_op_set_attr_bool(b, "aggregate", 1);
    g.Set(1, g.Finish(b));
  });
  RegisterGradientWith("TensorArrayWrite", [](GradBuilder& g) {
    weft_output dflow = g.dy(0);
    if (g.wanted(1)) {
      weft_output value = g.x(1);
      weft_output shape = ShapeOf(g, value);
      weft_op_builder* b =
          OnGradArray(g, "TensorArrayGradRead", {g.x(0), dflow, shape});
      weft_op_set_attr_dtype(b, "dtype", GradBuilder::Dtype(value));
      SetShapeAttr(b, "element_shape", GradBuilder::Shape(value));
      g.Set(1, g.Finish(b));
    }
    g.Set(2, dflow);
  });
  RegisterGradientWith("TensorArrayStack", [](GradBuilder& g) {
    weft_output dy = g.dy(0);
    weft_op_builder* b = OnGradArray(g, "TensorArrayUnstack", {dy, dy});
    weft_op_set_attr_bool(b, "aggregate", 1);
    g.Set(0, g.Finish(b));
  });
  RegisterGradientWith("TensorArrayUnstack", [](GradBuilder& g) {
    weft_output dflow = g.dy(0);
    if (g.wanted(0)) {
      weft_output value = g.x(0);
      weft_output shape = ShapeOf(g, value);
      weft_op_builder* b =
          OnGradArray(g, "TensorArrayGradStack", {dflow, shape});
      weft_op_set_attr_dtype(b, "dtype", GradBuilder::Dtype(value));
      ShapeInfo elem = GradBuilder::Shape(value);
      if (elem.known_rank()) {
        elem.rank -= 1;
        elem.dims.erase(elem.dims.begin());
      }
      SetShapeAttr(b, "element_shape", elem);
      g.Set(0, g.Finish(b));
    }
    g.Set(1, dflow);
  });
  // The array's creation and size carry no gradient (its size is an int).
  for (const char* op : {"TensorArray", "TensorArraySize"})
    RegisterNotDifferentiable(op);
  // Second derivatives through a TensorArray are refused, not zero.
  for (const char* op : {"TensorArrayGradRead", "TensorArrayGradStack"})
    RegisterGradient(op, [](weft_gradient_context* ctx) -> weft_status* {
      return Errorf(WEFT_UNIMPLEMENTED,
                    "node '%s' (%s): gradients of a TensorArray's gradient "
                    "(second derivatives) are not implemented",
                    ctx->node->name.c_str(), ctx->node->op_type.c_str());
    });
}

}  // namespace weft
