// The service table the host hands to plugins.  Every function here is
// called from plugin code, so none may throw and each validates what it is
// given: a plugin bug must become a status, not a host crash.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/hot.h"
#include "base/status.h"
#include "device/device.h"
#include "device/kernel_context.h"
#include "device/registry.h"
#include "ops/defined_op.h"

namespace weft {
namespace {

weft_status* HostStatusCreate(int32_t code, const char* message) {
  return Error(static_cast<weft_code>(code), PluginText(message));
}

void HostLog(int32_t level, const char* message) {
  static const int threshold = [] {
    const char* env = getenv("WEFT_LOG");
    if (env && strcmp(env, "debug") == 0) return 0;
    if (env && strcmp(env, "info") == 0) return 1;
    return 2;
  }();
  if (level < threshold) return;
  static const char* names[] = {"debug", "info", "warning", "error"};
  const char* name = level >= 0 && level <= 3 ? names[level] : "log";
  std::fprintf(stderr, "weft plugin %s: %s\n", name,
               PluginText(message).c_str());
}

// Runs `body` on the registrar's state under its lock, or refuses when the
// plugin's entry has returned: the registrar then belongs to nobody.
template <typename F>
weft_status* WithOpenRegistrar(weft_kernel_registrar* r, const char* what,
                               F&& body) {
  if (r == nullptr) return Error(WEFT_INVALID_ARGUMENT, "registrar is NULL");
  return Guard([&]() -> weft_status* {
    std::lock_guard<std::mutex> lock(r->impl.mu);
    if (!r->impl.open)
      return Errorf(WEFT_FAILED_PRECONDITION,
                    "%s called after weft_plugin_entry returned: it is "
                    "valid only during the entry call", what);
    return body(r->impl);
  });
}

// Bounds on a kernel definition's lists: far above any real kernel (a
// dtype list needs at most one entry per dtype), low enough that a
// plugin's garbage count is refused instead of read.
constexpr int32_t kMaxDtypesPerConstraint = 256;
constexpr int32_t kMaxTypeConstraints = 16;

}  // namespace

weft_status* KernelFromDef(const weft_kernel_def* def,
                           const std::function<bool(const std::string&)>& known,
                           KernelReg* out, bool* ignored) {
  *ignored = false;
  if (def == nullptr || def->struct_size < offsetof(weft_kernel_def,
                                                     kernel_arg) +
                                                sizeof(void*))
    return Error(WEFT_INVALID_ARGUMENT,
                 "kernel definition is missing or truncated");
  KernelReg k;
  if (!ReadPluginString(def->op, &k.op) || def->compute == nullptr)
    return Error(WEFT_INVALID_ARGUMENT,
                 "kernel definition lacks an op name (NUL-terminated "
                 "within WEFT_PLUGIN_MAX_STRING bytes) or compute function");
  if (def->dtype_attr != nullptr &&
      !ReadPluginString(def->dtype_attr, &k.dtype_attr))
    return Error(WEFT_INVALID_ARGUMENT,
                 "kernel for " + k.op + " has an unterminated dtype_attr");
  if (def->num_dtypes < 0 || def->num_dtypes > kMaxDtypesPerConstraint ||
      (def->num_dtypes > 0 && def->dtypes == nullptr))
    return Error(WEFT_INVALID_ARGUMENT,
                 "kernel for " + k.op + " has a bad dtype list");
  if (!known(k.op)) {
    *ignored = true;
    out->op = k.op;
    return nullptr;
  }
  k.dtypes.assign(def->dtypes, def->dtypes + def->num_dtypes);
  // Appended in 1.2: a shorter def has no further constraint.
  if (def->struct_size >= offsetof(weft_kernel_def, num_type_constraints) +
                              sizeof def->num_type_constraints) {
    const int32_t n = def->num_type_constraints;
    if (n < 0 || n > kMaxTypeConstraints ||
        (n > 0 && def->type_constraints == nullptr))
      return Error(WEFT_INVALID_ARGUMENT,
                   "kernel for " + k.op + " has a bad type constraint list");
    for (int32_t i = 0; i < n; ++i) {
      const weft_kernel_type_constraint& c = def->type_constraints[i];
      std::string attr;
      if (!ReadPluginString(c.attr, &attr) || attr.empty() ||
          c.num_dtypes < 0 || c.num_dtypes > kMaxDtypesPerConstraint ||
          (c.num_dtypes > 0 && c.dtypes == nullptr))
        return Error(WEFT_INVALID_ARGUMENT,
                     "kernel for " + k.op + ": type constraint " +
                         std::to_string(i) +
                         " lacks an attribute name or has a bad dtype list");
      k.type_constraints.push_back(
          TypeConstraint{attr, {c.dtypes, c.dtypes + c.num_dtypes}});
    }
  }
  // Appended in 1.4: the device type, when not the plugin's own.
  if (def->struct_size >= offsetof(weft_kernel_def, device_type) +
                              sizeof def->device_type &&
      def->device_type != nullptr &&
      (!ReadPluginString(def->device_type, &k.device_type) ||
       k.device_type.empty()))
    return Error(WEFT_INVALID_ARGUMENT,
                 "kernel for " + k.op + " has an empty or unterminated "
                 "device_type");
  // Appended in 1.5: an asynchronous entry point.
  if (def->struct_size >= offsetof(weft_kernel_def, compute_async) +
                              sizeof def->compute_async)
    k.compute_async = def->compute_async;
  // Appended in 1.8: the described call and what its output 0 may overwrite.
  if (def->struct_size >= offsetof(weft_kernel_def, output_overwrites) +
                              sizeof def->output_overwrites) {
    k.compute_described = def->compute_described;
    k.output_overwrites = def->output_overwrites;
  }
  k.priority = def->priority;
  k.compute = def->compute;
  k.arg = def->kernel_arg;
  *out = std::move(k);
  return nullptr;
}

namespace {

// Whether `op` is in the library or among the ops the plugin registering
// defines in this entry call.
bool KnownTo(const KernelRegistrarImpl& impl, const std::string& op) {
  if (OpRegistry::Global().Find(op) != nullptr) return true;
  for (const OpDef& d : impl.ops)
    if (d.name == op) return true;
  return false;
}

weft_status* HostRegisterKernel(weft_kernel_registrar* r,
                                const weft_kernel_def* def) {
  return WithOpenRegistrar(r, "register_kernel", [&](KernelRegistrarImpl& impl)
                                                     -> weft_status* {
    KernelReg k;
    bool ignored = false;
    weft_status* st = KernelFromDef(
        def, [&](const std::string& op) { return KnownTo(impl, op); }, &k,
        &ignored);
    if (st != nullptr) {
      if (impl.first_error.empty()) impl.first_error = weft_status_message(st);
      return st;
    }
    if (ignored) {
      HostLog(WEFT_LOG_WARNING,
              ("ignoring a kernel for unknown op '" + k.op + "'").c_str());
      return nullptr;
    }
    impl.pending.push_back(std::move(k));
    return nullptr;
  });
}

weft_status* HostRegisterOp(weft_kernel_registrar* r, const weft_op_def* def) {
  return WithOpenRegistrar(r, "register_op", [&](KernelRegistrarImpl& impl)
                                                 -> weft_status* {
    OpDef d;
    // The origin is completed ("plugin NAME") when the plugin is accepted:
    // its name is not known until its table is read.
    weft_status* st = ParseOpDef(def, "plugin", &d);
    if (st == nullptr)
      for (const OpDef& other : impl.ops)
        if (other.name == d.name)
          st = Errorf(WEFT_ALREADY_EXISTS, "op '%s' is defined twice",
                      d.name.c_str());
    if (st != nullptr) {
      if (impl.first_error.empty()) impl.first_error = weft_status_message(st);
      return st;
    }
    if (def->gradient != nullptr)
      impl.gradients.push_back({d.name, def->gradient, def->gradient_arg});
    impl.ops.push_back(std::move(d));
    return nullptr;
  });
}

weft_status* HostRegisterGradient(weft_kernel_registrar* r, const char* op,
                                  weft_gradient_fn fn, void* arg) {
  return WithOpenRegistrar(r, "register_gradient",
                           [&](KernelRegistrarImpl& impl) -> weft_status* {
    std::string name;
    if (!ReadPluginString(op, &name) || fn == nullptr) {
      const char* why = "gradient registration lacks an op name "
                        "(NUL-terminated within WEFT_PLUGIN_MAX_STRING "
                        "bytes) or function";
      if (impl.first_error.empty()) impl.first_error = why;
      return Error(WEFT_INVALID_ARGUMENT, why);
    }
    if (!KnownTo(impl, name)) {
      HostLog(WEFT_LOG_WARNING,
              ("ignoring a gradient for unknown op '" + name + "'").c_str());
      return nullptr;
    }
    impl.gradients.push_back({name, fn, arg});
    return nullptr;
  });
}

// The user API's graph functions, for plugins' gradient functions.
const weft_graph_api* GraphApi() {
  static const weft_graph_api api = [] {
    weft_graph_api g{};
    g.struct_size = sizeof g;
    g.op_begin = weft_op_begin;
    g.op_add_input = weft_op_add_input;
    g.op_add_input_list = weft_op_add_input_list;
    g.op_add_control_input = weft_op_add_control_input;
    g.op_set_device = weft_op_set_device;
    g.op_set_attr_int = weft_op_set_attr_int;
    g.op_set_attr_float = weft_op_set_attr_float;
    g.op_set_attr_bool = weft_op_set_attr_bool;
    g.op_set_attr_dtype = weft_op_set_attr_dtype;
    g.op_set_attr_int_list = weft_op_set_attr_int_list;
    g.op_set_attr_shape = weft_op_set_attr_shape;
    g.op_finish = weft_op_finish;
    g.node_name = weft_node_name;
    g.node_op_type = weft_node_op_type;
    g.node_num_inputs = weft_node_num_inputs;
    g.node_input = weft_node_input;
    g.output_dtype = weft_output_dtype;
    g.gradient_graph = weft_gradient_graph;
    g.gradient_node = weft_gradient_node;
    g.gradient_output_grad = weft_gradient_output_grad;
    g.gradient_input_wanted = weft_gradient_input_wanted;
    g.gradient_set_input_grad = weft_gradient_set_input_grad;
    g.node_attr = weft_node_attr;
    return g;
  }();
  return &api;
}

const char* HostNodeName(const weft_kernel_context* c) {
  return c ? c->node->name.c_str() : "";
}
const char* HostOp(const weft_kernel_context* c) {
  return c ? c->node->op_type.c_str() : "";
}
int32_t HostNumInputs(const weft_kernel_context* c) {
  return c ? c->num_inputs : 0;
}
int32_t HostNumOutputs(const weft_kernel_context* c) {
  return c ? c->num_outputs : 0;
}

// Inline: every input and output of every kernel goes through here.
inline __attribute__((always_inline)) void Describe(const TensorValue& v,
                                                    weft_kernel_tensor* out) {
  size_t size = out->struct_size;
  if (size >= sizeof(weft_kernel_tensor)) {  // the common case: no copy
    DescribeValue(v, out);
    return;
  }
  weft_kernel_tensor full{};
  full.struct_size = size;
  full.dtype = v.dtype;
  full.rank = v.dims.rank();
  full.dims = v.dims.data();
  full.element_count = v.elements();
  full.byte_size = v.byte_size();
  full.data = v.buffer ? v.buffer->handle : nullptr;
  full.offset = v.offset;
  std::memcpy(out, &full, std::min(size, sizeof full));
}

// A kernel called through compute_described has its outputs already
// (plugin.h): allocating or forwarding one more is the plugin's bug.
__attribute__((noinline, cold)) weft_status* DescribedCallRefuses(
    const weft_kernel_context* c, const char* call) {
  return Errorf(WEFT_FAILED_PRECONDITION,
                "node '%s': %s in a compute_described call (the host "
                "allocated the outputs before the call)",
                c->node->name.c_str(), call);
}

// The refusals of HostInput, out of line: the success path is then a leaf
// function without a stack frame (every input of every kernel comes here).
__attribute__((noinline, cold)) weft_status* HostInputError(
    const weft_kernel_context* c, int32_t index, weft_kernel_tensor* out) {
  if (c == nullptr || out == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "kernel_input: NULL argument");
  return Errorf(WEFT_OUT_OF_RANGE, "node '%s': input %d of %d",
                c->node->name.c_str(), index, c->num_inputs);
}

WEFT_HOT weft_status* HostInput(const weft_kernel_context* c, int32_t index,
                       weft_kernel_tensor* out) {
  // Unsigned compare: a negative index is out of range too.
  if (__builtin_expect(c == nullptr || out == nullptr ||
                           static_cast<uint32_t>(index) >=
                               static_cast<uint32_t>(c->num_inputs),
                       0))
    return HostInputError(c, index, out);
  Describe(*c->inputs[index], out);
  return nullptr;
}

WEFT_HOT weft_status* HostAllocateOutput(weft_kernel_context* c, int32_t index,
                                int32_t dtype, const int64_t* dims,
                                int32_t rank, weft_kernel_tensor* out) {
  if (c == nullptr || out == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "kernel_allocate_output: NULL argument");
  if (c->described) return DescribedCallRefuses(c, "kernel_allocate_output");
  if (index < 0 || index >= c->num_outputs)
    return Errorf(WEFT_OUT_OF_RANGE, "node '%s': output %d of %d",
                  c->node->name.c_str(), index, c->num_outputs);
  size_t bytes = 0;
  // The node's name is added only on failure: no string work per call.
  if (weft_status* st =
          CheckedByteSize(static_cast<weft_dtype>(dtype), dims, rank, &bytes))
    return Annotate(st, "node '" + c->node->name + "'");
  TensorValue& v = c->outputs[index];
  v.dtype = static_cast<weft_dtype>(dtype);
  v.dims.assign(dims, rank);
  v.offset = 0;
  WEFT_RETURN_IF_ERROR(c->device->Allocate(bytes, &v.buffer));
  Describe(v, out);
  return nullptr;
}

weft_status* HostForwardInput(weft_kernel_context* c, int32_t in, int32_t o,
                              const int64_t* dims, int32_t rank) {
  if (c == nullptr) return Error(WEFT_INVALID_ARGUMENT, "context is NULL");
  if (c->described) return DescribedCallRefuses(c, "kernel_forward_input");
  if (in < 0 || in >= c->num_inputs || o < 0 || o >= c->num_outputs)
    return Errorf(WEFT_OUT_OF_RANGE, "node '%s': bad input or output index",
                  c->node->name.c_str());
  const TensorValue& src = *c->inputs[in];
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(CheckedByteSize(src.dtype, dims, rank, &bytes));
  if (bytes != src.byte_size())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': cannot view %s as %s (element counts differ)",
                  c->node->name.c_str(), src.dims.ToString().c_str(),
                  ShapeString(dims, rank).c_str());
  TensorValue& dst = c->outputs[o];
  dst.dtype = src.dtype;
  dst.dims.assign(dims, rank);
  dst.buffer = src.buffer;
  dst.offset = src.offset;
  return nullptr;
}

// HostForwardInputOrAllocate's other paths, out of line so that its
// forwarding path (an element-wise chain's every node) needs no stack frame:
// bad arguments, and the allocation when the input cannot be handed over.
__attribute__((noinline)) weft_status* HostForwardInputOrAllocateSlow(
    weft_kernel_context* c, int32_t in, int32_t o, int32_t dtype,
    const int64_t* dims, int32_t rank, weft_kernel_tensor* out,
    int32_t* forwarded) {
  if (forwarded != nullptr) *forwarded = 0;
  if (c == nullptr || out == nullptr)
    return Error(WEFT_INVALID_ARGUMENT,
                 "kernel_forward_input_or_allocate: NULL argument");
  if (c->described)
    return DescribedCallRefuses(c, "kernel_forward_input_or_allocate");
  // Unsigned compares: a negative index is out of range too.
  if (static_cast<uint32_t>(in) >= static_cast<uint32_t>(c->num_inputs) ||
      static_cast<uint32_t>(o) >= static_cast<uint32_t>(c->num_outputs))
    return Errorf(WEFT_OUT_OF_RANGE, "node '%s': bad input or output index",
                  c->node->name.c_str());
  return HostAllocateOutput(c, o, dtype, dims, rank, out);
}

// Hands input `in`'s buffer to output `o` where the executor marked the
// input writable (kernel_context.h) and dtype and shape agree; otherwise
// allocates.  The mark is cleared: an input is handed over once.
WEFT_HOT weft_status* HostForwardInputOrAllocate(weft_kernel_context* c, int32_t in,
                                        int32_t o, int32_t dtype,
                                        const int64_t* dims, int32_t rank,
                                        weft_kernel_tensor* out,
                                        int32_t* forwarded) {
  // The writable bit implies a valid input index (the executor sets bits
  // only for inputs the node has).
  const uint32_t bit =
      static_cast<uint32_t>(in) < 32 ? 1u << in : 0u;
  if (c != nullptr && out != nullptr && (c->writable_inputs & bit) != 0 &&
      static_cast<uint32_t>(in) < static_cast<uint32_t>(c->num_inputs) &&
      static_cast<uint32_t>(o) < static_cast<uint32_t>(c->num_outputs)) {
    const TensorValue& src = *c->inputs[in];
    const int64_t* have = src.dims.data();
    bool same = src.dtype == dtype && rank == src.dims.rank() &&
                (rank == 0 || dims != nullptr);
    for (int32_t i = 0; same && i < rank; ++i) same = dims[i] == have[i];
    if (same) {
      c->writable_inputs &= ~bit;
      TensorValue& dst = c->outputs[o];
      dst.dtype = src.dtype;
      dst.dims = src.dims;
      dst.buffer = src.buffer;
      dst.offset = src.offset;
      Describe(dst, out);
      if (forwarded != nullptr) *forwarded = 1;
      return nullptr;
    }
  }
  return HostForwardInputOrAllocateSlow(c, in, o, dtype, dims, rank, out,
                                        forwarded);
}

template <typename Check>
weft_status* FindTyped(const weft_kernel_context* c, const char* name,
                       AttrType type, const AttrValue** out) {
  if (c == nullptr || name == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "NULL argument");
  std::string attr;
  if (!ReadPluginString(name, &attr))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': an attribute name without a NUL within %d "
                  "bytes", c->node->name.c_str(), WEFT_PLUGIN_MAX_STRING);
  const AttrValue* v = FindAttr(c->node->attrs, attr.c_str());
  if (v == nullptr)
    return Errorf(WEFT_NOT_FOUND, "node '%s' has no attribute '%s'",
                  c->node->name.c_str(), attr.c_str());
  if (!Check()(v->type, type))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s': attribute '%s' is a %s, not a %s",
                  c->node->name.c_str(), attr.c_str(), AttrTypeName(v->type),
                  AttrTypeName(type));
  *out = v;
  return nullptr;
}

