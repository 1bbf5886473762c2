// Ops defined by programs and plugins (weft/ops.h, "Defining ops").
#include "ops/defined_op.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/status.h"
#include "base/text.h"
#include "base/sized_struct.h"
#include "device/registry.h"
#include "grad/registry.h"
#include "device/kernel_context.h"
#include "graph/graph.h"
#include "weft/plugin.h"

// The context a defined op's shape function gets: the node's inference.
struct weft_shape_context {
  weft::InferenceContext* c;
};

namespace weft {
namespace {

constexpr int32_t kMaxPorts = 32;  // inputs, outputs, attributes each
constexpr size_t kMaxName = 64;    // one part of a name

// An input or output: a fixed dtype, or the dtype attribute typing it.
struct Port {
  std::string name;
  weft_dtype fixed = WEFT_DTYPE_INVALID;
  std::string type_attr;
};

struct DtypeAttr {
  std::string name;
  std::vector<weft_dtype> allowed;  // empty: any
  bool types_input = false;         // inferred from the inputs it types
};

// What a defined op's OpDef::infer needs.
struct Schema {
  std::string op;
  std::vector<Port> inputs, outputs;
  std::vector<DtypeAttr> dtype_attrs;
  weft_shape_fn shape_fn = nullptr;
  void* shape_arg = nullptr;
};

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > kMaxName ||
      !(std::isalpha(static_cast<unsigned char>(s[0]))))
    return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'))
      return false;
  return true;
}

// Whole-string numbers: no trailing text, no overflow.
bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool ParseFloat(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

// "[a, b, c]" into its items (trimmed); "[]" is empty.
bool SplitList(const std::string& s, std::vector<std::string>* items) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
  return SplitItems(s.substr(1, s.size() - 2), items);
}

// A C string literal with \" and \\ escapes.
bool ParseQuoted(const std::string& s, std::string* out) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return false;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    char ch = s[i];
    if (ch == '"') return false;
    if (ch == '\\') {
      if (i + 2 >= s.size() || (s[i + 1] != '"' && s[i + 1] != '\\'))
        return false;
      ch = s[++i];
    }
    out->push_back(ch);
  }
  return true;
}

// Parses `text` as a default of kind `type` (dtypes checked by the caller).
bool ParseDefault(const std::string& text, AttrType type, AttrValue* v) {
  v->type = type;
  std::vector<std::string> items;
  switch (type) {
    case AttrType::kInt: return ParseInt(text, &v->i);
    case AttrType::kFloat: return ParseFloat(text, &v->f);
    case AttrType::kBool:
      if (text != "true" && text != "false") return false;
      v->i = text == "true";
      return true;
    case AttrType::kDtype: {
      weft_dtype d;
      if (!DtypeFromName(text, &d)) return false;
      v->i = d;
      return true;
    }
    case AttrType::kString: return ParseQuoted(text, &v->s);
    case AttrType::kIntList:
    case AttrType::kShape:
      if (!SplitList(text, &items)) return false;
      if (type == AttrType::kShape && items.size() > WEFT_MAX_RANK)
        return false;
      for (const std::string& item : items) {
        int64_t x;
        if (!ParseInt(item, &x)) return false;
        if (type == AttrType::kShape && x < -1) return false;
        v->ints.push_back(x);
      }
      if (type == AttrType::kShape) v->i = static_cast<int64_t>(items.size());
      return true;
    case AttrType::kFloatList:
      if (!SplitList(text, &items)) return false;
      for (const std::string& item : items) {
        double x;
        if (!ParseFloat(item, &x)) return false;
        v->floats.push_back(x);
      }
      return true;
    case AttrType::kTensor: return false;
  }
  return false;
}

bool KindNamed(const std::string& kind, AttrType* out) {
  static const std::pair<const char*, AttrType> kKinds[] = {
      {"int", AttrType::kInt},          {"float", AttrType::kFloat},
      {"bool", AttrType::kBool},        {"dtype", AttrType::kDtype},
      {"string", AttrType::kString},    {"list(int)", AttrType::kIntList},
      {"list(float)", AttrType::kFloatList}, {"shape", AttrType::kShape}};
  for (const auto& k : kKinds)
    if (kind == k.first) {
      *out = k.second;
      return true;
    }
  return false;
}

