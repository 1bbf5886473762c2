// Fuzz target: the public C API, driven by fuzz input as a small program.
// Each input builds a graph from any registered op with attributes of every
// type (right and wrong), hostile shapes, dtypes, control inputs and device
// constraints; asks for gradients and optimizers; opens a session with fuzzed
// options; and runs it with fuzzed feeds, fetches and targets.  Everything
// must end in a status: a crash, a sanitizer report, a leak, or an INTERNAL
// or UNKNOWN status (bad input must be named as such, never blamed on the
// runtime) stops the fuzzer.  Built and run by scripts/fuzz.sh, which points
// WEFT_PLUGIN_PATH at the CPU plugin of the normal build.
//
// Cost: values the harness creates are capped at kMaxElements elements, but
// shapes given to shape inference are not (that is where overflow lives);
// a graph is run only when every output it could compute has a small known
// size, so that one input stays well under a millisecond or two.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kMaxNodes = 14;
constexpr int64_t kMaxElements = 64;
// A graph runs only if no output it holds has more elements than this.
constexpr int64_t kMaxRunElements = 4096;

enum class AttrType { kInt, kFloat, kBool, kDtype, kString, kIntList,
                      kFloatList, kShape, kTensor };

struct AttrSpec {
  std::string name;
  AttrType type;
};

struct OpSpec {
  std::string name;
  int32_t num_inputs;
  bool variadic;
  std::vector<AttrSpec> attrs;
};

AttrType ParseAttrType(const std::string& t) {
  if (t == "int") return AttrType::kInt;
  if (t == "float") return AttrType::kFloat;
  if (t == "bool") return AttrType::kBool;
  if (t == "dtype") return AttrType::kDtype;
  if (t == "string") return AttrType::kString;
  if (t == "list(int)") return AttrType::kIntList;
  if (t == "list(float)") return AttrType::kFloatList;
  if (t == "shape") return AttrType::kShape;
  return AttrType::kTensor;
}

// weft_op_description.attributes reads "name: type = default, ..."; defaults
// may hold commas ("[1, 1, 1, 1]") but never ": ", so each ": " ends a name.
std::vector<AttrSpec> ParseAttrs(const char* text) {
  std::vector<AttrSpec> out;
  std::string s = text ? text : "";
  for (size_t colon = s.find(": "); colon != std::string::npos;
       colon = s.find(": ", colon + 2)) {
    size_t begin = colon;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(s[begin - 1]))
                         || s[begin - 1] == '_'))
      --begin;
    size_t end = s.find_first_of(" ,", colon + 2);
    if (end == std::string::npos) end = s.size();
    out.push_back({s.substr(begin, colon - begin),
                   ParseAttrType(s.substr(colon + 2, end - colon - 2))});
  }
  return out;
}

const std::vector<OpSpec>& Ops() {
  static const std::vector<OpSpec> ops = [] {
    std::vector<OpSpec> v;
    for (int32_t i = 0; i < weft_op_count(); ++i) {
      weft_op_description d;
      std::memset(&d, 0, sizeof d);
      d.struct_size = sizeof d;
      weft_status* st = weft_op_describe(i, &d);
      if (st != nullptr) std::abort();
      // ForeignCall runs whatever C function its attributes name, with
      // the arguments its signature says: a crash there is the function's
      // doing, not the runtime's.  tests/test_foreign.c covers its refusals.
      if (std::strcmp(d.name, "ForeignCall") == 0) continue;
      v.push_back({d.name, d.num_inputs, d.variadic != 0,
                   ParseAttrs(d.attributes)});
    }
    return v;
  }();
  return ops;
}

// Attribute names the schemas use, for attributes set under a name the op
// does not declare or with a type it does not expect.
const char* const kAttrNames[] = {"T", "dtype", "shape", "axis", "axes",
                                  "value", "N", "num", "strides", "ksize",
                                  "padding", "data_format", "", "x"};
const char* const kStrings[] = {"", "SAME", "VALID", "NHWC", "NCHW", "same",
                                "NHWC\xff", "CPU", "T"};
const char* const kDevices[] = {"", "/device:CPU:0", "/device:CPU:1", "CPU",
                                "/device:CPU:*", "/device:OPENCL:*",
                                "/device:", "cpu", ":::", ",", "/device:CPU:-1",
                                "/device:CPU:99999999999999999999",
                                "/device:CPU:0,/device:CPU:0"};
