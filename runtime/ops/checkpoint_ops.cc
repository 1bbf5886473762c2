// Save and Restore as ops (the whitepaper's), so that a graph checkpoints
// inside a run (every N iterations of a loop, say), in the checkpoint
// format weft_checkpoint_save writes (runtime/checkpoint/FORMAT.md):
//
//   Save(step, values...)        writes each value under the name of the
//       node it comes from (a Variable's name, so weft_checkpoint_restore
//       reads it back into that variable); attribute `path`, in which
//       "{step}" is replaced by the int64 `step` input.  The file is
//       written beside and renamed in, as weft_checkpoint_save does.
//   RestoreTensor() -> value     the entry `name` of the checkpoint at
//       `path`, checked against attributes `dtype` and `shape`; assign it
//       to a variable with Assign.
//
// Runtime ops: values on any device are read through the run's copies.
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "checkpoint/checkpoint_format.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "ops/runtime_op.h"
#include "tensor/buffer.h"

namespace weft {
namespace {

const std::string& StringAttr(RuntimeOpContext* ctx, const char* name) {
  static const std::string empty;
  const AttrValue* a = FindAttr(ctx->node()->attrs, name);
  return a != nullptr ? a->s : empty;
}

weft_status* Save(RuntimeOpContext* ctx) {
  const TensorValue& step_v = ctx->input(0);
  int64_t step = 0;
  if (step_v.dtype != WEFT_INT64 || step_v.elements() != 1)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: step must be one int64",
                  NodeWhere(ctx->node()).c_str());
  WEFT_RETURN_IF_ERROR(ctx->ReadToHost(step_v, &step, sizeof step));
  std::string path = StringAttr(ctx, "path");
  const std::string mark = "{step}";
  for (size_t at; (at = path.find(mark)) != std::string::npos;)
    path.replace(at, mark.size(), std::to_string(step));
  if (path.empty())
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: attribute path is empty",
                  NodeWhere(ctx->node()).c_str());
  const weft_node* n = ctx->node();
  std::vector<CheckpointEntry> entries;
  std::vector<std::vector<char>> data;
  for (int32_t i = 1; i < ctx->num_inputs(); ++i) {
    const TensorValue& v = ctx->input(i);
    CheckpointEntry e;
    e.name = n->inputs[static_cast<size_t>(i)].node->name;
    e.dtype = v.dtype;
    e.dims = v.dims;
    e.bytes = v.byte_size();
    for (const CheckpointEntry& other : entries)
      if (other.name == e.name)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "%s: two values come from node '%s'; a checkpoint "
                      "names each value once", NodeWhere(ctx->node()).c_str(),
                      e.name.c_str());
    data.emplace_back(e.bytes);
    if (e.bytes != 0)
      WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, data.back().data(), e.bytes));
    entries.push_back(std::move(e));
  }
  CheckpointWriter writer;
  WEFT_RETURN_IF_ERROR(Annotate(writer.Open(path, entries), NodeWhere(ctx->node())));
  for (size_t i = 0; i < entries.size(); ++i)
    WEFT_RETURN_IF_ERROR(writer.Add(entries[i], data[i].data()));
  return Annotate(writer.Commit(), NodeWhere(ctx->node()));
}

weft_status* RestoreTensor(RuntimeOpContext* ctx) {
  const std::string& path = StringAttr(ctx, "path");
  const std::string& name = StringAttr(ctx, "name");
  const weft_node* n = ctx->node();
  const weft_dtype want = n->output_dtypes[0];
  const ShapeInfo& shape = n->output_shapes[0];
  CheckpointReader reader;
  WEFT_RETURN_IF_ERROR(Annotate(reader.Open(path), NodeWhere(ctx->node())));
  for (uint64_t i = 0; i < reader.num_records(); ++i) {
    CheckpointEntry e;
    WEFT_RETURN_IF_ERROR(reader.Next(&e));
    if (e.name != name) continue;  // Next checks what it skips
    bool fits = e.dtype == want && e.dims.rank() == shape.rank;
    for (int32_t k = 0; fits && k < shape.rank; ++k)
      fits = shape.dims[static_cast<size_t>(k)] < 0 ||
             shape.dims[static_cast<size_t>(k)] == e.dims[k];
    if (!fits)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "%s: '%s' is %s %s in %s, but the node wants %s %s",
                    NodeWhere(ctx->node()).c_str(), name.c_str(),
                    weft_dtype_name(e.dtype), e.dims.ToString().c_str(),
                    reader.Where().c_str(), weft_dtype_name(want),
                    shape.ToString().c_str());
    std::vector<char> bytes(e.bytes);
    WEFT_RETURN_IF_ERROR(reader.ReadData(bytes.data()));
    TensorValue out;
    WEFT_RETURN_IF_ERROR(ctx->FromHost(e.dtype, e.dims, bytes.data(), &out));
    ctx->set_output(0, std::move(out));
    return nullptr;
  }
  return Errorf(WEFT_NOT_FOUND, "%s: %s holds no '%s'", NodeWhere(ctx->node()).c_str(),
                reader.Where().c_str(), name.c_str());
}

}  // namespace

void RegisterCheckpointOps(OpRegistry* r) {
  {
    OpDef d = RuntimeOp("Save", {"step", "values"}, Save,
                        "Writes values to a checkpoint file named by `path` "
                        "({step} replaced by the step input), each under the "
                        "name of the node it comes from.");
    d.variadic = true;
    d.num_outputs = 0;
    d.attrs = {Required("path", AttrType::kString)};
    d.infer = [](InferenceContext& c) -> weft_status* {
      if (c.input_dtypes.empty() || c.input_dtypes[0] != WEFT_INT64)
        return c.Fail("input step must be int64");
      const AttrValue* path = c.attr("path");
      if (path == nullptr || path->s.empty())
        return c.Fail("attribute path is empty");
      c.output_dtypes.clear();
      c.output_shapes.clear();
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOp("RestoreTensor", {}, RestoreTensor,
                        "Entry `name` of the checkpoint at `path`, of dtype "
                        "`dtype` and shape `shape`.");
    d.attrs = {Required("path", AttrType::kString),
               Required("name", AttrType::kString),
               Required("dtype", AttrType::kDtype),
               Required("shape", AttrType::kShape)};
    d.infer = [](InferenceContext& c) -> weft_status* {
      const AttrValue* dtype = c.attr("dtype");
      const AttrValue* shape = c.attr("shape");
      if (weft_dtype_size_of(static_cast<weft_dtype>(dtype->i)) == 0)
        return c.Fail("attribute dtype is not a dtype");
      c.output_dtypes = {static_cast<weft_dtype>(dtype->i)};
      ShapeInfo s;
      s.rank = static_cast<int32_t>(shape->i);
      s.dims = shape->ints;
      c.output_shapes = {std::move(s)};
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
