// Fuzz target: defining ops (weft_op_register) and building nodes of them.
// Each input makes a schema from fuzzed strings — names, "name: TYPE"
// ports, "name: KIND = DEFAULT" attributes, mixing well-formed pieces with
// raw bytes — registers it, and when accepted builds nodes of the op with
// fuzzed input dtypes, static shapes and attributes, so the schema parser
// and the inference every defined op runs (dtype binding, dtype sets,
// defaults, the definer's shape function) see hostile input.  Everything
// must end in a status; INTERNAL or UNKNOWN (bad input blamed on the
// runtime) stops the fuzzer, as do crashes and sanitizer reports.  Built
// and run by scripts/fuzz.sh (`./scripts/fuzz.sh op_def`).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

const char* const kPieces[] = {
    "x: T", "y: T", "x: float32", "z: int64", "x: U", "x:", ": T", "x T",
    "T: {float32, float64}", "T: dtype", "T: {float32} = float32",
    "U: {int32, bool} = bool", "k: int = 3", "k: int = 1.5", "f: float = 0.5",
    "f: float = nan", "b: bool = true", "s: string = \"a\\\"b\"",
    "s: string = \"unterminated", "l: list(int) = [1, 2, -3]",
    "l: list(int) = [1,,2]", "p: list(float) = []", "sh: shape = [2, -1]",
    "sh: shape = [-2]", "t: tensor", "{float32", "T: {}", "= 3", "",
};

std::string Piece(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return in.ConsumeRandomLengthString(40);
  return kPieces[in.ConsumeIntegralInRange<size_t>(
      0, sizeof kPieces / sizeof kPieces[0] - 1)];
}

// A shape function that copies input 0's shape to every output, or (when
// the op def's shape_arg says so) sets a fuzzed, possibly invalid, shape.
struct ShapeRule {
  int32_t output;
  int32_t rank;  // up to 40: above WEFT_MAX_RANK must be refused, not read
  int64_t dims[40];
};

weft_status* FuzzedShape(void* arg, weft_shape_context* ctx) {
  const ShapeRule* rule = static_cast<const ShapeRule*>(arg);
  weft_attr_value v;
  v.struct_size = sizeof v;
  weft_status_destroy(weft_shape_attr(ctx, "k", &v));
  int32_t rank = weft_shape_input_rank(ctx, 0);
  int64_t dims[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank && i < WEFT_MAX_RANK; ++i)
    dims[i] = weft_shape_input_dim(ctx, 0, i);
  weft_status* st = weft_shape_set_output(ctx, 0, dims, rank);
  if (st != nullptr) return st;
  return weft_shape_set_output(ctx, rule->output, rule->dims, rule->rank);
}

void Check(weft_status* st) {
  if (st == nullptr) return;
  weft_code code = weft_status_code(st);
  if (code == WEFT_INTERNAL || code == WEFT_UNKNOWN) {
    std::fprintf(stderr, "blamed on the runtime: %s\n",
                 weft_status_message(st));
    std::abort();
  }
  weft_status_destroy(st);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // Ops live for the process, so fresh names come from a counter, and only
  // the first 20000 inputs get one (the registry would otherwise grow until
  // the fuzzer's memory limit); later inputs reuse names, which exercises
  // re-registration and conflicts.
  static int serial = 0;
  int number = serial < 20000 ? serial++ : serial % 64;
  std::string name = in.ConsumeBool()
                         ? "Fuzz>Op" + std::to_string(number)
                         : in.ConsumeRandomLengthString(24);
  std::vector<std::string> ports[3];
  for (auto& list : ports) {
    int n = in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < n; ++i) list.push_back(Piece(in));
  }
  std::vector<const char*> c[3];
  for (int k = 0; k < 3; ++k)
    for (const std::string& s : ports[k]) c[k].push_back(s.c_str());
  // Leaked on purpose: an accepted op keeps its shape_arg for the process.
  auto* rule = new ShapeRule{in.ConsumeIntegralInRange<int32_t>(-1, 3),
                             in.ConsumeIntegralInRange<int32_t>(-2, 40),
                             {}};
  rule->dims[0] = in.ConsumeIntegral<int64_t>();
  for (int i = 1; i < 40; ++i)
    rule->dims[i] = in.ConsumeIntegralInRange<int64_t>(-3, 9);
  weft_op_def def{};
  def.struct_size = in.ConsumeBool() ? sizeof def : in.ConsumeIntegral<uint8_t>();
  def.name = name.c_str();
  def.inputs = c[0].data();
  def.num_inputs = static_cast<int32_t>(c[0].size());
  def.outputs = c[1].data();
  def.num_outputs = static_cast<int32_t>(c[1].size());
  def.attrs = c[2].data();
  def.num_attrs = static_cast<int32_t>(c[2].size());
  def.stateful = in.ConsumeBool();
  def.shape_fn = in.ConsumeBool() ? FuzzedShape : nullptr;
  def.shape_arg = rule;
  weft_status* st = weft_op_register(&def);
  if (st != nullptr) {
    Check(st);
    delete rule;
    return 0;
  }
  weft_graph* g = nullptr;
  Check(weft_graph_create(&g));
  for (int node = 0; node < 3 && in.remaining_bytes() > 0; ++node) {
    weft_op_builder* b = weft_op_begin(g, name.c_str(), nullptr);
    int inputs = in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < inputs; ++i) {
      weft_output p{nullptr, 0};
      int64_t dims[2] = {in.ConsumeIntegralInRange<int64_t>(-1, 5),
                         in.ConsumeIntegralInRange<int64_t>(-1, 5)};
      weft_status* ps = weft_graph_placeholder(
          g, nullptr,
          static_cast<weft_dtype>(in.ConsumeIntegralInRange<int>(1, 13)),
          dims, in.ConsumeIntegralInRange<int32_t>(-1, 2), &p);
      if (ps != nullptr) {
        Check(ps);
        continue;
      }
      weft_op_add_input(b, p);
    }
    if (in.ConsumeBool())
      weft_op_set_attr_int(b, "k", in.ConsumeIntegral<int64_t>());
    if (in.ConsumeBool())
      weft_op_set_attr_dtype(
          b, "T", static_cast<weft_dtype>(in.ConsumeIntegralInRange<int>(0, 14)));
    if (in.ConsumeBool()) weft_op_set_attr_float(b, "f", in.ConsumeFloatingPoint<double>());
    Check(weft_op_finish(b, nullptr));
  }
  weft_graph_destroy(g);
  return 0;
}
