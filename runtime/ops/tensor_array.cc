// TensorArrays: lists of tensors of one dtype, written and read by index
// within one run — the sequences a loop consumes and produces (TensorFlow's
// TensorArray; Yu et al. 2018, section 4.3).  Runtime ops: an array holds
// references to its elements wherever they live, so every device has them
// without kernels.
//
// An array is named by the TensorArray node that makes it and exists once
// per run and per iteration of the loops around that node (attribute
// `depth`: how many loops enclose it; its key is the name plus the first
// `depth` iteration numbers of whoever touches it).  Every op on an array
// takes a `flow_in` value and the writing ones return a `flow_out`: the
// flow orders the operations (a loop carries it as a loop variable) and
// carries the gradient's data dependencies; its value means nothing.
//
//   TensorArray(size) -> flow                 a new array of `size` slots
//   TensorArrayWrite(index, value, flow_in) -> flow_out
//   TensorArrayRead(index, flow_in) -> value
//   TensorArrayStack(flow_in) -> [size, element...]
//   TensorArrayUnstack(value, flow_in) -> flow_out   element i = value[i]
//   TensorArraySize(flow_in) -> int32
// and, for gradients (runtime/grad/grads_tensor_array.cc):
//   TensorArrayWrite/Unstack with `aggregate`: the gradient array is made
//     on first use (growing) and a second write to an element adds to it;
//   TensorArrayGradRead(index, flow_in, shape), TensorArrayGradStack(
//     flow_in, shape): elements no gradient reached read as zeros of
//     `shape`.
// Rules (as TensorFlow's): an element is written once (a second write is an
// error, so a gradient cannot be overwritten silently); reading an element
// never written is an error; Stack needs every element written and of one
// shape; an index past the size is an error unless the array is
// dynamic_size, when it grows.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "ops/registry.h"

namespace weft {
namespace {

class TensorArray : public RunResource {
 public:
  std::mutex mu;
  std::string name;
  weft_dtype dtype = WEFT_DTYPE_INVALID;  // INVALID: the first write's
  ShapeInfo element_shape;
  bool dynamic_size = false;
  bool aggregate = false;
  std::vector<TensorValue> elements;
  std::vector<char> written;
  // For aggregating writes: an Add node the device's kernel runs as.
  std::unique_ptr<weft_node> add;
};

const weft_node* N(RuntimeOpContext* ctx) { return ctx->node(); }
const std::string& ArrayName(RuntimeOpContext* ctx) {
  const AttrValue* a = FindAttr(N(ctx)->attrs, "tensor_array");
  return a != nullptr ? a->s : N(ctx)->name;
}
int64_t Attr(RuntimeOpContext* ctx, const char* name) {
  const AttrValue* a = FindAttr(N(ctx)->attrs, name);
  return a != nullptr ? a->i : 0;
}

// The array's key: its name and the iterations of the loops around the
// node that made it.
weft_status* Key(RuntimeOpContext* ctx, std::string* key) {
  int64_t depth = Attr(ctx, "depth");
  if (depth < 0 || depth > ctx->frame_depth())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s) runs inside %d loop(s) but names "
                  "TensorArray '%s' made inside %lld: an array is used only "
                  "within the loop iteration that made it",
                  N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                  ctx->frame_depth(), ArrayName(ctx).c_str(),
                  static_cast<long long>(depth));
  *key = "TensorArray:" + ArrayName(ctx);
  for (int32_t l = 0; l < depth; ++l)
    *key += "/" + std::to_string(ctx->iteration(l));
  return nullptr;
}

std::string Where(RuntimeOpContext* ctx) {
  std::string w = "TensorArray '" + ArrayName(ctx) + "'";
  if (ctx->frame_depth() > 0) w += " (" + ctx->FrameDescription() + ")";
  return w;
}