// Reads `count` strings a def points at, each bounded.
weft_status* ReadStrings(const std::string& op, const char* what,
                         const char* const* items, int32_t count,
                         std::vector<std::string>* out) {
  if (count < 0 || count > kMaxPorts || (count > 0 && items == nullptr))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "op '%s': %d %s (at most %d, and a list when any)",
                  op.c_str(), count, what, kMaxPorts);
  for (int32_t i = 0; i < count; ++i) {
    std::string s;
    if (!ReadPluginString(items[i], &s))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "op '%s': %s %d is NULL or not NUL-terminated within %d "
                    "bytes", op.c_str(), what, i, WEFT_PLUGIN_MAX_STRING);
    out->push_back(std::move(s));
  }
  return nullptr;
}

weft_status* ParseAttr(const std::string& op, const std::string& text,
                       Schema* schema, AttrDef* out) {
  auto bad = [&](const std::string& why) {
    return Errorf(WEFT_INVALID_ARGUMENT, "op '%s': attribute \"%s\": %s",
                  op.c_str(), text.c_str(), why.c_str());
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos) return bad("not NAME: KIND");
  out->name = Trim(text.substr(0, colon));
  if (!IsIdentifier(out->name))
    return bad("the name must be a letter then letters, digits or '_'");
  std::string rest = Trim(text.substr(colon + 1));
  std::string kind, def_text;
  bool has_default = false;
  std::vector<weft_dtype> allowed;
  if (!rest.empty() && rest[0] == '{') {
    size_t close = rest.find('}');
    if (close == std::string::npos) return bad("the dtype set lacks '}'");
    std::vector<std::string> names;
    if (!SplitItems(rest.substr(1, close - 1), &names) || names.empty())
      return bad("the dtype set is empty or has an empty item");
    for (const std::string& item : names) {
      weft_dtype d;
      if (!DtypeFromName(item, &d))
        return bad("'" + item + "' is not a dtype name (float32, int64, ...)");
      if (std::find(allowed.begin(), allowed.end(), d) == allowed.end())
        allowed.push_back(d);
    }
    kind = "dtype";
    rest = Trim(rest.substr(close + 1));
    if (!rest.empty()) {
      if (rest[0] != '=') return bad("text after the dtype set");
      has_default = true;
      def_text = Trim(rest.substr(1));
    }
  } else {
    size_t eq = rest.find('=');
    kind = Trim(rest.substr(0, eq));
    if (eq != std::string::npos) {
      has_default = true;
      def_text = Trim(rest.substr(eq + 1));
    }
  }
  if (!KindNamed(kind, &out->type))
    return bad("unknown kind '" + kind + "' (int, float, bool, string, "
               "list(int), list(float), shape, dtype or {DTYPE, ...})");
  out->required = !has_default;
  out->has_default = has_default;
  if (has_default) {
    if (!ParseDefault(def_text, out->type, &out->default_value))
      return bad("the default '" + def_text + "' is not a " +
                 AttrTypeName(out->type));
    if (!allowed.empty() &&
        std::find(allowed.begin(), allowed.end(),
                  static_cast<weft_dtype>(out->default_value.i)) ==
            allowed.end())
      return bad("the default is not in the dtype set");
  }
  if (out->type == AttrType::kDtype)
    schema->dtype_attrs.push_back({out->name, std::move(allowed), false});
  return nullptr;
}

weft_status* ParsePort(const std::string& op, const char* what,
                       const std::string& text, Schema* schema, Port* out) {
  auto bad = [&](const std::string& why) {
    return Errorf(WEFT_INVALID_ARGUMENT, "op '%s': %s \"%s\": %s", op.c_str(),
                  what, text.c_str(), why.c_str());
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos) return bad("not NAME: TYPE");
  out->name = Trim(text.substr(0, colon));
  std::string type = Trim(text.substr(colon + 1));
  if (!IsIdentifier(out->name))
    return bad("the name must be a letter then letters, digits or '_'");
  if (DtypeFromName(type, &out->fixed)) return nullptr;
  for (DtypeAttr& a : schema->dtype_attrs)
    if (a.name == type) {
      out->type_attr = type;
      if (std::strcmp(what, "input") == 0) a.types_input = true;
      return nullptr;
    }
  return bad("'" + type + "' is neither a dtype name nor a dtype attribute "
             "of the op");
}

