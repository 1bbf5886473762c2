// Control-flow primitives (TensorFlow's design; Yu et al., EuroSys 2018).
// The executor runs them itself: they move values between frames and
// iterations and decide which values are dead.
//
//   Switch(data, pred) -> (output_false, output_true): data goes to the
//     output pred selects; the other output is dead.
//   Merge(inputs...) -> (output, value_index): the first live input, and
//     its index.  In a loop, the NextIteration nodes that name this Merge
//     (attr `merge`) are further inputs: back edges, added by the planner
//     so the graph stays append-only.  Attr `shape`, when set, is the loop
//     variable's shape invariant.
//   Enter(data) attrs frame_name, is_constant, parallel_iterations: data
//     into iteration 0 of the child frame `frame_name` (every iteration when
//     is_constant).
//   Exit(data): data back to the parent frame, once the frame has finished.
//   NextIteration(data) attr merge: data to the next iteration's Merge.
//   LoopCond(pred): the loop's predicate (a bool scalar), marking it.
#include "base/status.h"
#include "ops/registry.h"

namespace weft {

ShapeInfo MostSpecificCommonShape(const ShapeInfo& a, const ShapeInfo& b) {
  if (!a.known_rank() || !b.known_rank() || a.rank != b.rank)
    return ShapeInfo::Unknown();
  ShapeInfo s = a;
  for (int32_t i = 0; i < s.rank; ++i)
    if (a.dims[i] != b.dims[i]) s.dims[i] = -1;
  return s;
}

bool ShapeFits(const ShapeInfo& value, const ShapeInfo& declared) {
  if (!declared.known_rank()) return true;
  if (!value.known_rank()) return false;
  if (value.rank != declared.rank) return false;
  for (int32_t i = 0; i < value.rank; ++i)
    if (declared.dims[i] >= 0 && value.dims[i] != declared.dims[i])
      return false;
  return true;
}

namespace {

weft_status* SameAsInput(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {c.input_shapes[0]};
  return nullptr;
}

weft_status* CheckScalarBool(const InferenceContext& c, size_t i,
                             const char* what) {
  if (c.input_dtypes[i] != WEFT_BOOL)
    return c.Fail("%s must be bool, got %s", what,
                  weft_dtype_name(c.input_dtypes[i]));
  const ShapeInfo& s = c.input_shapes[i];
  if (s.known_rank() && s.rank != 0)
    return c.Fail("%s must be a scalar, got shape %s", what,
                  s.ToString().c_str());
  return nullptr;
}

OpDef ControlOp(const char* name, ExecKind exec,
                std::vector<std::string> inputs, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = std::move(inputs);
  d.exec = exec;
  // Never merged by CSE: two Enters of one value into different frames, or
  // two Merges of one cond, are different points of the control structure.
  d.stateful = true;
  d.summary = summary;
  return d;
}

}  // namespace

void RegisterControlFlowOps(OpRegistry* r) {
  {
    OpDef d = ControlOp("Switch", ExecKind::kSwitch, {"data", "pred"},
                        "data to output_true when pred, else to "
                        "output_false; the other output is dead.");
    d.num_outputs = 2;
    d.outputs_doc = "output_false, output_true";
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckScalarBool(c, 1, "pred (input 1)"));
      AttrValue t;
      t.type = AttrType::kDtype;
      t.i = c.input_dtypes[0];
      SetAttr(c.attrs, "T", t);
      c.output_dtypes = {c.input_dtypes[0], c.input_dtypes[0]};
      c.output_shapes = {c.input_shapes[0], c.input_shapes[0]};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = ControlOp("Merge", ExecKind::kMerge, {"inputs"},
                        "The first live input and its index; in a loop, "
                        "also the NextIteration values naming it.");
    d.variadic = true;
    d.num_outputs = 2;
    d.outputs_doc = "output, value_index (int32)";
    AttrValue unknown;
    unknown.i = -1;
    d.attrs = {AttrDef{"shape", AttrType::kShape, false, unknown, false}};
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
      ShapeInfo s = c.input_shapes[0];
      for (size_t i = 1; i < c.input_shapes.size(); ++i)
        s = MostSpecificCommonShape(s, c.input_shapes[i]);
      if (const AttrValue* inv = c.attr("shape")) {
        ShapeInfo declared;
        declared.rank = static_cast<int32_t>(inv->i);
        declared.dims = inv->ints;
        for (size_t i = 0; i < c.input_shapes.size(); ++i)
          if (!ShapeFits(c.input_shapes[i], declared))
            return c.Fail("input %zu of shape %s does not fit the shape "
                          "invariant %s", i,
                          c.input_shapes[i].ToString().c_str(),
                          declared.ToString().c_str());
        s = declared;
      }
      c.output_dtypes = {c.input_dtypes[0], WEFT_INT32};
      c.output_shapes = {s, ShapeInfo::Of({})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = ControlOp("Enter", ExecKind::kEnter, {"data"},
                        "data into the child frame frame_name: iteration 0, "
                        "or every iteration when is_constant.");
    AttrValue no;
    d.attrs = {Required("frame_name", AttrType::kString),
               Optional("is_constant", AttrType::kBool, no),
               Optional("parallel_iterations", AttrType::kInt, IntValue(10))};
    d.infer = [](InferenceContext& c) -> weft_status* {
      if (c.attr("frame_name")->s.empty())
        return c.Fail("frame_name must not be empty");
      int64_t p = c.attr("parallel_iterations")->i;
      if (p < 1 || p > (1 << 20))
        return c.Fail("parallel_iterations must be in [1, 2^20], got %lld",
                      static_cast<long long>(p));
      return SameAsInput(c);
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = ControlOp("Exit", ExecKind::kExit, {"data"},
                        "data back to the parent frame, once the frame has "
                        "finished.");
    d.infer = SameAsInput;
    r->Add(std::move(d));
  }
  {
    OpDef d = ControlOp("NextIteration", ExecKind::kNextIteration, {"data"},
                        "data to the next iteration of the Merge named by "
                        "attr merge (a loop's back edge).");
    d.attrs = {Required("merge", AttrType::kString)};
    // The Merge it names is checked when the node is added to the graph.
    d.infer = SameAsInput;
    r->Add(std::move(d));
  }
  {
    OpDef d = ControlOp("LoopCond", ExecKind::kLoopCond, {"input"},
                        "The loop's predicate (a bool scalar), unchanged.");
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(CheckScalarBool(c, 0, "input"));
      c.output_dtypes = {WEFT_BOOL};
      c.output_shapes = {ShapeInfo::Of({})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