// The array the node names; made (empty, growing) when absent and `make`.
weft_status* Find(RuntimeOpContext* ctx, bool make, TensorArray** out) {
  std::string key;
  WEFT_RETURN_IF_ERROR(Key(ctx, &key));
  *out = nullptr;
  if (!make) {
    *out = static_cast<TensorArray*>(ctx->resources()->Find(key));
    return nullptr;
  }
  RunResource* r = nullptr;
  WEFT_RETURN_IF_ERROR(ctx->resources()->GetOrCreate(
      key,
      [&](std::unique_ptr<RunResource>* made) -> weft_status* {
        auto ta = std::make_unique<TensorArray>();
        ta->name = ArrayName(ctx);
        ta->dynamic_size = true;
        ta->aggregate = true;
        *made = std::move(ta);
        return nullptr;
      },
      &r));
  *out = static_cast<TensorArray*>(r);
  return nullptr;
}

weft_status* MustFind(RuntimeOpContext* ctx, TensorArray** out) {
  WEFT_RETURN_IF_ERROR(Find(ctx, false, out));
  if (*out == nullptr)
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "node '%s' (%s): %s does not exist in this run (its "
                  "TensorArray node did not run before it: pass the "
                  "array's flow from the node that made it)",
                  N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                  Where(ctx).c_str());
  return nullptr;
}

// The array a node works on: a gradient-side node (`aggregate` writes,
// TensorArrayGrad* reads) makes or tolerates a missing gradient array;
// any other needs the array made by its TensorArray node.
weft_status* Open(RuntimeOpContext* ctx, TensorArray** out) {
  const std::string& op = N(ctx)->op_type;
  if (Attr(ctx, "aggregate") != 0) return Find(ctx, true, out);
  if (op.compare(0, 15, "TensorArrayGrad") == 0) return Find(ctx, false, out);
  return MustFind(ctx, out);
}

weft_status* ReadInt(RuntimeOpContext* ctx, int32_t input, int64_t* out) {
  const TensorValue& v = ctx->input(input);
  if (v.dtype != WEFT_INT32 || v.elements() != 1)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): input %d must be one int32, got %s %s",
                  N(ctx)->name.c_str(), N(ctx)->op_type.c_str(), input,
                  weft_dtype_name(v.dtype), v.dims.ToString().c_str());
  int32_t i = 0;
  WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, &i, sizeof i));
  *out = i;
  return nullptr;
}

// A shape input (int32 vector) as dims.
weft_status* ReadShape(RuntimeOpContext* ctx, int32_t input, Dims* out) {
  const TensorValue& v = ctx->input(input);
  if (v.dtype != WEFT_INT32 || v.dims.rank() != 1 ||
      v.elements() > WEFT_MAX_RANK)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): input %d must be an int32 shape vector, "
                  "got %s %s", N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                  input, weft_dtype_name(v.dtype), v.dims.ToString().c_str());
  int32_t d[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, d, v.byte_size()));
  int64_t dims[WEFT_MAX_RANK];
  for (int64_t k = 0; k < v.elements(); ++k) {
    if (d[k] < 0)
      return Errorf(WEFT_INVALID_ARGUMENT, "node '%s' (%s): negative dim in "
                    "shape input", N(ctx)->name.c_str(),
                    N(ctx)->op_type.c_str());
    dims[k] = d[k];
  }
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(CheckedByteSize(WEFT_FLOAT64, dims,
                                       static_cast<int32_t>(v.elements()),
                                       &bytes));
  *out = Dims(dims, static_cast<int32_t>(v.elements()));
  return nullptr;
}

bool Fits(const ShapeInfo& s, const Dims& d) {
  if (s.rank < 0) return true;
  if (s.rank != d.rank()) return false;
  for (int32_t i = 0; i < s.rank; ++i)
    if (s.dims[i] >= 0 && s.dims[i] != d[i]) return false;
  return true;
}

weft_status* Zeros(RuntimeOpContext* ctx, weft_dtype dtype, const Dims& dims,
                   TensorValue* out) {
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(CheckedByteSize(dtype, dims.data(), dims.rank(),
                                       &bytes));
  std::vector<char> zero(bytes);
  return ctx->FromHost(dtype, dims, zero.data(), out);
}