struct SameType {
  bool operator()(AttrType a, AttrType b) const { return a == b; }
};

weft_status* HostAttrInt(const weft_kernel_context* c, const char* name,
                         int64_t* out) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kInt, &v));
  *out = v->i;
  return nullptr;
}
weft_status* HostAttrFloat(const weft_kernel_context* c, const char* name,
                           double* out) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kFloat, &v));
  *out = v->f;
  return nullptr;
}
weft_status* HostAttrBool(const weft_kernel_context* c, const char* name,
                          int32_t* out) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kBool, &v));
  *out = static_cast<int32_t>(v->i);
  return nullptr;
}
weft_status* HostAttrDtype(const weft_kernel_context* c, const char* name,
                           int32_t* out) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kDtype, &v));
  *out = static_cast<int32_t>(v->i);
  return nullptr;
}
weft_status* HostAttrString(const weft_kernel_context* c, const char* name,
                            const char** out) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kString, &v));
  *out = v->s.c_str();
  return nullptr;
}
weft_status* HostAttrIntList(const weft_kernel_context* c, const char* name,
                             const int64_t** out, int32_t* count) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kIntList, &v));
  *out = v->ints.data();
  *count = static_cast<int32_t>(v->ints.size());
  return nullptr;
}
weft_status* HostAttrFloatList(const weft_kernel_context* c, const char* name,
                               const double** out, int32_t* count) {
  const AttrValue* v = nullptr;
  WEFT_RETURN_IF_ERROR(FindTyped<SameType>(c, name, AttrType::kFloatList, &v));
  *out = v->floats.data();
  *count = static_cast<int32_t>(v->floats.size());
  return nullptr;
}