const char* const kGflops[] = {"", "CPU=5", "CPU=-1", "=", "CPU=nan",
                               "CPU=1e400", "/device:CPU:0=0", "CPU=", "x=1",
                               "CPU=1,,CPU=2"};
const int64_t kInts[] = {0, 1, 2, 3, 4, -1, -2, -3,
                         std::numeric_limits<int32_t>::max(),
                         std::numeric_limits<int32_t>::min(),
                         std::numeric_limits<int64_t>::max(),
                         std::numeric_limits<int64_t>::min(),
                         int64_t{1} << 31, int64_t{1} << 32,
                         int64_t{1} << 62, 1000000007};
const double kFloats[] = {0.0, 1.0, -1.0, 0.5, 2.0, 1e-3, -0.0, 1e-45,
                          3e38, -3e38, 1e308,
                          std::numeric_limits<double>::quiet_NaN(),
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};

template <typename T, size_t N>
T Pick(FuzzedDataProvider& fdp, const T (&table)[N]) {
  return table[fdp.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

// Small values usually (so that values used as sizes or indices stay
// cheap), hostile ones sometimes.
int64_t FuzzInt(FuzzedDataProvider& fdp) {
  if (fdp.ConsumeBool()) return fdp.ConsumeIntegralInRange<int64_t>(-2, 4);
  return Pick(fdp, kInts);
}

int32_t FuzzDtype(FuzzedDataProvider& fdp) {
  uint8_t b = fdp.ConsumeIntegral<uint8_t>();
  // Most kernels take float32 and most index inputs int32: favouring them
  // gets more graphs past type checks and into the kernels.
  if (b < 100) return WEFT_FLOAT32;
  if (b < 140) return WEFT_INT32;
  if (b < 240) return 1 + b % 13;  // any valid dtype
  const int32_t hostile[] = {0, 14, 15, 255, -1, 1 << 20, INT32_MIN,
                             INT32_MAX};
  return hostile[b % 8];
}

// A rank from -1 (unknown) to 9, and sometimes a hostile one; dims small,
// unknown, zero or huge.
std::vector<int64_t> FuzzDims(FuzzedDataProvider& fdp, int32_t* rank) {
  uint8_t r = fdp.ConsumeIntegral<uint8_t>();
  if (r < 200) {
    *rank = r % 11 - 1;
  } else {
    const int32_t hostile[] = {33, 64, -2, INT32_MIN, INT32_MAX, 100};
    *rank = hostile[r % 6];
  }
  // The array holds `rank` dims up to 64: a rank above WEFT_MAX_RANK must
  // be refused before any dim is read, and ASan sees a read past 64.
  std::vector<int64_t> dims(std::clamp(*rank, 0, 64), 1);
  for (int32_t i = 0; i < std::min(*rank, 12); ++i) {
    dims[i] = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(-1, 3)
                                : Pick(fdp, kInts);
  }
  return dims;
}

// Small fully known dims whose product stays within kMaxElements.
std::vector<int64_t> SmallDims(FuzzedDataProvider& fdp) {
  int rank = fdp.ConsumeIntegralInRange<int>(0, 4);
  std::vector<int64_t> dims;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
    if (n * d > kMaxElements) d = 1;
    n *= d;
    dims.push_back(d);
  }
  return dims;
}

// Fills a tensor's elements from the input: small integers, and floats from
// a table of awkward values.
void FillTensor(FuzzedDataProvider& fdp, weft_tensor* t) {
  uint8_t* p = static_cast<uint8_t*>(weft_tensor_data(t));
  size_t size = weft_dtype_size(weft_tensor_dtype(t));
  int64_t n = weft_tensor_element_count(t);
  for (int64_t i = 0; i < n && fdp.remaining_bytes() > 0; ++i) {
    uint8_t* e = p + i * size;
    double f = Pick(fdp, kFloats);
    int64_t v = fdp.ConsumeIntegralInRange<int64_t>(-2, 5);
    switch (weft_tensor_dtype(t)) {
      case WEFT_FLOAT32: { float x = static_cast<float>(f);
                           std::memcpy(e, &x, 4); break; }
      case WEFT_FLOAT64: std::memcpy(e, &f, 8); break;
      case WEFT_BOOL: e[0] = v & 1; break;
      case WEFT_FLOAT16: case WEFT_BFLOAT16: {
        uint16_t h = fdp.ConsumeIntegral<uint16_t>();
        std::memcpy(e, &h, 2);
        break;
      }
      default: std::memcpy(e, &v, size); break;  // little-endian truncation
    }
  }
}

weft_tensor* FuzzTensor(FuzzedDataProvider& fdp, int32_t dtype,
                        const std::vector<int64_t>& dims) {
  weft_tensor* t = nullptr;
  weft_status* st = weft_tensor_create(static_cast<weft_dtype>(dtype),
                                       dims.data(),
                                       static_cast<int32_t>(dims.size()), &t);
  if (st != nullptr) {
    weft_status_destroy(st);
    return nullptr;
  }
  FillTensor(fdp, t);
  return t;
}

// Counts of what inputs reached, printed at exit when WEFT_FUZZ_STATS is
// set, to see whether the harness gets past graph building.
struct Stats {
  long ops = 0, ops_ok = 0, sessions = 0, runs = 0, runs_ok = 0;
  std::map<std::string, long> ran;  // nodes of each op in successful runs
  ~Stats() {
    if (std::getenv("WEFT_FUZZ_STATS") == nullptr) return;
    std::fprintf(stderr, "ops %ld (ok %ld), sessions %ld, runs %ld (ok %ld)\n",
                 ops, ops_ok, sessions, runs, runs_ok);
    for (const auto& [op, n] : ran) std::fprintf(stderr, "  %s %ld\n", op.c_str(), n);
  }
} stats;

// With WEFT_FUZZ_TRACE set, each step is printed, so that a crashing input
// can be told as a program in a report.
const bool kTrace = std::getenv("WEFT_FUZZ_TRACE") != nullptr;

// The inferred shape of `o`: false for a bad output or an unknown rank.
bool ShapeOf(weft_output o, std::vector<int64_t>* shape) {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = 0;
  weft_status* st = weft_output_shape(o, dims, WEFT_MAX_RANK, &rank);
  weft_status_destroy(st);
  if (st != nullptr || rank < 0) return false;
  shape->assign(dims, dims + rank);
  return true;
}

// Whether `dims` hold at most `cap` elements, unknown dims counting as
// `unknown` each, without overflowing on the way.
bool AtMost(const std::vector<int64_t>& dims, int64_t unknown, int64_t cap) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) d = unknown;
    if (d > cap || (d > 0 && n > cap / d)) return false;
    n *= d;
  }
  return true;
}