// Element `index` := value (or += value for an aggregating array).  Called
// with ta->mu held.
weft_status* Put(RuntimeOpContext* ctx, TensorArray* ta, int64_t index,
                 TensorValue value) {
  if (ta->dtype == WEFT_DTYPE_INVALID) ta->dtype = value.dtype;
  if (value.dtype != ta->dtype)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): writing %s to %s of %s",
                  N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                  weft_dtype_name(value.dtype), Where(ctx).c_str(),
                  weft_dtype_name(ta->dtype));
  if (!Fits(ta->element_shape, value.dims))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): writing a value of shape %s to %s whose "
                  "elements have shape %s", N(ctx)->name.c_str(),
                  N(ctx)->op_type.c_str(), value.dims.ToString().c_str(),
                  Where(ctx).c_str(), ta->element_shape.ToString().c_str());
  if (index < 0 || (!ta->dynamic_size &&
                    index >= static_cast<int64_t>(ta->elements.size())))
    return Errorf(WEFT_OUT_OF_RANGE,
                  "node '%s' (%s): index %lld is outside %s of size %zu",
                  N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                  static_cast<long long>(index), Where(ctx).c_str(),
                  ta->elements.size());
  if (index >= static_cast<int64_t>(ta->elements.size())) {
    if (index >= (int64_t{1} << 31))
      return Errorf(WEFT_OUT_OF_RANGE, "node '%s' (%s): index %lld is too "
                    "large", N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                    static_cast<long long>(index));
    ta->elements.resize(static_cast<size_t>(index) + 1);
    ta->written.resize(static_cast<size_t>(index) + 1, 0);
  }
  size_t i = static_cast<size_t>(index);
  if (!ta->written[i]) {
    ta->elements[i] = std::move(value);
    ta->written[i] = 1;
    return nullptr;
  }
  if (!ta->aggregate)
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "node '%s' (%s): element %lld of %s is already written (an "
                  "element is written once)", N(ctx)->name.c_str(),
                  N(ctx)->op_type.c_str(), static_cast<long long>(index),
                  Where(ctx).c_str());
  const TensorValue& old = ta->elements[i];
  if (!(old.dims == value.dims))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): adding a gradient of shape %s to element "
                  "%lld of %s, of shape %s", N(ctx)->name.c_str(),
                  N(ctx)->op_type.c_str(), value.dims.ToString().c_str(),
                  static_cast<long long>(index), Where(ctx).c_str(),
                  old.dims.ToString().c_str());
  if (ta->add == nullptr) {
    auto add = std::make_unique<weft_node>();
    add->name = ta->name + "/aggregate";
    add->op_type = "Add";
    add->def = OpRegistry::Global().Find("Add");
    AttrValue t;
    t.type = AttrType::kDtype;
    t.i = ta->dtype;
    SetAttr(&add->attrs, "T", t);
    add->output_dtypes = {ta->dtype};
    add->output_shapes = {ShapeInfo::Unknown()};
    ta->add = std::move(add);
  }
  TensorValue a, b;
  WEFT_RETURN_IF_ERROR(ctx->Localize(old, &a));
  WEFT_RETURN_IF_ERROR(ctx->Localize(value, &b));
  const TensorValue* ins[2] = {&a, &b};
  TensorValue sum;
  WEFT_RETURN_IF_ERROR(ctx->RunKernel(ta->add.get(), ins, 2, &sum, 1));
  ta->elements[i] = std::move(sum);
  return nullptr;
}

// The output flow of a writing op: a scalar (its value means nothing).
weft_status* Flow(RuntimeOpContext* ctx) {
  float flow = 0;
  TensorValue out;
  WEFT_RETURN_IF_ERROR(ctx->FromHost(WEFT_FLOAT32, Dims(), &flow, &out));
  ctx->set_output(0, std::move(out));
  return nullptr;
}