weft_plugin_device* HostDevice(const weft_kernel_context* c) {
  return c ? c->device->handle : nullptr;
}
weft_plugin_stream* HostStream(const weft_kernel_context* c) {
  return c ? c->stream : nullptr;
}
int32_t HostIntraOpThreads(const weft_kernel_context* c) {
  return c ? c->intra_op_threads : 1;
}
void HostStatusDestroy(weft_status* s) { weft_status_destroy(s); }
int32_t HostStatusCode(const weft_status* s) { return weft_status_code(s); }
uint64_t HostRunCounter(const weft_kernel_context* c) {
  return c ? c->run_counter : 0;
}
weft_status* HostDefer(weft_kernel_context* c, void (*cancel)(void*),
                       void* cancel_arg) {
  if (c == nullptr) return Error(WEFT_INVALID_ARGUMENT, "context is NULL");
  if (c->async == nullptr)
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "node '%s': kernel_defer outside compute_async (the "
                  "kernel was not registered as asynchronous)",
                  c->node->name.c_str());
  return c->async->Defer(cancel, cancel_arg);
}
void HostDone(weft_kernel_context* c, weft_status* status) {
  if (c == nullptr || c->async == nullptr) {
    // Nothing to complete: a kernel bug, which must not crash the host.
    HostLog(WEFT_LOG_ERROR,
            "kernel_done on a context that was not deferred: ignored");
    weft_status_destroy(status);
    return;
  }
  c->async->Done(status);
}

}  // namespace

