// ForeignCall: a graph calls an existing C function from a shared library
// through libffi, without a plugin.  Attributes:
//   library    the shared object, as dlopen takes it ("libm.so.6", a path)
//   symbol     the function's name ("erf")
//   signature  its C type over Weft dtypes:  RESULT(ARG, ARG, ...)
//     RESULT  void | status | DTYPE
//             status: the function returns an int32 error code, 0 for
//             success (the run fails with it otherwise);  DTYPE: a scalar
//             result, which is output 0
//     ARG     DTYPE          a scalar by value
//             const DTYPE*   an input tensor: the function gets its first
//                            element's address and its element count
//                            (int64_t) as two arguments
//             DTYPE*         an output tensor the runtime allocates with
//                            the shape of input output_like[k] (default
//                            input 0): pointer and element count again
//     DTYPE   float32 float64 int32 int64 uint8
//   output_like  (optional) for each DTYPE* argument in order, the input
//                whose shape it takes
// Each scalar or const-pointer argument takes the next input, in order.
// When every argument is a scalar and the result is a DTYPE, the function
// is applied element by element: the inputs are tensors of one shape (or
// scalars), and so is output 0 ("float64(float64)" over libm's erf maps a
// tensor).  Otherwise scalar arguments take rank-0 inputs.
//
// The library is opened and the symbol found when the node is built, so a
// missing library or symbol, or a signature that does not parse or does
// not match the inputs, is an error naming the node then.  Libraries stay
// open for the life of the process.  The op is stateful (never merged or
// folded: a foreign function may have effects) and runs on the host; its
// inputs are read into host memory and its outputs made on the device the
// node is placed on.
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/text.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "ops/runtime_op.h"

#if WEFT_HAVE_LIBFFI
#include <ffi.h>
#endif

namespace weft {
namespace {

enum class ArgKind { kScalar, kInput, kOutput };

struct Arg {
  ArgKind kind;
  weft_dtype dtype;
};

struct Signature {
  enum class Result { kVoid, kStatus, kScalar } result = Result::kVoid;
  weft_dtype result_dtype = WEFT_DTYPE_INVALID;
  std::vector<Arg> args;
  int32_t num_inputs = 0;   // scalar and const-pointer arguments
  int32_t num_outputs = 0;  // the scalar result and pointer outputs
  bool elementwise = false;
};

// The dtypes libffi passes here (the scalar types C functions take).
bool ParseDtype(const std::string& name, weft_dtype* out) {
  return DtypeFromName(name, out) &&
         (*out == WEFT_FLOAT32 || *out == WEFT_FLOAT64 || *out == WEFT_INT32 ||
          *out == WEFT_INT64 || *out == WEFT_UINT8);
}

// Parses `text`; on failure *why says what is wrong.
bool ParseSignature(const std::string& text, Signature* sig,
                    std::string* why) {
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos ||
      close < open || !Trim(text.substr(close + 1)).empty()) {
    *why = "it is not RESULT(ARG, ...)";
    return false;
  }
  const std::string result = Trim(text.substr(0, open));
  if (result == "void") {
    sig->result = Signature::Result::kVoid;
  } else if (result == "status") {
    sig->result = Signature::Result::kStatus;
  } else if (ParseDtype(result, &sig->result_dtype)) {
    sig->result = Signature::Result::kScalar;
    sig->num_outputs = 1;
  } else {
    *why = "result '" + result +
           "' is not void, status or one of float32, float64, int32, int64, "
           "uint8";
    return false;
  }
  const std::string list = Trim(text.substr(open + 1, close - open - 1));
  size_t start = 0;
  while (!list.empty() && start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string a = Trim(list.substr(start, comma - start));
    start = comma + 1;
    Arg arg{ArgKind::kScalar, WEFT_DTYPE_INVALID};
    bool is_const = false;
    if (a.compare(0, 6, "const ") == 0) {
      is_const = true;
      a = Trim(a.substr(6));
    }
    if (!a.empty() && a.back() == '*') {
      arg.kind = is_const ? ArgKind::kInput : ArgKind::kOutput;
      a = Trim(a.substr(0, a.size() - 1));
    } else if (is_const) {
      *why = "argument 'const " + a + "' is const but not a pointer";
      return false;
    }
    if (!ParseDtype(a, &arg.dtype)) {
      *why = "argument type '" + a +
             "' is not one of float32, float64, int32, int64, uint8 (with "
             "'const ...*' for an input tensor, '...*' for an output)";
      return false;
    }
    if (arg.kind == ArgKind::kOutput) sig->num_outputs++;
    else sig->num_inputs++;
    sig->args.push_back(arg);
  }
  if (sig->args.size() > 64) {
    *why = "more than 64 arguments";
    return false;
  }
  sig->elementwise = sig->result == Signature::Result::kScalar;
  for (const Arg& a : sig->args)
    sig->elementwise &= a.kind == ArgKind::kScalar;
  return true;
}

// The library's handle and the symbol, opened once per (library, symbol)
// and kept for the life of the process.
weft_status* FindFunction(const std::string& library,
                          const std::string& symbol, void** out) {
  static std::mutex mu;
  static std::map<std::string, void*>* libraries =
      new std::map<std::string, void*>;
  std::lock_guard<std::mutex> lock(mu);
  void*& lib = (*libraries)[library];
  if (lib == nullptr) {
    lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      libraries->erase(library);
      return Errorf(WEFT_NOT_FOUND, "cannot load library '%s': %s",
                    library.c_str(), e != nullptr ? e : "unknown error");
    }
  }
  dlerror();
  void* fn = dlsym(lib, symbol.c_str());
  if (fn == nullptr)
    return Errorf(WEFT_NOT_FOUND, "library '%s' has no symbol '%s'",
                  library.c_str(), symbol.c_str());
  *out = fn;
  return nullptr;
}

