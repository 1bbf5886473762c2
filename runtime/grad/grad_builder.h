// What gradient functions share: building nodes under the context's scope
// with the public graph API, a sticky status so that a function reads as
// the formula it computes and checks once at the end, and the reductions
// that undo broadcasting.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "base/status.h"
#include "grad/registry.h"
#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {

class GradBuilder {
 public:
  explicit GradBuilder(weft_gradient_context* ctx) : ctx_(ctx) {}
  ~GradBuilder() { weft_status_destroy(status_); }
  GradBuilder(const GradBuilder&) = delete;
  GradBuilder& operator=(const GradBuilder&) = delete;

  weft_gradient_context* ctx() const { return ctx_; }
  const weft_node* node() const { return ctx_->node; }
  weft_output x(int i) const { return ctx_->node->inputs[i]; }
  weft_output y(int i = 0) const { return weft_output{ctx_->node, i}; }
  weft_output dy(int i = 0) const { return ctx_->dy[i]; }
  bool wanted(int i) const { return ctx_->wanted[i]; }
  const AttrValue* attr(const char* name) const {
    return FindAttr(ctx_->node->attrs, name);
  }
  static const ShapeInfo& Shape(weft_output o) {
    return o.node->output_shapes[o.index];
  }
  static weft_dtype Dtype(weft_output o) {
    return o.node->output_dtypes[o.index];
  }

  // A builder for a node named "<scope>/<op>_<k>"; add attributes, then
  // Finish.  After an earlier failure the node is abandoned at Finish.
  weft_op_builder* Begin(const char* op,
                         std::initializer_list<weft_output> inputs) {
    std::string name = ctx_->scope + "/" + op + "_" + std::to_string(count_++);
    weft_op_builder* b = weft_op_begin(ctx_->graph, op, name.c_str());
    for (const weft_output& in : inputs) weft_op_add_input(b, in);
    return b;
  }
  weft_output Finish(weft_op_builder* b) {
    if (status_ != nullptr) {
      weft_op_abandon(b);
      return weft_output{nullptr, 0};
    }
    weft_node* n = nullptr;
    status_ = weft_op_finish(b, &n);
    return weft_output{n, 0};
  }
  weft_output Apply(const char* op, std::initializer_list<weft_output> inputs) {
    return Finish(Begin(op, inputs));
  }

  // Copies the forward node's attributes `names` (those it has) onto `b`,
  // for gradient ops that share the forward op's window or axes.
  void CopyAttrs(weft_op_builder* b,
                 std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      const AttrValue* v = attr(name);
      if (v == nullptr) continue;
      switch (v->type) {
        case AttrType::kBool:
          weft_op_set_attr_bool(b, name, v->i != 0);
          break;
        case AttrType::kInt:
          weft_op_set_attr_int(b, name, v->i);
          break;
        case AttrType::kFloat:
          weft_op_set_attr_float(b, name, v->f);
          break;
        case AttrType::kString:
          weft_op_set_attr_string(b, name, v->s.c_str());
          break;
        case AttrType::kIntList:
          weft_op_set_attr_int_list(b, name, v->ints.data(),
                                    static_cast<int32_t>(v->ints.size()));
          break;
        default:  // no gradient op shares attributes of other kinds
          break;
      }
    }
  }

  // A scalar of `dtype` (float16 and bfloat16 through a float32 Cast).
  weft_output Scalar(double v, weft_dtype dtype) {
    if (status_ != nullptr) return weft_output{nullptr, 0};
    bool wide = dtype == WEFT_FLOAT64;
    weft_dtype t = wide ? WEFT_FLOAT64 : WEFT_FLOAT32;
    float f = static_cast<float>(v);
    weft_tensor* value = nullptr;
    status_ = weft_tensor_create_copy(
        t, nullptr, 0, wide ? (void*)&v : (void*)&f, wide ? 8 : 4, &value);
    if (status_ != nullptr) return weft_output{nullptr, 0};
    std::string name = ctx_->scope + "/Const_" + std::to_string(count_++);
    weft_output out{nullptr, 0};
    status_ = weft_graph_constant(ctx_->graph, name.c_str(), value, &out);
    weft_tensor_destroy(value);
    if (status_ == nullptr && t != dtype) {
      weft_op_builder* b = Begin("Cast", {out});
      weft_op_set_attr_dtype(b, "DstT", dtype);
      out = Finish(b);
    }
    return out;
  }

  // An int32 vector constant (a shape).
  weft_output Int32s(const std::vector<int32_t>& v) {
    if (status_ != nullptr) return weft_output{nullptr, 0};
    int64_t n = static_cast<int64_t>(v.size());
    weft_tensor* value = nullptr;
    status_ = weft_tensor_create_copy(WEFT_INT32, &n, 1, v.data(),
                                      v.size() * sizeof(int32_t), &value);
    if (status_ != nullptr) return weft_output{nullptr, 0};
    std::string name = ctx_->scope + "/Const_" + std::to_string(count_++);
    weft_output out{nullptr, 0};
    status_ = weft_graph_constant(ctx_->graph, name.c_str(), value, &out);
    weft_tensor_destroy(value);
    return out;
  }

  // g (of a broadcast result) summed back to the shape of `like`; g itself
  // when the static shapes show no broadcasting happened.
  weft_output SumTo(weft_output g, weft_output like) {
    if (status_ != nullptr) return weft_output{nullptr, 0};
    const ShapeInfo& a = Shape(g);
    const ShapeInfo& b = Shape(like);
    if (a.fully_known() && b.fully_known() && a.dims == b.dims) return g;
    return Apply("SumToShapeOf", {g, like});
  }

  // g viewed with the shape of `like` (same element count): a Reshape when
  // at most one of like's dims is unknown, else ReshapeLike.
  weft_output ReshapeTo(weft_output g, weft_output like) {
    if (status_ != nullptr) return weft_output{nullptr, 0};
    const ShapeInfo& s = Shape(like);
    int unknown = 0;
    for (int64_t d : s.dims) unknown += d < 0;
    if (!s.known_rank() || unknown > 1) return Apply("ReshapeLike", {g, like});
    if (Shape(g).fully_known() && Shape(g).dims == s.dims) return g;
    weft_op_builder* b = Begin("Reshape", {g});
    weft_op_set_attr_int_list(b, "shape", s.dims.data(),
                              static_cast<int32_t>(s.dims.size()));
    return Finish(b);
  }

  // Records input i's gradient when it is wanted.
  void Set(int i, weft_output g) {
    if (status_ != nullptr || !ctx_->wanted[i] || g.node == nullptr) return;
    status_ = weft_gradient_set_input_grad(ctx_, i, g);
  }

  void Fail(weft_status* s) {
    if (status_ == nullptr)
      status_ = s;
    else
      weft_status_destroy(s);
  }

  // The first failure, handed to the caller (nullptr when none).
  weft_status* Done() {
    weft_status* s = status_;
    status_ = nullptr;
    return s;
  }

 private:
  weft_gradient_context* ctx_;
  weft_status* status_ = nullptr;
  int count_ = 0;
};

// Registers `fn(GradBuilder&)` as the gradient of `op`.
template <typename Fn>
void RegisterGradientWith(const std::string& op, Fn fn) {
  RegisterGradient(op, [fn](weft_gradient_context* ctx) -> weft_status* {
    GradBuilder g(ctx);
    fn(g);
    return g.Done();
  });
}

}  // namespace weft