const weft_host_api* HostApi() {
  static const weft_host_api api = [] {
    weft_host_api a{};
    a.struct_size = sizeof a;
    a.status_create = HostStatusCreate;
    a.log = HostLog;
    a.register_kernel = HostRegisterKernel;
    a.kernel_node_name = HostNodeName;
    a.kernel_op = HostOp;
    a.kernel_num_inputs = HostNumInputs;
    a.kernel_num_outputs = HostNumOutputs;
    a.kernel_input = HostInput;
    a.kernel_allocate_output = HostAllocateOutput;
    a.kernel_forward_input = HostForwardInput;
    a.kernel_attr_int = HostAttrInt;
    a.kernel_attr_float = HostAttrFloat;
    a.kernel_attr_bool = HostAttrBool;
    a.kernel_attr_dtype = HostAttrDtype;
    a.kernel_attr_string = HostAttrString;
    a.kernel_attr_int_list = HostAttrIntList;
    a.kernel_attr_float_list = HostAttrFloatList;
    a.kernel_device = HostDevice;
    a.kernel_stream = HostStream;
    a.kernel_intra_op_threads = HostIntraOpThreads;
    a.status_destroy = HostStatusDestroy;
    a.status_code = HostStatusCode;
    a.kernel_run_counter = HostRunCounter;
    a.register_gradient = HostRegisterGradient;
    a.graph = GraphApi();
    a.kernel_forward_input_or_allocate = HostForwardInputOrAllocate;
    a.register_op = HostRegisterOp;
    a.shape = ShapeApi();
    a.kernel_defer = HostDefer;
    a.kernel_done = HostDone;
    return a;
  }();
  return &api;
}

}  // namespace weft