bool Contains(const std::vector<weft_dtype>& set, weft_dtype d) {
  return set.empty() || std::find(set.begin(), set.end(), d) != set.end();
}

// The shape function of every defined op: dtypes from the schema, then the
// definer's shape function.
weft_status* InferDefined(const Schema& s, InferenceContext& c) {
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const Port& p = s.inputs[i];
    weft_dtype d = c.input_dtypes[i];
    if (p.fixed != WEFT_DTYPE_INVALID) {
      if (d != p.fixed)
        return c.Fail("input %zu (%s) must be %s, got %s", i, p.name.c_str(),
                      weft_dtype_name(p.fixed), weft_dtype_name(d));
      continue;
    }
    const AttrValue* t = c.attr(p.type_attr.c_str());
    if (t != nullptr && t->i != d)
      return c.Fail("input %zu (%s) has dtype %s but %s is %s", i,
                    p.name.c_str(), weft_dtype_name(d), p.type_attr.c_str(),
                    weft_dtype_name(static_cast<weft_dtype>(t->i)));
    if (t == nullptr) {
      AttrValue v;
      v.type = AttrType::kDtype;
      v.i = d;
      SetAttr(c.attrs, p.type_attr, v);
    }
  }
  for (const DtypeAttr& a : s.dtype_attrs) {
    const AttrValue* t = c.attr(a.name.c_str());
    if (t == nullptr) continue;  // a dtype attribute no port uses
    weft_dtype d = static_cast<weft_dtype>(t->i);
    if (!Contains(a.allowed, d)) {
      std::string set;
      for (weft_dtype x : a.allowed)
        set += std::string(set.empty() ? "" : ", ") + weft_dtype_name(x);
      return c.Fail("%s = %s is not one of {%s}", a.name.c_str(),
                    weft_dtype_name(d), set.c_str());
    }
  }
  c.output_dtypes.clear();
  for (const Port& p : s.outputs)
    c.output_dtypes.push_back(
        p.fixed != WEFT_DTYPE_INVALID
            ? p.fixed
            : static_cast<weft_dtype>(c.attr(p.type_attr.c_str())->i));
  c.output_shapes.assign(s.outputs.size(), ShapeInfo::Unknown());
  if (s.shape_fn == nullptr) return nullptr;
  weft_shape_context ctx{&c};
  weft_status* st = nullptr;
  try {
    st = s.shape_fn(s.shape_arg, &ctx);
  } catch (...) {
    return c.Fail("its shape function threw an exception");
  }
  if (st != nullptr)
    return Annotate(st, "node '" + c.node_name + "' (" + c.op +
                            "): shape function");
  return nullptr;
}