#if WEFT_HAVE_LIBFFI
ffi_type* FfiType(weft_dtype t) {
  switch (t) {
    case WEFT_FLOAT32: return &ffi_type_float;
    case WEFT_FLOAT64: return &ffi_type_double;
    case WEFT_INT32: return &ffi_type_sint32;
    case WEFT_INT64: return &ffi_type_sint64;
    default: return &ffi_type_uint8;
  }
}
#endif

// A call as its attributes describe it, ready to make: parsed, the symbol
// found and (with libffi) the call interface prepared.
struct Call {
  Signature sig;
  void* fn = nullptr;
  std::vector<int64_t> output_like;  // per pointer output
#if WEFT_HAVE_LIBFFI
  std::vector<ffi_type*> types;  // the C arguments; the cif points here
  ffi_cif cif;
#endif
};

weft_status* ReadCall(const AttrMap& attrs, Call* call, std::string* why) {
  const AttrValue* library = FindAttr(attrs, "library");
  const AttrValue* symbol = FindAttr(attrs, "symbol");
  const AttrValue* signature = FindAttr(attrs, "signature");
  if (!ParseSignature(signature->s, &call->sig, why)) return nullptr;
  const AttrValue* like = FindAttr(attrs, "output_like");
  const int32_t pointer_outputs =
      call->sig.num_outputs -
      (call->sig.result == Signature::Result::kScalar ? 1 : 0);
  if (like != nullptr && !like->ints.empty()) {
    if (static_cast<int32_t>(like->ints.size()) != pointer_outputs) {
      *why = "output_like has " + std::to_string(like->ints.size()) +
             " entries for " + std::to_string(pointer_outputs) +
             " output arguments";
      return nullptr;
    }
    call->output_like = like->ints;
  } else {
    call->output_like.assign(pointer_outputs, 0);
  }
  for (int64_t i : call->output_like)
    if (i < 0 || i >= call->sig.num_inputs) {
      *why = "output_like names input " + std::to_string(i) + " of " +
             std::to_string(call->sig.num_inputs);
      return nullptr;
    }
  WEFT_RETURN_IF_ERROR(FindFunction(library->s, symbol->s, &call->fn));
#if WEFT_HAVE_LIBFFI
  // A scalar is one C argument, a pointer two (address, count).
  for (const Arg& a : call->sig.args) {
    if (a.kind == ArgKind::kScalar) {
      call->types.push_back(FfiType(a.dtype));
    } else {
      call->types.push_back(&ffi_type_pointer);
      call->types.push_back(&ffi_type_sint64);
    }
  }
  ffi_type* result = &ffi_type_void;
  if (call->sig.result == Signature::Result::kStatus) result = &ffi_type_sint32;
  if (call->sig.result == Signature::Result::kScalar)
    result = FfiType(call->sig.result_dtype);
  if (ffi_prep_cif(&call->cif, FFI_DEFAULT_ABI,
                   static_cast<unsigned>(call->types.size()), result,
                   call->types.data()) != FFI_OK)
    *why = "libffi cannot prepare a call of this signature";
#endif
  return nullptr;
}