weft_status* Create(RuntimeOpContext* ctx) {
  if (Attr(ctx, "depth") != ctx->frame_depth())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (TensorArray) runs inside %d loop(s) but its "
                  "depth attribute says %lld (weft_tensor_array_create sets "
                  "it)", N(ctx)->name.c_str(), ctx->frame_depth(),
                  static_cast<long long>(Attr(ctx, "depth")));
  int64_t size = 0;
  WEFT_RETURN_IF_ERROR(ReadInt(ctx, 0, &size));
  if (size < 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (TensorArray): size %lld is negative",
                  N(ctx)->name.c_str(), static_cast<long long>(size));
  std::string key;
  WEFT_RETURN_IF_ERROR(Key(ctx, &key));
  const AttrMap& attrs = N(ctx)->attrs;
  bool made = false;
  RunResource* r = nullptr;
  WEFT_RETURN_IF_ERROR(ctx->resources()->GetOrCreate(
      key,
      [&](std::unique_ptr<RunResource>* out) -> weft_status* {
        auto ta = std::make_unique<TensorArray>();
        ta->name = N(ctx)->name;
        ta->dtype = static_cast<weft_dtype>(FindAttr(attrs, "dtype")->i);
        const AttrValue* s = FindAttr(attrs, "element_shape");
        ta->element_shape.rank = static_cast<int32_t>(s->i);
        ta->element_shape.dims = s->ints;
        ta->dynamic_size = FindAttr(attrs, "dynamic_size")->i != 0;
        ta->elements.resize(static_cast<size_t>(size));
        ta->written.assign(static_cast<size_t>(size), 0);
        *out = std::move(ta);
        made = true;
        return nullptr;
      },
      &r));
  if (!made)
    return Errorf(WEFT_INTERNAL, "node '%s' (TensorArray) ran twice in one "
                  "iteration", N(ctx)->name.c_str());
  return Flow(ctx);
}

weft_status* Write(RuntimeOpContext* ctx) {
  TensorArray* ta = nullptr;
  WEFT_RETURN_IF_ERROR(Open(ctx, &ta));
  int64_t index = 0;
  WEFT_RETURN_IF_ERROR(ReadInt(ctx, 0, &index));
  {
    std::lock_guard<std::mutex> lock(ta->mu);
    WEFT_RETURN_IF_ERROR(Put(ctx, ta, index, ctx->input(1)));
  }
  return Flow(ctx);
}

weft_status* Unstack(RuntimeOpContext* ctx) {
  TensorArray* ta = nullptr;
  WEFT_RETURN_IF_ERROR(Open(ctx, &ta));
  const TensorValue& v = ctx->input(0);
  if (v.dims.rank() < 1)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (TensorArrayUnstack): a scalar has no elements "
                  "to unstack", N(ctx)->name.c_str());
  const int64_t n = v.dims[0];
  Dims elem(v.dims.data() + 1, v.dims.rank() - 1);
  const uint64_t stride = static_cast<uint64_t>(elem.elements()) *
                          weft_dtype_size(v.dtype);
  std::lock_guard<std::mutex> lock(ta->mu);
  if (!ta->dynamic_size && n > static_cast<int64_t>(ta->elements.size()))
    return Errorf(WEFT_OUT_OF_RANGE,
                  "node '%s' (TensorArrayUnstack): %lld elements do not fit "
                  "%s of size %zu", N(ctx)->name.c_str(),
                  static_cast<long long>(n), Where(ctx).c_str(),
                  ta->elements.size());
  for (int64_t i = 0; i < n; ++i) {
    // Each element is a view of the value's buffer: no copy.
    TensorValue e;
    e.dtype = v.dtype;
    e.dims = elem;
    e.buffer = v.buffer;
    e.offset = v.offset + static_cast<uint64_t>(i) * stride;
    if (stride == 0) e.buffer = BufferRef();
    WEFT_RETURN_IF_ERROR(Put(ctx, ta, i, std::move(e)));
  }
  return Flow(ctx);
}

weft_status* NotWritten(RuntimeOpContext* ctx, int64_t index) {
  return Errorf(WEFT_FAILED_PRECONDITION,
                "node '%s' (%s): element %lld of %s was never written",
                N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                static_cast<long long>(index), Where(ctx).c_str());
}