std::string Pointer(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

weft_status* ParseOpDef(const weft_op_def* given, const std::string& origin,
                        OpDef* out) {
  if (given == nullptr) return Error(WEFT_INVALID_ARGUMENT, "op def is NULL");
  if (given->struct_size < sizeof(weft_op_def))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "op def is truncated (struct_size %zu; 1.5's is %zu)",
                  given->struct_size, sizeof(weft_op_def));
  const weft_op_def& def = *given;
  std::string name;
  if (!ReadPluginString(def.name, &name))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "op def has no name (NUL-terminated within %d bytes)",
                  WEFT_PLUGIN_MAX_STRING);
  size_t sep = name.find('>');
  if (sep == std::string::npos || !IsIdentifier(name.substr(0, sep)) ||
      !IsIdentifier(name.substr(sep + 1)))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "op name '%s' is not NAMESPACE>NAME (each a letter then "
                  "letters, digits or '_', at most %zu): ops defined outside "
                  "the runtime are namespaced so none can shadow another",
                  name.c_str(), kMaxName);
  auto schema = std::make_shared<Schema>();
  schema->op = name;
  std::vector<std::string> inputs, outputs, attrs;
  WEFT_RETURN_IF_ERROR(
      ReadStrings(name, "inputs", def.inputs, def.num_inputs, &inputs));
  WEFT_RETURN_IF_ERROR(
      ReadStrings(name, "outputs", def.outputs, def.num_outputs, &outputs));
  WEFT_RETURN_IF_ERROR(
      ReadStrings(name, "attributes", def.attrs, def.num_attrs, &attrs));
  if (outputs.empty())
    return Errorf(WEFT_INVALID_ARGUMENT, "op '%s' has no outputs",
                  name.c_str());
  OpDef d;
  d.name = name;
  d.origin = origin;
  if (def.summary != nullptr && !ReadPluginString(def.summary, &d.summary))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "op '%s': summary not NUL-terminated", name.c_str());
  for (const std::string& text : attrs) {
    AttrDef a;
    WEFT_RETURN_IF_ERROR(ParseAttr(name, text, schema.get(), &a));
    for (const AttrDef& b : d.attrs)
      if (b.name == a.name)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "op '%s': attribute '%s' is declared twice",
                      name.c_str(), a.name.c_str());
    d.attrs.push_back(std::move(a));
  }
  auto ports = [&](const char* what, const std::vector<std::string>& texts,
                   std::vector<Port>* into) -> weft_status* {
    for (const std::string& text : texts) {
      Port p;
      WEFT_RETURN_IF_ERROR(ParsePort(name, what, text, schema.get(), &p));
      for (const Port& q : *into)
        if (q.name == p.name)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "op '%s': %s '%s' is declared twice", name.c_str(),
                        what, p.name.c_str());
      into->push_back(std::move(p));
    }
    return nullptr;
  };
  WEFT_RETURN_IF_ERROR(ports("input", inputs, &schema->inputs));
  WEFT_RETURN_IF_ERROR(ports("output", outputs, &schema->outputs));
  // A dtype attribute typing an input comes from it: no default, never
  // required of the node (a node may still set it, and must then agree).
  for (const DtypeAttr& t : schema->dtype_attrs) {
    if (!t.types_input) continue;
    for (AttrDef& a : d.attrs)
      if (a.name == t.name) {
        if (a.has_default)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "op '%s': dtype attribute '%s' types an input, so "
                        "it takes the input's dtype and cannot have a "
                        "default", name.c_str(), a.name.c_str());
        a.required = false;
        a.has_default = false;
      }
  }
  schema->shape_fn = def.shape_fn;
  schema->shape_arg = def.shape_arg;
  d.input_names = inputs;
  d.num_outputs = static_cast<int>(outputs.size());
  for (const std::string& o : outputs)
    d.outputs_doc += (d.outputs_doc.empty() ? "" : ", ") + o;
  d.stateful = def.stateful != 0;
  d.exec = ExecKind::kKernel;
  d.infer = [schema](InferenceContext& c) { return InferDefined(*schema, c); };
  // Identity: the schema as written plus the functions, so that the same
  // definition registered twice is one op and anything else conflicts.
  d.identity = name + "(";
  for (size_t i = 0; i < inputs.size(); ++i)
    d.identity += (i ? ", " : "") + inputs[i];
  d.identity += ") -> (" + d.outputs_doc + ")";
  for (const std::string& a : attrs) {
    d.identity += "; " + a;
    d.attributes_doc += (d.attributes_doc.empty() ? "" : ", ") + a;
  }
  if (d.stateful) d.identity += "; stateful";
  d.identity += "; shape fn " + Pointer(reinterpret_cast<void*>(def.shape_fn)) +
                "/" + Pointer(def.shape_arg) + "; gradient " +
                Pointer(reinterpret_cast<void*>(def.gradient)) + "/" +
                Pointer(def.gradient_arg);
  *out = std::move(d);
  return nullptr;
}

DefinedGradient GradientOf(const weft_op_def* def, const std::string& op) {
  return DefinedGradient{op, def->gradient, def->gradient_arg};
}

const weft_shape_api* ShapeApi() {
  static const weft_shape_api api = [] {
    weft_shape_api a{};
    a.struct_size = sizeof a;
    a.shape_num_inputs = weft_shape_num_inputs;
    a.shape_input_dtype = weft_shape_input_dtype;
    a.shape_input_rank = weft_shape_input_rank;
    a.shape_input_dim = weft_shape_input_dim;
    a.shape_attr = weft_shape_attr;
    a.shape_set_output = weft_shape_set_output;
    a.shape_error = weft_shape_error;
    return a;
  }();
  return &api;
}

}  // namespace weft

using weft::InferenceContext;