// The Call for `attrs`, made once per (library, symbol, signature,
// output_like) and kept: the shape function and every run of every node
// calling the same function share it.  *why is set (and nothing kept) when
// the attributes are wrong; a status when the library or symbol is missing.
weft_status* GetCall(const AttrMap& attrs, const Call** out,
                     std::string* why) {
  std::string key;
  for (const char* name : {"library", "symbol", "signature"})
    key += FindAttr(attrs, name)->s + '\0';
  if (const AttrValue* like = FindAttr(attrs, "output_like"))
    for (int64_t i : like->ints) key += std::to_string(i) + ',';
  static std::mutex mu;
  static auto* calls = new std::map<std::string, std::unique_ptr<Call>>;
  std::lock_guard<std::mutex> lock(mu);
  auto it = calls->find(key);
  if (it == calls->end()) {
    auto call = std::make_unique<Call>();
    WEFT_RETURN_IF_ERROR(ReadCall(attrs, call.get(), why));
    if (!why->empty()) return nullptr;
    it = calls->emplace(key, std::move(call)).first;
  }
  *out = it->second.get();
  return nullptr;
}

weft_status* InferForeignCall(InferenceContext& c) {
#if !WEFT_HAVE_LIBFFI
  return c.Fail("this library was built without libffi: ForeignCall is "
                "not available");
#else
  const Call* found = nullptr;
  std::string why;
  if (weft_status* st = GetCall(*c.attrs, &found, &why))
    return Annotate(st, "node '" + c.node_name + "' (ForeignCall)");
  if (!why.empty())
    return c.Fail("signature '%s': %s", c.attr("signature")->s.c_str(),
                  why.c_str());
  const Call& call = *found;
  const Signature& sig = call.sig;
  if (static_cast<int32_t>(c.input_dtypes.size()) != sig.num_inputs)
    return c.Fail("signature '%s' takes %d inputs, the node has %zu",
                  c.attr("signature")->s.c_str(), sig.num_inputs,
                  c.input_dtypes.size());
  int32_t in = 0;
  ShapeInfo common = ShapeInfo::Of({});
  for (const Arg& a : sig.args) {
    if (a.kind == ArgKind::kOutput) continue;
    if (c.input_dtypes[in] != a.dtype)
      return c.Fail("input %d is %s; the signature says %s", in,
                    weft_dtype_name(c.input_dtypes[in]),
                    weft_dtype_name(a.dtype));
    const ShapeInfo& s = c.input_shapes[in];
    if (a.kind == ArgKind::kScalar && !sig.elementwise && s.known_rank() &&
        s.rank != 0)
      return c.Fail("input %d is %s; a scalar argument takes a scalar", in,
                    s.ToString().c_str());
    if (sig.elementwise && s.known_rank() && s.rank > 0) {
      if (common.known_rank() && common.rank > 0 && !(common.dims == s.dims))
        return c.Fail("element-wise inputs differ in shape: %s and %s",
                      common.ToString().c_str(), s.ToString().c_str());
      common = s;
    }
    if (sig.elementwise && !s.known_rank()) common = s;
    ++in;
  }
  c.output_dtypes.clear();
  c.output_shapes.clear();
  if (sig.result == Signature::Result::kScalar) {
    c.output_dtypes.push_back(sig.result_dtype);
    c.output_shapes.push_back(common);
  }
  size_t k = 0;
  for (const Arg& a : sig.args) {
    if (a.kind != ArgKind::kOutput) continue;
    c.output_dtypes.push_back(a.dtype);
    c.output_shapes.push_back(c.input_shapes[call.output_like[k++]]);
  }
  return nullptr;
#endif
}