weft_status* Read(RuntimeOpContext* ctx) {
  const bool grad = N(ctx)->op_type == "TensorArrayGradRead";
  TensorArray* ta = nullptr;
  WEFT_RETURN_IF_ERROR(Open(ctx, &ta));
  int64_t index = 0;
  WEFT_RETURN_IF_ERROR(ReadInt(ctx, 0, &index));
  TensorValue value;
  bool have = false;
  if (ta != nullptr) {
    std::lock_guard<std::mutex> lock(ta->mu);
    if (index < 0 || (!grad && index >= static_cast<int64_t>(
                                            ta->elements.size())))
      return Errorf(WEFT_OUT_OF_RANGE,
                    "node '%s' (%s): index %lld is outside %s of size %zu",
                    N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                    static_cast<long long>(index), Where(ctx).c_str(),
                    ta->elements.size());
    size_t i = static_cast<size_t>(index);
    if (i < ta->elements.size() && ta->written[i]) {
      value = ta->elements[i];
      have = true;
    }
  }
  const weft_dtype dtype =
      static_cast<weft_dtype>(FindAttr(N(ctx)->attrs, "dtype")->i);
  if (!have) {
    if (!grad) return NotWritten(ctx, index);
    // No gradient reached this element: it is zero.
    Dims dims;
    WEFT_RETURN_IF_ERROR(ReadShape(ctx, 2, &dims));
    WEFT_RETURN_IF_ERROR(Zeros(ctx, dtype, dims, &value));
    ctx->set_output(0, std::move(value));
    return nullptr;
  }
  if (value.dtype != dtype)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): reads %s from %s of %s",
                  N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                  weft_dtype_name(dtype), Where(ctx).c_str(),
                  weft_dtype_name(value.dtype));
  TensorValue local;
  WEFT_RETURN_IF_ERROR(ctx->Localize(value, &local));
  ctx->set_output(0, std::move(local));
  return nullptr;
}

weft_status* Stack(RuntimeOpContext* ctx) {
  const bool grad = N(ctx)->op_type == "TensorArrayGradStack";
  TensorArray* ta = nullptr;
  WEFT_RETURN_IF_ERROR(Open(ctx, &ta));
  const weft_dtype dtype =
      static_cast<weft_dtype>(FindAttr(N(ctx)->attrs, "dtype")->i);
  std::unique_lock<std::mutex> lock;
  if (ta != nullptr) lock = std::unique_lock<std::mutex>(ta->mu);
  const int64_t have = ta != nullptr
                           ? static_cast<int64_t>(ta->elements.size())
                           : 0;
  // The stacked shape: given (gradients), or from the elements.
  Dims dims;
  if (grad) {
    WEFT_RETURN_IF_ERROR(ReadShape(ctx, 1, &dims));
    if (dims.rank() < 1 || dims[0] < have)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s): shape %s cannot hold the %lld elements "
                    "of %s", N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                    dims.ToString().c_str(), static_cast<long long>(have),
                    Where(ctx).c_str());
  } else {
    for (int64_t i = 0; i < have; ++i)
      if (!ta->written[static_cast<size_t>(i)]) return NotWritten(ctx, i);
    std::vector<int64_t> d(1, have);
    if (have > 0) {
      const Dims& e = ta->elements[0].dims;
      d.insert(d.end(), e.data(), e.data() + e.rank());
    } else if (ta->element_shape.fully_known()) {
      d.insert(d.end(), ta->element_shape.dims.begin(),
               ta->element_shape.dims.end());
    } else {
      return Errorf(WEFT_FAILED_PRECONDITION,
                    "node '%s' (TensorArrayStack): %s is empty and its "
                    "element shape %s is not fully known, so the stacked "
                    "shape is unknown", N(ctx)->name.c_str(),
                    Where(ctx).c_str(),
                    ta->element_shape.ToString().c_str());
    }
    if (d.size() > WEFT_MAX_RANK)
      return Errorf(WEFT_INVALID_ARGUMENT, "node '%s' (TensorArrayStack): "
                    "stacking adds a dimension past rank %d",
                    N(ctx)->name.c_str(), WEFT_MAX_RANK);
    dims = Dims(d.data(), static_cast<int32_t>(d.size()));
  }
  Dims elem(dims.data() + 1, dims.rank() - 1);
  for (int64_t i = 0; i < have; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (!ta->written[k]) continue;
    const TensorValue& e = ta->elements[k];
    if (e.dtype != dtype || !(e.dims == elem))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s): element %lld of %s is %s %s where "
                    "element 0 is %s %s (stacking needs one shape)",
                    N(ctx)->name.c_str(), N(ctx)->op_type.c_str(),
                    static_cast<long long>(i), Where(ctx).c_str(),
                    weft_dtype_name(e.dtype), e.dims.ToString().c_str(),
                    weft_dtype_name(dtype), elem.ToString().c_str());
  }
  TensorValue out;
  bool any_missing = have < dims[0];
  for (int64_t i = 0; i < have && !any_missing; ++i)
    any_missing = !ta->written[static_cast<size_t>(i)];
  if (any_missing)
    WEFT_RETURN_IF_ERROR(Zeros(ctx, dtype, dims, &out));
  else
    WEFT_RETURN_IF_ERROR(ctx->Allocate(dtype, dims, &out));
  const uint64_t stride =
      static_cast<uint64_t>(elem.elements()) * weft_dtype_size(dtype);
  for (int64_t i = 0; i < have; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (!ta->written[k]) continue;
    WEFT_RETURN_IF_ERROR(ctx->Copy(ta->elements[k], 0, &out,
                                   static_cast<uint64_t>(i) * stride, stride));
  }
  ctx->set_output(0, std::move(out));
  return nullptr;
}