std::string Describe(weft_output o) {
  if (o.node == nullptr) return "{NULL}";
  std::string s = std::string(weft_node_name(o.node)) + ":" +
                  std::to_string(o.index) + " " +
                  weft_dtype_name(weft_output_dtype(o)) + "[";
  std::vector<int64_t> dims;
  if (!ShapeOf(o, &dims)) return s + "?]";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

void Trace(const char* what, const std::vector<weft_output>& inputs,
           weft_status* st) {
  if (!kTrace) return;
  std::string s = what;
  for (const weft_output& o : inputs) s += " " + Describe(o);
  std::fprintf(stderr, "%s -> %s\n", s.c_str(),
               st ? weft_status_message(st) : "ok");
}

// Statuses that blame the runtime rather than the input are findings.
void Check(weft_status* st, const char* what) {
  if (st == nullptr) return;
  weft_code code = weft_status_code(st);
  if ((code == WEFT_INTERNAL || code == WEFT_UNKNOWN) &&
      std::getenv("WEFT_FUZZ_ALLOW_INTERNAL") == nullptr) {
    std::fprintf(stderr, "%s returned %s: %s\n", what, weft_code_name(code),
                 weft_status_message(st));
    std::abort();
  }
  weft_status_destroy(st);
}

struct Program {
  FuzzedDataProvider& fdp;
  weft_graph* graph = nullptr;
  std::vector<weft_output> outputs;  // outputs of nodes built so far
  std::vector<weft_node*> nodes;
  std::vector<weft_output> placeholders;

  explicit Program(FuzzedDataProvider& f) : fdp(f) {}

  weft_output AnyOutput() {
    if (outputs.empty()) return {nullptr, 0};
    weft_output o = outputs[fdp.ConsumeIntegralInRange<size_t>(
        0, outputs.size() - 1)];
    // Now and then an output index the node does not have.
    if (fdp.ConsumeIntegral<uint8_t>() > 250) o.index += fdp.ConsumeBool() ? 7 : -1;
    return o;
  }

  // Usually an output of the same dtype as `like`, so that ops with several
  // inputs of one type get past type checks; sometimes any output.
  weft_output OutputLike(weft_output like) {
    std::vector<weft_output> same;
    if (like.node != nullptr && fdp.ConsumeIntegral<uint8_t>() < 180) {
      for (const weft_output& o : outputs)
        if (weft_output_dtype(o) == weft_output_dtype(like)) same.push_back(o);
    }
    if (same.empty()) return AnyOutput();
    return same[fdp.ConsumeIntegralInRange<size_t>(0, same.size() - 1)];
  }

  // The dims of `o` when fully known and small, for a value shaped like it.
  bool SmallShapeOf(weft_output o, std::vector<int64_t>* shape) {
    return ShapeOf(o, shape) &&
           AtMost(*shape, kMaxElements + 1, kMaxElements);
  }

  void Added(weft_node* node) {
    nodes.push_back(node);
    for (int32_t i = 0; i < weft_node_num_outputs(node); ++i)
      outputs.push_back({node, i});
  }

  void SetAttr(weft_op_builder* b, const char* name, AttrType type) {
    switch (type) {
      case AttrType::kInt:
        weft_op_set_attr_int(b, name, FuzzInt(fdp));
        break;
      case AttrType::kFloat:
        weft_op_set_attr_float(b, name, Pick(fdp, kFloats));
        break;
      case AttrType::kBool:
        weft_op_set_attr_bool(b, name, fdp.ConsumeIntegral<int32_t>());
        break;
      case AttrType::kDtype:
        weft_op_set_attr_dtype(b, name,
                               static_cast<weft_dtype>(FuzzDtype(fdp)));
        break;
      case AttrType::kString:
        if (fdp.ConsumeBool()) {
          weft_op_set_attr_string(b, name, Pick(fdp, kStrings));
        } else {
          weft_op_set_attr_string(b, name,
                                  fdp.ConsumeRandomLengthString(16).c_str());
        }
        break;
      case AttrType::kIntList: {
        uint8_t c = fdp.ConsumeIntegral<uint8_t>();
        if (c == 255) {  // a huge list
          std::vector<int64_t> v(1 << 16, 1);
          weft_op_set_attr_int_list(b, name, v.data(), 1 << 16);
        } else if (c == 254) {
          weft_op_set_attr_int_list(b, name, nullptr,
                                    fdp.ConsumeIntegralInRange<int32_t>(-3, 3));
        } else {
          std::vector<int64_t> v(c % 9);
          for (auto& x : v) x = FuzzInt(fdp);
          weft_op_set_attr_int_list(b, name, v.data(),
                                    static_cast<int32_t>(v.size()));
        }
        break;
      }
      case AttrType::kFloatList: {
        std::vector<double> v(fdp.ConsumeIntegralInRange<size_t>(0, 8));
        for (auto& x : v) x = Pick(fdp, kFloats);
        weft_op_set_attr_float_list(b, name, v.data(),
                                    static_cast<int32_t>(v.size()));
        break;
      }
      case AttrType::kShape: {
        int32_t rank;
        std::vector<int64_t> dims = FuzzDims(fdp, &rank);
        weft_op_set_attr_shape(b, name, dims.data(), rank);
        break;
      }
      case AttrType::kTensor: {
        weft_tensor* t = FuzzTensor(fdp, FuzzDtype(fdp), SmallDims(fdp));
        weft_op_set_attr_tensor(b, name, t);
        weft_tensor_destroy(t);
        break;
      }
    }
  }

  void AddOp() {
    const OpSpec& op =
        Ops()[fdp.ConsumeIntegralInRange<size_t>(0, Ops().size() - 1)];
    weft_op_builder* b = weft_op_begin(
        graph, fdp.ConsumeBool() ? op.name.c_str()
                                 : fdp.ConsumeRandomLengthString(12).c_str(),
        fdp.ConsumeBool() ? nullptr : fdp.ConsumeRandomLengthString(8).c_str());
    // Mostly the declared arity, sometimes one more or one fewer.
    int32_t n = op.num_inputs + fdp.ConsumeIntegralInRange<int32_t>(-1, 1) *
                                    (fdp.ConsumeIntegral<uint8_t>() > 220);
    std::vector<weft_output> traced;
    for (int32_t i = 0; i < n; ++i) {
      if (op.variadic && i == op.num_inputs - 1) {
        std::vector<weft_output> list(fdp.ConsumeIntegralInRange<size_t>(0, 4));
        for (auto& o : list)
          traced.push_back(o = traced.empty() ? AnyOutput()
                                              : OutputLike(traced[0]));
        weft_op_add_input_list(b, list.data(),
                               static_cast<int32_t>(list.size()));
      } else {
        traced.push_back(traced.empty() ? AnyOutput() : OutputLike(traced[0]));
        weft_op_add_input(b, traced.back());
      }
    }
    for (const AttrSpec& a : op.attrs) {
      uint8_t how = fdp.ConsumeIntegral<uint8_t>();
      if (how < 200) {
        SetAttr(b, a.name.c_str(), a.type);
      } else if (how < 230) {  // the declared name with another type
        SetAttr(b, a.name.c_str(), static_cast<AttrType>(how % 9));
      }  // else left unset
    }
    while (fdp.ConsumeIntegral<uint8_t>() > 230) {
      SetAttr(b, Pick(fdp, kAttrNames),
              static_cast<AttrType>(fdp.ConsumeIntegralInRange<int>(0, 8)));
    }
    while (!nodes.empty() && fdp.ConsumeIntegral<uint8_t>() > 220) {
      weft_op_add_control_input(
          b, nodes[fdp.ConsumeIntegralInRange<size_t>(0, nodes.size() - 1)]);
    }
    if (fdp.ConsumeIntegral<uint8_t>() > 200)
      weft_op_set_device(b, Pick(fdp, kDevices));
    if (fdp.ConsumeIntegral<uint8_t>() == 255) {
      weft_op_abandon(b);
      return;
    }
    weft_node* node = nullptr;
    weft_status* st = weft_op_finish(b, fdp.ConsumeBool() ? &node : nullptr);
    if (st == nullptr && node == nullptr)
      node = weft_graph_node_at(graph, weft_graph_node_count(graph) - 1);
    Trace(op.name.c_str(), traced, st);
    ++stats.ops;
    if (st == nullptr) {
      ++stats.ops_ok;
      Added(node);
    }
    Check(st, "weft_op_finish");
  }

  void AddConstant() {
    // Often shaped and typed like an existing output, to meet it in an op.
    weft_output like = AnyOutput();
    std::vector<int64_t> shape;
    weft_tensor* t = like.node != nullptr && fdp.ConsumeBool() &&
                             SmallShapeOf(like, &shape)
                         ? FuzzTensor(fdp, weft_output_dtype(like), shape)
                         : FuzzTensor(fdp, FuzzDtype(fdp), SmallDims(fdp));
    weft_output out;
    weft_status* st = weft_graph_constant(graph, nullptr, t, &out);
    if (st == nullptr) {
      Added(out.node);
      Trace("Const", {out}, st);
    }
    Check(st, "weft_graph_constant");
    weft_tensor_destroy(t);
  }

  void AddPlaceholder() {
    int32_t rank;
    std::vector<int64_t> dims = FuzzDims(fdp, &rank);
    weft_output out;
    weft_status* st = weft_graph_placeholder(
        graph, nullptr, static_cast<weft_dtype>(FuzzDtype(fdp)),
        fdp.ConsumeIntegral<uint8_t>() == 0 ? nullptr : dims.data(), rank,
        &out);
    if (st == nullptr) {
      Added(out.node);
      placeholders.push_back(out);
      Trace("Placeholder", {out}, st);
    }
    Check(st, "weft_graph_placeholder");
  }

  void AddVariable() {
    weft_output value;
    weft_node* init = nullptr;
    weft_status* st = weft_graph_variable(graph, nullptr, AnyOutput(), &value,
                                          &init);
    if (st == nullptr) {
      Added(value.node);
      Added(init);
    }
    Check(st, "weft_graph_variable");
  }

  void AddGradients() {
    std::vector<weft_output> ys(fdp.ConsumeIntegralInRange<size_t>(0, 2));
    std::vector<weft_output> xs(fdp.ConsumeIntegralInRange<size_t>(0, 2));
    for (auto& o : ys) o = AnyOutput();
    for (auto& o : xs) o = AnyOutput();
    std::vector<weft_output> grad_ys(ys.size());
    for (auto& o : grad_ys) o = AnyOutput();
    std::vector<weft_output> grads(xs.size());
    int32_t before = weft_graph_node_count(graph);
    weft_status* st = weft_gradients(
        graph, ys.data(), static_cast<int32_t>(ys.size()), xs.data(),
        static_cast<int32_t>(xs.size()),
        fdp.ConsumeBool() ? grad_ys.data() : nullptr, grads.data());
    // Gradient nodes join the pool, so later ops and runs use them.
    for (int32_t i = before; i < weft_graph_node_count(graph); ++i)
      Added(weft_graph_node_at(graph, i));
    Check(st, "weft_gradients");
  }

  void AddMinimize() {
    weft_optimizer_options o;
    weft_optimizer_options_init(&o, fdp.ConsumeIntegralInRange<int32_t>(-1, 3));
    o.learning_rate = Pick(fdp, kFloats);
    if (fdp.ConsumeBool()) o.momentum = Pick(fdp, kFloats);
    if (fdp.ConsumeBool()) o.beta1 = Pick(fdp, kFloats);
    if (fdp.ConsumeBool()) o.epsilon = Pick(fdp, kFloats);
    o.use_nesterov = fdp.ConsumeBool();
    int32_t before = weft_graph_node_count(graph);
    weft_node* train = nullptr;
    weft_status* st = weft_minimize(graph, AnyOutput(), &o, nullptr, &train);
    for (int32_t i = before; i < weft_graph_node_count(graph); ++i)
      Added(weft_graph_node_at(graph, i));
    Check(st, "weft_minimize");
    if (fdp.ConsumeBool()) {
      weft_node* init = nullptr;
      st = weft_graph_initialize_all(graph, nullptr, &init);
      if (st == nullptr) Added(init);
      Check(st, "weft_graph_initialize_all");
    }
  }

  void Inspect() {
    weft_output o = AnyOutput();
    int64_t dims[4];
    int32_t rank = 0;
    // NULL and negative room too: a NULL array must be refused, not written.
    Check(weft_output_shape(o, fdp.ConsumeBool() ? dims : nullptr,
                            fdp.ConsumeIntegralInRange<int32_t>(-1, 4),
                            fdp.ConsumeBool() ? &rank : nullptr),
          "weft_output_shape");
    (void)weft_output_dtype(o);
    if (o.node != nullptr) {
      (void)weft_node_input(o.node, fdp.ConsumeIntegral<int32_t>());
      (void)weft_node_num_inputs(o.node);
      (void)weft_node_num_control_inputs(o.node);
      (void)weft_node_device(o.node);
      (void)weft_node_op_type(o.node);
      if (weft_graph_node_by_name(graph, weft_node_name(o.node)) != o.node) {
        std::fprintf(stderr, "node_by_name does not find %s\n",
                     weft_node_name(o.node));
        std::abort();
      }
      if (fdp.ConsumeBool()) {
        Check(weft_variable_set_trainable(graph, o.node, fdp.ConsumeBool()),
              "weft_variable_set_trainable");
      }
    }
    weft_node* vars[2];
    int32_t count = 0;
    Check(weft_graph_trainable_variables(graph, vars, fdp.ConsumeIntegralInRange<int32_t>(-1, 2), &count),
          "weft_graph_trainable_variables");
    // The shortcut for attribute-less ops, on any op and inputs.
    weft_output in[2] = {AnyOutput(), AnyOutput()}, out;
    const OpSpec& op =
        Ops()[fdp.ConsumeIntegralInRange<size_t>(0, Ops().size() - 1)];
    weft_status* st = weft_graph_apply(graph, op.name.c_str(), nullptr, in,
                                       fdp.ConsumeIntegralInRange<int32_t>(0, 2),
                                       &out);
    if (st == nullptr) Added(out.node);
    Check(st, "weft_graph_apply");
  }

  // Whether every value a run could make is small: outputs of unknown rank
  // pass, and unknown dims count as small, since only small tensors are
  // ever fed.
  bool CheapToRun() {
    for (const weft_output& o : outputs) {
      std::vector<int64_t> dims;
      if (ShapeOf(o, &dims) && !AtMost(dims, 4, kMaxRunElements)) return false;
    }
    return true;
  }

  weft_tensor* FeedFor(weft_output o) {
    int32_t dtype = weft_output_dtype(o);
    if (fdp.ConsumeIntegral<uint8_t>() > 230) dtype = FuzzDtype(fdp);
    std::vector<int64_t> shape;
    if (!ShapeOf(o, &shape) || fdp.ConsumeIntegral<uint8_t>() > 230) {
      shape = SmallDims(fdp);
    } else {
      for (int64_t& d : shape)
        if (d < 0) d = fdp.ConsumeIntegralInRange<int64_t>(0, 3);
      if (!AtMost(shape, 0, kMaxElements)) return nullptr;
    }
    return FuzzTensor(fdp, dtype, shape);
  }

  // Every accessor, in range and one past it.
  static void ReadMetadata(const weft_run_metadata* m) {
    for (int32_t i = 0; i <= weft_run_metadata_num_nodes(m); ++i) {
      const char* name = weft_run_metadata_node_name(m, i);
      (void)weft_run_metadata_node_device(m, i);
      (void)weft_run_metadata_node_reason(m, i);
      if (name != nullptr) (void)weft_run_metadata_device_of(m, name);
    }
    for (int32_t i = 0; i <= weft_run_metadata_num_transfers(m); ++i) {
      const char *value, *src, *dst;
      int32_t wire;
      uint64_t bytes;
      Check(weft_run_metadata_transfer(m, i, &value, &src, &dst, &wire, &bytes),
            "weft_run_metadata_transfer");
    }
    for (int32_t i = 0; i <= weft_run_metadata_num_merged(m); ++i) {
      const char *removed, *kept;
      Check(weft_run_metadata_merged(m, i, &removed, &kept),
            "weft_run_metadata_merged");
    }
    for (int32_t i = 0; i <= weft_run_metadata_num_devices(m); ++i) {
      (void)weft_run_metadata_device_name(m, i);
      (void)weft_run_metadata_peak_bytes(m, i);
    }
  }

  void Run(weft_session* session) {
    std::vector<weft_output> feeds;
    std::vector<weft_tensor*> values;
    for (const weft_output& p : placeholders) {
      if (fdp.ConsumeIntegral<uint8_t>() < 20) continue;  // left unfed
      weft_tensor* t = FeedFor(p);
      if (t == nullptr) continue;
      feeds.push_back(p);
      values.push_back(t);
    }
    while (!outputs.empty() && fdp.ConsumeIntegral<uint8_t>() > 230) {
      weft_output o = AnyOutput();
      weft_tensor* t = FeedFor(o);
      if (t == nullptr) continue;
      feeds.push_back(o);
      values.push_back(t);
    }
    std::vector<weft_output> fetches(fdp.ConsumeIntegralInRange<size_t>(0, 3));
    for (auto& o : fetches) o = AnyOutput();
    std::vector<weft_node*> targets;
    while (!nodes.empty() && fdp.ConsumeIntegral<uint8_t>() > 150) {
      targets.push_back(
          nodes[fdp.ConsumeIntegralInRange<size_t>(0, nodes.size() - 1)]);
    }
    std::vector<weft_tensor*> got(fetches.size(), nullptr);
    weft_run_metadata* metadata =
        fdp.ConsumeBool() ? weft_run_metadata_create() : nullptr;
    weft_status* st = weft_session_run_with_metadata(
        session, feeds.data(), values.data(),
        static_cast<int32_t>(feeds.size()), fetches.data(),
        static_cast<int32_t>(fetches.size()), targets.data(),
        static_cast<int32_t>(targets.size()), got.data(), metadata);
    if (st != nullptr) {
      for (weft_tensor* t : got) {
        if (t != nullptr) {
          std::fprintf(stderr, "a failed run returned a value\n");
          std::abort();
        }
      }
    }
    ++stats.runs;
    if (st == nullptr) ++stats.runs_ok;
    if (metadata != nullptr) {
      (void)weft_run_metadata_to_string(metadata);
      ReadMetadata(metadata);
      for (int32_t i = 0; st == nullptr && i < weft_run_metadata_num_nodes(metadata); ++i)
        ++stats.ran[weft_run_metadata_node_op(metadata, i)];
    }
    Check(st, "weft_session_run");
    weft_run_metadata_destroy(metadata);
    for (weft_tensor* t : got) {
      // A fetched value must be whole: its size agrees with its dims.
      if (t != nullptr) {
        int64_t n = 1;
        for (int32_t i = 0; i < weft_tensor_rank(t); ++i) n *= weft_tensor_dim(t, i);
        if (weft_tensor_byte_size(t) !=
            static_cast<size_t>(n) * weft_dtype_size(weft_tensor_dtype(t))) {
          std::fprintf(stderr, "fetched tensor's byte size disagrees with its dims\n");
          std::abort();
        }
      }
      weft_tensor_destroy(t);
    }
    for (weft_tensor* t : values) weft_tensor_destroy(t);
  }

  void Session() {
    weft_session_options o;
    weft_session_options_init(&o);
    const size_t sizes[] = {sizeof o, offsetof(weft_session_options, placement),
                            offsetof(weft_session_options, device_gflops),
                            sizeof(size_t), 0};
    o.struct_size = Pick(fdp, sizes);
    if (fdp.ConsumeBool()) o.devices = Pick(fdp, kDevices);
    // Small thread counts: a session per input must stay cheap (bounds on
    // huge counts are tested in the session suite).
    o.inter_op_threads = fdp.ConsumeIntegralInRange<int32_t>(-1, 2);
    o.intra_op_threads = fdp.ConsumeIntegralInRange<int32_t>(-1, 2);
    o.placement = fdp.ConsumeIntegralInRange<int32_t>(-1, 2);
    o.transfer_precision = fdp.ConsumeIntegralInRange<int32_t>(-1, 3);
    o.optimizations = fdp.ConsumeIntegral<uint32_t>();
    if (fdp.ConsumeBool()) o.device_gflops = Pick(fdp, kGflops);
    weft_session* session = nullptr;
    weft_status* st = weft_session_create(
        graph, fdp.ConsumeIntegral<uint8_t>() == 0 ? nullptr : &o, &session);
    Check(st, "weft_session_create");
    if (session == nullptr) return;
    ++stats.sessions;
    for (int runs = fdp.ConsumeIntegralInRange<int>(1, 3);
         runs > 0 && fdp.remaining_bytes() > 0; --runs) {
      // The graph may grow while a session runs it (weft/graph.h): nodes
      // added between runs must be planned as if they were there before.
      while (nodes.size() < 2 * kMaxNodes && fdp.ConsumeIntegral<uint8_t>() > 200)
        AddOp();
      if (!CheapToRun()) break;
      Run(session);
    }
    weft_session_destroy(session);
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Without the CPU plugin the runs would test nothing but refusals.
  if (weft_kernel_count("Add") == 0) {
    std::fprintf(stderr, "c_api: no kernel for Add: point WEFT_PLUGIN_PATH "
                         "at the CPU plugin (build/plugins/cpu)\n");
    std::exit(1);
  }
  (void)Ops();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  Program p(fdp);
  if (weft_graph_create(&p.graph) != nullptr) std::abort();
  for (int i = 0; i < kMaxNodes && fdp.remaining_bytes() > 0; ++i) {
    switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: case 1: p.AddConstant(); break;
      case 2: p.AddPlaceholder(); break;
      case 3: p.AddVariable(); break;
      case 4: p.AddGradients(); break;
      case 5: p.AddMinimize(); break;
      case 6: p.Inspect(); break;
      default: p.AddOp(); break;
    }
  }
  if (fdp.remaining_bytes() > 0) p.Session();
  weft_graph_destroy(p.graph);
  return 0;
}