#if WEFT_HAVE_LIBFFI
// Host copies of values on devices the host cannot address.
struct HostValue {
  TensorValue value;
  std::vector<unsigned char> copy;
  void* data = nullptr;
};

weft_status* ToHost(RuntimeOpContext* ctx, const TensorValue& v,
                    HostValue* out) {
  out->value = v;
  out->data = v.host_data();
  if (out->data != nullptr || v.byte_size() == 0) return nullptr;
  out->copy.resize(v.byte_size());
  WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, out->copy.data(), v.byte_size()));
  out->data = out->copy.data();
  return nullptr;
}

weft_status* RunForeignCall(RuntimeOpContext* ctx) {
  const weft_node* node = ctx->node();
  const Call* found = nullptr;
  std::string why;
  WEFT_RETURN_IF_ERROR(GetCall(node->attrs, &found, &why));
  if (!why.empty())
    return Errorf(WEFT_INVALID_ARGUMENT, "node '%s': %s", node->name.c_str(),
                  why.c_str());
  const Call& call = *found;
  const Signature& sig = call.sig;
  std::vector<HostValue> inputs(sig.num_inputs);
  for (int32_t i = 0; i < sig.num_inputs; ++i)
    WEFT_RETURN_IF_ERROR(ToHost(ctx, ctx->input(i), &inputs[i]));
  // The shapes the graph left unknown, checked now: each scalar argument
  // reads one element, and element-wise inputs are one shape or scalars.
  {
    int32_t in = 0;
    const Dims* shape = nullptr;
    for (const Arg& a : sig.args) {
      if (a.kind != ArgKind::kScalar) {
        if (a.kind == ArgKind::kInput) ++in;
        continue;
      }
      const TensorValue& v = inputs[in].value;
      const bool scalar = v.dims.rank() == 0;
      if (!sig.elementwise && !scalar)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s': input %d is %s; a scalar argument takes a "
                      "scalar", node->name.c_str(), in,
                      v.dims.ToString().c_str());
      if (sig.elementwise && !scalar) {
        if (shape != nullptr && !(*shape == v.dims))
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "node '%s': element-wise inputs differ in shape: %s "
                        "and %s", node->name.c_str(),
                        shape->ToString().c_str(), v.dims.ToString().c_str());
        shape = &v.dims;
      }
      ++in;
    }
  }

  // Outputs in host memory; moved to the node's device at the end.
  std::vector<std::vector<unsigned char>> out_bytes(sig.num_outputs);
  std::vector<Dims> out_dims(sig.num_outputs);
  std::vector<weft_dtype> out_types(sig.num_outputs);
  int64_t elements = 1;  // element-wise: the inputs' common count
  Dims common;
  for (const HostValue& h : inputs)
    if (h.value.dims.rank() > 0) {
      common = h.value.dims;
      elements = h.value.elements();
    }
  int32_t o = 0;
  if (sig.result == Signature::Result::kScalar) {
    out_types[o] = sig.result_dtype;
    out_dims[o] = sig.elementwise ? common : Dims();
    out_bytes[o].resize(static_cast<size_t>(out_dims[o].elements()) *
                        weft_dtype_size_of(sig.result_dtype));
    ++o;
  }
  {
    size_t k = 0;
    for (const Arg& a : sig.args) {
      if (a.kind != ArgKind::kOutput) continue;
      const TensorValue& like = inputs[call.output_like[k++]].value;
      out_types[o] = a.dtype;
      out_dims[o] = like.dims;
      out_bytes[o].assign(static_cast<size_t>(like.elements()) *
                              weft_dtype_size_of(a.dtype),
                          0);
      ++o;
    }
  }

  // Argument storage: pointers and counts live here for the call.
  std::vector<void*> pointers(sig.args.size());
  std::vector<int64_t> counts(sig.args.size());
  std::vector<void*> values;
  values.reserve(call.types.size());
  const int64_t calls = sig.elementwise ? elements : 1;
  for (int64_t e = 0; e < calls; ++e) {
    values.clear();
    int32_t in = 0, out = sig.result == Signature::Result::kScalar ? 1 : 0;
    for (size_t i = 0; i < sig.args.size(); ++i) {
      const Arg& a = sig.args[i];
      if (a.kind == ArgKind::kOutput) {
        pointers[i] = out_bytes[out].data();
        counts[i] = out_dims[out].elements();
        ++out;
        values.push_back(&pointers[i]);
        values.push_back(&counts[i]);
        continue;
      }
      const HostValue& h = inputs[in++];
      const size_t size = weft_dtype_size_of(a.dtype);
      if (a.kind == ArgKind::kScalar) {
        // Element e, or the scalar itself (a rank-0 input beside tensors).
        const int64_t at = h.value.dims.rank() > 0 ? e : 0;
        values.push_back(static_cast<unsigned char*>(h.data) + at * size);
      } else {
        pointers[i] = h.data;
        counts[i] = h.value.elements();
        values.push_back(&pointers[i]);
        values.push_back(&counts[i]);
      }
    }
    // Wide enough for any result libffi writes (it widens small integers
    // to ffi_arg).
    union {
      ffi_arg integer;
      double f64;
      float f32;
      int64_t i64;
    } result;
    std::memset(&result, 0, sizeof result);
    ffi_call(const_cast<ffi_cif*>(&call.cif), FFI_FN(call.fn), &result,
             values.data());
    if (sig.result == Signature::Result::kStatus) {
      const int32_t code = static_cast<int32_t>(result.integer);
      if (code != 0)
        return Errorf(WEFT_ABORTED, "node '%s': %s (%s) returned %d",
                      node->name.c_str(),
                      FindAttr(node->attrs, "symbol")->s.c_str(),
                      FindAttr(node->attrs, "library")->s.c_str(), code);
    } else if (sig.result == Signature::Result::kScalar) {
      unsigned char* to = out_bytes[0].data() +
                          e * weft_dtype_size_of(sig.result_dtype);
      switch (sig.result_dtype) {
        case WEFT_FLOAT32: std::memcpy(to, &result.f32, 4); break;
        case WEFT_FLOAT64: std::memcpy(to, &result.f64, 8); break;
        case WEFT_INT64: std::memcpy(to, &result.i64, 8); break;
        case WEFT_INT32: {
          const int32_t v = static_cast<int32_t>(result.integer);
          std::memcpy(to, &v, 4);
          break;
        }
        default: {
          const uint8_t v = static_cast<uint8_t>(result.integer);
          std::memcpy(to, &v, 1);
        }
      }
    }
  }
  for (int32_t k = 0; k < sig.num_outputs; ++k) {
    TensorValue v;
    WEFT_RETURN_IF_ERROR(
        ctx->FromHost(out_types[k], out_dims[k], out_bytes[k].data(), &v));
    ctx->set_output(k, std::move(v));
  }
  return nullptr;
}
#else
weft_status* RunForeignCall(RuntimeOpContext*) {
  return Error(WEFT_UNIMPLEMENTED,
               "this library was built without libffi: ForeignCall is not "
               "available");
}
#endif

}  // namespace

void RegisterForeignOps(OpRegistry* r) {
  OpDef d;
  d.name = "ForeignCall";
  d.input_names = {"args"};
  d.variadic = true;
  d.exec = ExecKind::kRuntime;
  d.runtime = RunForeignCall;
  d.stateful = true;
  d.infer = InferForeignCall;
  d.outputs_doc = "one per scalar result or pointer output of signature";
  d.summary =
      "Calls C function `symbol` of shared library `library` through "
      "libffi, typed by `signature` RESULT(ARG, ...): RESULT void, status "
      "(int32, nonzero fails the run) or a dtype; ARG a dtype (scalar by "
      "value), 'const DTYPE*' (an input tensor: pointer and int64 count) or "
      "'DTYPE*' (an output shaped like input output_like[k]).  All-scalar "
      "signatures with a result map element by element.";
  AttrValue empty;
  empty.type = AttrType::kIntList;
  d.attrs = {Required("library", AttrType::kString),
             Required("symbol", AttrType::kString),
             Required("signature", AttrType::kString),
             AttrDef{"output_like", AttrType::kIntList, false, empty}};
  r->Add(std::move(d));
}

}  // namespace weft