weft_status* Size(RuntimeOpContext* ctx) {
  TensorArray* ta = nullptr;
  WEFT_RETURN_IF_ERROR(MustFind(ctx, &ta));
  int32_t n;
  {
    std::lock_guard<std::mutex> lock(ta->mu);
    n = static_cast<int32_t>(ta->elements.size());
  }
  TensorValue out;
  WEFT_RETURN_IF_ERROR(ctx->FromHost(WEFT_INT32, Dims(), &n, &out));
  ctx->set_output(0, std::move(out));
  return nullptr;
}

// --- schemas ---------------------------------------------------------------

AttrValue UnknownShape() {
  AttrValue v;
  v.type = AttrType::kShape;
  v.i = -1;
  return v;
}

OpDef ArrayOp(const char* name, std::vector<std::string> inputs,
              RuntimeOpFn fn, const char* summary, bool names_array = true) {
  OpDef d = RuntimeOp(name, std::move(inputs), fn, summary);
  if (names_array) d.attrs.push_back(Required("tensor_array", AttrType::kString));
  d.attrs.push_back(Optional("depth", AttrType::kInt, IntValue(0)));
  return d;
}

weft_status* CheckIndex(const InferenceContext& c, size_t k) {
  if (c.input_dtypes[k] != WEFT_INT32)
    return c.Fail("the index must be int32, got %s",
                  weft_dtype_name(c.input_dtypes[k]));
  const ShapeInfo& s = c.input_shapes[k];
  if (s.rank > 0)
    return c.Fail("the index must be a scalar, got shape %s",
                  s.ToString().c_str());
  return nullptr;
}

weft_status* CheckDepth(const InferenceContext& c) {
  const AttrValue* d = c.attr("depth");
  if (d != nullptr && (d->i < 0 || d->i > 1 << 20))
    return c.Fail("depth %lld is out of range", static_cast<long long>(d->i));
  return nullptr;
}

ShapeInfo ShapeAttr(const InferenceContext& c, const char* name) {
  const AttrValue* s = c.attr(name);
  ShapeInfo out;
  out.rank = static_cast<int32_t>(s->i);
  out.dims = s->ints;
  return out;
}

void FlowOut(InferenceContext& c) {
  c.output_dtypes = {WEFT_FLOAT32};
  c.output_shapes = {ShapeInfo::Of({})};
}

weft_status* CheckShapeInput(const InferenceContext& c, size_t k) {
  if (c.input_dtypes[k] != WEFT_INT32)
    return c.Fail("the shape input must be int32, got %s",
                  weft_dtype_name(c.input_dtypes[k]));
  return nullptr;
}

}  // namespace

