// Accumulators: the forward values a loop's gradient needs, saved once per
// iteration and read back by the backward loop (runtime ops: they hold
// references to the values, wherever those live).
//
//   AccumulatorPush(value) attr accumulator -> value: saves `value` under
//     the forward iteration it runs in.
//   AccumulatorSize() attr accumulator -> int32 scalar: how many iterations
//     pushed (the forward loop's trip count).
//   AccumulatorRead(index) attrs accumulator, dtype, shape -> the value
//     pushed by iteration `index`.
// The accumulator lives for one run; its key is its name.
#include <mutex>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "ops/registry.h"

namespace weft {
namespace {

class Accumulator : public RunResource {
 public:
  std::mutex mu;
  std::vector<TensorValue> values;
  std::vector<uint8_t> present;
};

weft_status* Find(RuntimeOpContext* ctx, Accumulator** out) {
  const std::string& name = FindAttr(ctx->node()->attrs, "accumulator")->s;
  RunResource* r = nullptr;
  WEFT_RETURN_IF_ERROR(ctx->resources()->GetOrCreate(
      name,
      [](std::unique_ptr<RunResource>* made) -> weft_status* {
        *made = std::make_unique<Accumulator>();
        return nullptr;
      },
      &r));
  *out = static_cast<Accumulator*>(r);
  return nullptr;
}

weft_status* Push(RuntimeOpContext* ctx) {
  if (ctx->frame_depth() < 1)
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "node '%s' (AccumulatorPush) runs outside any loop",
                  ctx->node()->name.c_str());
  Accumulator* acc = nullptr;
  WEFT_RETURN_IF_ERROR(Find(ctx, &acc));
  int64_t it = ctx->iteration(ctx->frame_depth() - 1);
  {
    std::lock_guard<std::mutex> lock(acc->mu);
    if (static_cast<int64_t>(acc->values.size()) <= it) {
      acc->values.resize(static_cast<size_t>(it) + 1);
      acc->present.resize(static_cast<size_t>(it) + 1);
    }
    acc->values[it] = ctx->input(0);
    acc->present[it] = 1;
  }
  ctx->set_output(0, ctx->input(0));
  return nullptr;
}

weft_status* Size(RuntimeOpContext* ctx) {
  Accumulator* acc = nullptr;
  WEFT_RETURN_IF_ERROR(Find(ctx, &acc));
  int32_t n;
  {
    std::lock_guard<std::mutex> lock(acc->mu);
    n = static_cast<int32_t>(acc->values.size());
  }
  TensorValue out;
  WEFT_RETURN_IF_ERROR(ctx->FromHost(WEFT_INT32, Dims(), &n, &out));
  ctx->set_output(0, std::move(out));
  return nullptr;
}

weft_status* Read(RuntimeOpContext* ctx) {
  Accumulator* acc = nullptr;
  WEFT_RETURN_IF_ERROR(Find(ctx, &acc));
  int32_t index = 0;
  const TensorValue& i = ctx->input(0);
  if (i.dtype != WEFT_INT32 || i.elements() != 1)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (AccumulatorRead): the index must be one int32",
                  ctx->node()->name.c_str());
  WEFT_RETURN_IF_ERROR(ctx->ReadToHost(i, &index, sizeof index));
  std::lock_guard<std::mutex> lock(acc->mu);
  if (index < 0 || index >= static_cast<int32_t>(acc->values.size()) ||
      !acc->present[index])
    return Errorf(WEFT_OUT_OF_RANGE,
                  "node '%s' (AccumulatorRead): accumulator '%s' has no "
                  "value for iteration %d (%zu pushed)",
                  ctx->node()->name.c_str(),
                  FindAttr(ctx->node()->attrs, "accumulator")->s.c_str(),
                  index, acc->values.size());
  ctx->set_output(0, acc->values[index]);
  return nullptr;
}

OpDef RuntimeOpDef(const char* name, std::vector<std::string> inputs,
                   RuntimeOpFn fn, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = std::move(inputs);
  d.exec = ExecKind::kRuntime;
  d.runtime = fn;
  d.stateful = true;
  d.summary = summary;
  d.attrs = {Required("accumulator", AttrType::kString)};
  return d;
}

}  // namespace

void RegisterAccumulatorOps(OpRegistry* r) {
  {
    OpDef d = RuntimeOpDef("AccumulatorPush", {"value"}, Push,
                           "Saves value under the loop iteration it runs in "
                           "(for a loop's gradient); returns it.");
    d.infer = [](InferenceContext& c) -> weft_status* {
      c.output_dtypes = {c.input_dtypes[0]};
      c.output_shapes = {c.input_shapes[0]};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOpDef("AccumulatorSize", {}, Size,
                           "How many iterations pushed to the accumulator.");
    d.infer = [](InferenceContext& c) -> weft_status* {
      c.output_dtypes = {WEFT_INT32};
      c.output_shapes = {ShapeInfo::Of({})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOpDef("AccumulatorRead", {"index"}, Read,
                           "The value iteration `index` pushed.");
    d.attrs.push_back(Required("dtype", AttrType::kDtype));
    d.attrs.push_back(Required("shape", AttrType::kShape));
    d.infer = [](InferenceContext& c) -> weft_status* {
      if (c.input_dtypes[0] != WEFT_INT32)
        return c.Fail("index must be int32, got %s",
                      weft_dtype_name(c.input_dtypes[0]));
      const AttrValue* shape = c.attr("shape");
      ShapeInfo s;
      s.rank = static_cast<int32_t>(shape->i);
      s.dims = shape->ints;
      c.output_dtypes = {static_cast<weft_dtype>(c.attr("dtype")->i)};
      c.output_shapes = {s};
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