namespace {

// `v` (NULL: absent, NOT_FOUND) as the C struct, pointing into it.
weft_status* DescribeAttr(const weft::AttrValue* v, const std::string& node,
                          const std::string& op, const char* name,
                          weft_attr_value* out) {
  return weft::Guard([&]() -> weft_status* {
    if (v == nullptr)
      return weft::Errorf(WEFT_NOT_FOUND, "node '%s' (%s) has no attribute "
                          "'%s'", node.c_str(), op.c_str(), name);
    weft_attr_value full{};
    full.struct_size = sizeof full;
    full.type = static_cast<int32_t>(v->type);
    full.i = v->i;
    full.f = v->f;
    full.s = v->s.c_str();
    if (v->type == weft::AttrType::kFloatList) {
      full.floats = v->floats.data();
      full.count = static_cast<int32_t>(v->floats.size());
    } else {
      full.ints = v->ints.data();
      full.count = static_cast<int32_t>(v->ints.size());
    }
    return weft::WriteSized(full, out);
  });
}

// A host-language kernel (weft_kernel_register_host) and its trampoline.
struct HostKernel {
  weft_host_kernel_fn fn;
  void* arg;
};

weft_status* RunHostKernel(void* arg, weft_kernel_context* ctx) {
  const HostKernel& k = *static_cast<const HostKernel*>(arg);
  const weft_host_api* host = weft::HostApi();
  const int32_t n_in = host->kernel_num_inputs(ctx);
  const int32_t n_out = host->kernel_num_outputs(ctx);
  std::vector<weft_tensor*> inputs(n_in, nullptr), outputs(n_out, nullptr);
  auto release = [&] {
    for (weft_tensor* t : inputs) weft_tensor_destroy(t);
    for (weft_tensor* t : outputs) weft_tensor_destroy(t);
  };
  for (int32_t i = 0; i < n_in; ++i) {
    weft_kernel_tensor in;
    in.struct_size = sizeof in;
    weft_status* st = host->kernel_input(ctx, i, &in);
    // The CPU devices' memory is host memory: handle + offset is an address.
    if (st == nullptr)
      st = weft_tensor_create_copy(
          static_cast<weft_dtype>(in.dtype), in.dims, in.rank,
          static_cast<const char*>(in.data) + in.offset, in.byte_size,
          &inputs[i]);
    if (st != nullptr) {
      release();
      return st;
    }
  }
  weft_status* st = k.fn(k.arg, ctx, inputs.data(), n_in, outputs.data(),
                         n_out);
  for (int32_t o = 0; st == nullptr && o < n_out; ++o) {
    const weft_tensor* t = outputs[o];
    if (t == nullptr) {
      st = weft::Errorf(WEFT_INTERNAL, "node '%s' (%s): the kernel set no "
                        "output %d", host->kernel_node_name(ctx),
                        host->kernel_op(ctx), o);
      break;
    }
    weft_kernel_tensor out;
    out.struct_size = sizeof out;
    st = host->kernel_allocate_output(ctx, o, weft_tensor_dtype(t),
                                      weft_tensor_dims(t), weft_tensor_rank(t),
                                      &out);
    if (st == nullptr && out.byte_size > 0)
      std::memcpy(static_cast<char*>(out.data) + out.offset,
                  weft_tensor_data(t), out.byte_size);
  }
  release();
  return st;
}

bool InputInRange(const weft_shape_context* ctx, int32_t index) {
  return ctx != nullptr && index >= 0 &&
         static_cast<size_t>(index) < ctx->c->input_shapes.size();
}

}  // namespace