void RegisterTensorArrayOps(OpRegistry* r) {
  AttrDef element_shape{"element_shape", AttrType::kShape, false,
                        UnknownShape()};
  {
    OpDef d = ArrayOp("TensorArray", {"size"}, Create,
                      "A new TensorArray (named by this node) of `size` "
                      "elements of `dtype`; returns its flow.",
                      false);
    d.attrs.push_back(Required("dtype", AttrType::kDtype));
    d.attrs.push_back(element_shape);
    d.attrs.push_back(Optional("dynamic_size", AttrType::kBool, IntValue(0)));
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckIndex(c, 0));
      WEFT_RETURN_IF_ERROR(CheckDepth(c));
      FlowOut(c);
      return nullptr;
    };
    r->Add(std::move(d));
  }
  for (const char* name : {"TensorArrayWrite", "TensorArrayUnstack"}) {
    const bool write = std::strcmp(name, "TensorArrayWrite") == 0;
    OpDef d = write
                  ? ArrayOp(name, {"index", "value", "flow_in"}, Write,
                            "Writes value to element `index`; returns the "
                            "array's new flow.")
                  : ArrayOp(name, {"value", "flow_in"}, Unstack,
                            "Writes value[i] to element i for every i (no "
                            "copies); returns the array's new flow.");
    d.attrs.push_back(Optional("aggregate", AttrType::kBool, IntValue(0)));
    d.infer = [write](InferenceContext& c) -> weft_status* {
      if (write) WEFT_RETURN_IF_ERROR(CheckIndex(c, 0));
      if (!write && c.input_shapes[0].rank == 0)
        return c.Fail("a scalar has no elements to unstack");
      WEFT_RETURN_IF_ERROR(CheckDepth(c));
      FlowOut(c);
      return nullptr;
    };
    r->Add(std::move(d));
  }
  for (const char* name : {"TensorArrayRead", "TensorArrayGradRead"}) {
    const bool grad = std::strcmp(name, "TensorArrayGradRead") == 0;
    OpDef d = grad ? ArrayOp(name, {"index", "flow_in", "shape"}, Read,
                             "A gradient array's element `index`; zeros of "
                             "`shape` where no gradient was written.")
                   : ArrayOp(name, {"index", "flow_in"}, Read,
                             "Element `index` of the array (a reference, no "
                             "copy).");
    d.attrs.push_back(Required("dtype", AttrType::kDtype));
    d.attrs.push_back(element_shape);
    d.infer = [grad](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckIndex(c, 0));
      WEFT_RETURN_IF_ERROR(CheckDepth(c));
      if (grad) WEFT_RETURN_IF_ERROR(CheckShapeInput(c, 2));
      c.output_dtypes = {static_cast<weft_dtype>(c.attr("dtype")->i)};
      c.output_shapes = {ShapeAttr(c, "element_shape")};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  for (const char* name : {"TensorArrayStack", "TensorArrayGradStack"}) {
    const bool grad = std::strcmp(name, "TensorArrayGradStack") == 0;
    OpDef d = grad ? ArrayOp(name, {"flow_in", "shape"}, Stack,
                             "A gradient array's elements stacked into "
                             "`shape`; zeros where no gradient was written.")
                   : ArrayOp(name, {"flow_in"}, Stack,
                             "Every element, stacked along a new first "
                             "dimension.");
    d.attrs.push_back(Required("dtype", AttrType::kDtype));
    d.attrs.push_back(element_shape);
    d.infer = [grad](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckDepth(c));
      if (grad) WEFT_RETURN_IF_ERROR(CheckShapeInput(c, 1));
      ShapeInfo e = ShapeAttr(c, "element_shape");
      ShapeInfo out;
      if (e.known_rank()) {
        if (e.rank + 1 > WEFT_MAX_RANK)
          return c.Fail("stacking elements of rank %d passes rank %d",
                        e.rank, WEFT_MAX_RANK);
        out.rank = e.rank + 1;
        out.dims.push_back(-1);
        out.dims.insert(out.dims.end(), e.dims.begin(), e.dims.end());
      }
      c.output_dtypes = {static_cast<weft_dtype>(c.attr("dtype")->i)};
      c.output_shapes = {out};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = ArrayOp("TensorArraySize", {"flow_in"}, Size,
                      "How many elements the array has.");
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckDepth(c));
      c.output_dtypes = {WEFT_INT32};
      c.output_shapes = {ShapeInfo::Of({})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