extern "C" {

weft_status* weft_kernel_register(const char* device_type,
                                  const weft_kernel_def* def) {
  return weft::Guard([&]() -> weft_status* {
    std::string type;
    if (!weft::ReadPluginString(device_type, &type) || type.empty())
      return weft::Error(WEFT_INVALID_ARGUMENT,
                         "weft_kernel_register: no device type");
    weft::KernelReg k;
    bool unknown = false;
    WEFT_RETURN_IF_ERROR(weft::KernelFromDef(
        def,
        [](const std::string& op) {
          return weft::OpRegistry::Global().Find(op) != nullptr;
        },
        &k, &unknown));
    if (unknown)
      return weft::Errorf(WEFT_NOT_FOUND,
                          "weft_kernel_register: unknown op '%s' (register "
                          "the op first)", k.op.c_str());
    if (!k.device_type.empty() && k.device_type != type)
      return weft::Errorf(WEFT_INVALID_ARGUMENT,
                          "weft_kernel_register: the def names device type "
                          "%s, the call %s", k.device_type.c_str(),
                          type.c_str());
    k.device_type = type;
    weft::Registry::Get().AddProgramKernel(std::move(k));
    return nullptr;
  });
}

const weft_host_api* weft_kernel_host(void) { return weft::HostApi(); }

}  // extern "C"