extern "C" {

int32_t weft_shape_num_inputs(const weft_shape_context* ctx) {
  return ctx ? static_cast<int32_t>(ctx->c->input_shapes.size()) : 0;
}

weft_dtype weft_shape_input_dtype(const weft_shape_context* ctx,
                                  int32_t index) {
  return InputInRange(ctx, index) ? ctx->c->input_dtypes[index]
                                  : WEFT_DTYPE_INVALID;
}

int32_t weft_shape_input_rank(const weft_shape_context* ctx, int32_t index) {
  return InputInRange(ctx, index) ? ctx->c->input_shapes[index].rank : -1;
}

int64_t weft_shape_input_dim(const weft_shape_context* ctx, int32_t index,
                             int32_t axis) {
  if (!InputInRange(ctx, index)) return -1;
  const weft::ShapeInfo& s = ctx->c->input_shapes[index];
  if (axis < 0 || axis >= s.rank) return -1;
  return s.dims[axis];
}

weft_status* weft_shape_attr(const weft_shape_context* ctx, const char* name,
                             weft_attr_value* out) {
  if (ctx == nullptr || name == nullptr || out == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT,
                       "weft_shape_attr: NULL context, name or output");
  return DescribeAttr(ctx->c->attr(name), ctx->c->node_name, ctx->c->op,
                      name, out);
}

weft_status* weft_shape_set_output(weft_shape_context* ctx, int32_t index,
                                   const int64_t* dims, int32_t rank) {
  if (ctx == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "shape context is NULL");
  InferenceContext& c = *ctx->c;
  if (index < 0 || static_cast<size_t>(index) >= c.output_shapes.size())
    return weft::Errorf(WEFT_OUT_OF_RANGE,
                        "node '%s' (%s) has %zu outputs; no output %d",
                        c.node_name.c_str(), c.op.c_str(),
                        c.output_shapes.size(), index);
  if (rank < 0) {
    c.output_shapes[index] = weft::ShapeInfo::Unknown();
    return nullptr;
  }
  if (rank > WEFT_MAX_RANK || (rank > 0 && dims == nullptr))
    return c.Fail("output %d: rank %d (at most %d, with dims)", index, rank,
                  WEFT_MAX_RANK);
  std::vector<int64_t> d(dims, dims + rank);
  for (int64_t x : d)
    if (x < -1)
      return c.Fail("output %d: dimension %lld (-1 means unknown)", index,
                    static_cast<long long>(x));
  c.output_shapes[index] = weft::ShapeInfo::Of(std::move(d));
  return nullptr;
}

weft_status* weft_shape_error(const weft_shape_context* ctx,
                              const char* message) {
  std::string text = weft::PluginText(message);
  if (ctx == nullptr) return weft::Error(WEFT_INVALID_ARGUMENT, text);
  return ctx->c->Fail("%s", text.c_str());
}

weft_status* weft_kernel_register_host(const char* op, weft_host_kernel_fn fn,
                                       void* arg) {
  if (fn == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT,
                       "weft_kernel_register_host: fn is NULL");
  // Kernels live as long as the process, and so does what they point at.
  auto* k = new HostKernel{fn, arg};
  weft_kernel_def def{};
  def.struct_size = sizeof def;
  def.op = op;
  def.compute = RunHostKernel;
  def.kernel_arg = k;
  weft_status* st = weft_kernel_register("CPU", &def);
  if (st != nullptr) delete k;
  return st;
}

weft_status* weft_kernel_attr(const weft_kernel_call* call, const char* name,
                              weft_attr_value* out) {
  if (call == nullptr || name == nullptr || out == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT,
                       "weft_kernel_attr: NULL call, name or output");
  return DescribeAttr(weft::FindAttr(call->node->attrs, name),
                      call->node->name, call->node->op_type, name, out);
}

weft_status* weft_node_attr(const weft_node* node, const char* name,
                            weft_attr_value* out) {
  if (node == nullptr || name == nullptr || out == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT,
                       "weft_node_attr: NULL node, name or output");
  return DescribeAttr(weft::FindAttr(node->attrs, name), node->name,
                      node->op_type, name, out);
}

weft_status* weft_op_register(const weft_op_def* def) {
  return weft::Guard([&]() -> weft_status* {
    weft::OpDef d;
    WEFT_RETURN_IF_ERROR(weft::ParseOpDef(def, "program", &d));
    std::string name = d.name;
    std::vector<weft::OpDef> defs;
    defs.push_back(std::move(d));
    std::vector<bool> added;
    WEFT_RETURN_IF_ERROR(weft::OpRegistry::GlobalMutable().AddDefined(
        std::move(defs), &added));
    // The same definition again changes nothing, not even a gradient the
    // program has registered for the op since.
    if (added[0] && def->gradient != nullptr)
      return weft_gradient_register(name.c_str(), def->gradient,
                                    def->gradient_arg);
    return nullptr;
  });
}

}  // extern "C"

static_assert(static_cast<int>(weft::AttrType::kInt) == WEFT_ATTR_INT &&
                  static_cast<int>(weft::AttrType::kShape) == WEFT_ATTR_SHAPE &&
                  static_cast<int>(weft::AttrType::kTensor) ==
                      WEFT_ATTR_TENSOR,
              "weft_attr_type mirrors AttrType");
