// Accumulators: the forward values a loop's gradient needs, saved once per
// iteration and read back by the backward loop (runtime ops: they hold
// references to the values, wherever those live).
//
//   AccumulatorPush(value) attr accumulator -> value: saves `value` under
//     the iterations it runs in (one number per enclosing loop, outermost
//     first: a push in an inner loop is kept per outer iteration too).
//   AccumulatorSize() attr accumulator -> int32 scalar: how many iterations
//     of the outermost level pushed (a top-level loop's trip count).
//   AccumulatorSizeWithin(outer...) -> int32 scalar: how many iterations
//     pushed within outer iterations `outer` (an inner loop's trip count in
//     that outer iteration).
//   AccumulatorRead(indices...) attrs accumulator, dtype, shape,
//     dead_if_absent -> the value pushed in the iterations `indices`.  With
//     dead_if_absent, nothing pushed there makes the output dead instead of
//     an error: a loop gradient reads only iterations the forward loop ran
//     (its backward loop counts the forward trips), so an absent value sat
//     on a cond branch that iteration did not take, and whatever reads it
//     is on the same untaken branch of the backward loop.
// The accumulator lives for one run; its key is its name.
#include <algorithm>
#include <map>
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
  std::map<std::vector<int64_t>, TensorValue> values;
};

std::string PathString(const std::vector<int64_t>& path) {
  std::string s;
  for (int64_t i : path) s += (s.empty() ? "" : ", ") + std::to_string(i);
  return "(" + s + ")";
}

// The inputs as iteration numbers (each one int32).
weft_status* ReadIndices(RuntimeOpContext* ctx, std::vector<int64_t>* out) {
  out->clear();
  for (int32_t k = 0; k < ctx->num_inputs(); ++k) {
    const TensorValue& v = ctx->input(k);
    if (v.dtype != WEFT_INT32 || v.elements() != 1)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s): index %d must be one int32",
                    ctx->node()->name.c_str(), ctx->node()->op_type.c_str(),
                    k);
    int32_t i = 0;
    WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, &i, sizeof i));
    out->push_back(i);
  }
  return nullptr;
}

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
  std::vector<int64_t> path(static_cast<size_t>(ctx->frame_depth()));
  for (int32_t l = 0; l < ctx->frame_depth(); ++l) path[l] = ctx->iteration(l);
  {
    std::lock_guard<std::mutex> lock(acc->mu);
    acc->values[std::move(path)] = ctx->input(0);
  }
  ctx->set_output(0, ctx->input(0));
  return nullptr;
}

weft_status* Size(RuntimeOpContext* ctx) {
  Accumulator* acc = nullptr;
  WEFT_RETURN_IF_ERROR(Find(ctx, &acc));
  std::vector<int64_t> prefix;
  WEFT_RETURN_IF_ERROR(ReadIndices(ctx, &prefix));
  int32_t n = 0;
  {
    // Keys are ordered, so those under `prefix` are contiguous; count the
    // ones one level deeper.  The outermost accumulators of a loop nested in
    // others have longer keys: any key under the prefix counts once per
    // distinct next number.
    std::lock_guard<std::mutex> lock(acc->mu);
    int64_t last = -1;
    for (auto it = acc->values.lower_bound(prefix); it != acc->values.end();
         ++it) {
      const std::vector<int64_t>& key = it->first;
      if (key.size() <= prefix.size() ||
          !std::equal(prefix.begin(), prefix.end(), key.begin()))
        break;
      if (key[prefix.size()] != last) {
        last = key[prefix.size()];
        ++n;
      }
    }
  }
  TensorValue out;
  WEFT_RETURN_IF_ERROR(ctx->FromHost(WEFT_INT32, Dims(), &n, &out));
  ctx->set_output(0, std::move(out));
  return nullptr;
}

weft_status* Read(RuntimeOpContext* ctx) {
  Accumulator* acc = nullptr;
  WEFT_RETURN_IF_ERROR(Find(ctx, &acc));
  std::vector<int64_t> path;
  WEFT_RETURN_IF_ERROR(ReadIndices(ctx, &path));
  std::lock_guard<std::mutex> lock(acc->mu);
  auto it = acc->values.find(path);
  if (it == acc->values.end() &&
      FindAttr(ctx->node()->attrs, "dead_if_absent")->i != 0) {
    // The forward value is on a cond branch that iteration did not take:
    // its gradient is on the same untaken branch of the backward loop.
    ctx->set_dead();
    return nullptr;
  }
  if (it == acc->values.end())
    return Errorf(WEFT_OUT_OF_RANGE,
                  "node '%s' (AccumulatorRead): accumulator '%s' has no "
                  "value for iterations %s (%zu pushed)",
                  ctx->node()->name.c_str(),
                  FindAttr(ctx->node()->attrs, "accumulator")->s.c_str(),
                  PathString(path).c_str(), acc->values.size());
  ctx->set_output(0, it->second);
  return nullptr;
}

weft_status* CheckIndices(const InferenceContext& c) {
  for (size_t k = 0; k < c.input_dtypes.size(); ++k)
    if (c.input_dtypes[k] != WEFT_INT32)
      return c.Fail("index %zu must be int32, got %s", k,
                    weft_dtype_name(c.input_dtypes[k]));
  return nullptr;
}

weft_status* InferSize(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(CheckIndices(c));
  c.output_dtypes = {WEFT_INT32};
  c.output_shapes = {ShapeInfo::Of({})};
  return nullptr;
}

OpDef RuntimeOpDef(const char* name, std::vector<std::string> inputs,
                   RuntimeOpFn fn, const char* summary) {
  OpDef d = RuntimeOp(name, std::move(inputs), fn, summary);
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
    d.infer = InferSize;
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOpDef("AccumulatorSizeWithin", {"outer"}, Size,
                           "How many iterations pushed within the outer "
                           "iterations given.");
    d.variadic = true;
    d.infer = InferSize;
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOpDef("AccumulatorRead", {"indices"}, Read,
                           "The value pushed in iterations `indices`.");
    d.variadic = true;
    d.attrs.push_back(Required("dtype", AttrType::kDtype));
    d.attrs.push_back(Required("shape", AttrType::kShape));
    AttrValue no;
    no.type = AttrType::kBool;
    d.attrs.push_back(AttrDef{"dead_if_absent", AttrType::kBool, false, no});
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckIndices(c));
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
