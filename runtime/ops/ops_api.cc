// The C API describing ops and kernels (abi/weft/ops.h).
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>

#include "base/sized_struct.h"
#include "base/status.h"
#include "device/registry.h"
#include "ops/registry.h"
#include "weft/ops.h"

namespace weft {
namespace {

// Text of an attribute's default, as a user would write it.
std::string DefaultText(const AttrValue& v) {
  std::ostringstream o;
  auto list = [&](const auto& xs) {
    o << "[";
    for (size_t i = 0; i < xs.size(); ++i) o << (i ? ", " : "") << xs[i];
    o << "]";
  };
  switch (v.type) {
    case AttrType::kInt: o << v.i; break;
    case AttrType::kFloat: o << v.f; break;
    case AttrType::kBool: o << (v.i ? "true" : "false"); break;
    case AttrType::kDtype:
      o << weft_dtype_name(static_cast<weft_dtype>(v.i));
      break;
    case AttrType::kString: o << '"' << v.s << '"'; break;
    case AttrType::kIntList: list(v.ints); break;
    case AttrType::kFloatList: list(v.floats); break;
    case AttrType::kShape:
      o << (v.i < 0 ? "<unknown>" : ShapeString(v.ints.data(),
                                                 static_cast<int32_t>(v.i)));
      break;
    case AttrType::kTensor: o << "<tensor>"; break;
  }
  return o.str();
}

// The strings a description hands out, built once per op and kept for the
// life of the process (op definitions never change once added).
struct OpText {
  std::string inputs, outputs, attributes;
};

const OpText& TextFor(int32_t index) {
  static std::mutex mu;
  static std::deque<OpText> texts;
  std::lock_guard<std::mutex> lock(mu);
  // Ops are only ever appended, so the texts made so far stay right.
  while (texts.size() <= static_cast<size_t>(index)) {
    const OpDef* d = OpRegistry::Global().At(texts.size());
    OpText t;
    for (size_t i = 0; i < d->input_names.size(); ++i) {
      t.inputs += (i ? ", " : "") + d->input_names[i];
      if (d->variadic && i + 1 == d->input_names.size()) t.inputs += "...";
    }
    if (!d->outputs_doc.empty()) t.outputs = d->outputs_doc;
    else if (d->num_outputs == 1) t.outputs = "output";
    else
      for (int i = 0; i < d->num_outputs; ++i)
        t.outputs += (i ? ", output" : "output") + std::to_string(i);
    if (!d->attributes_doc.empty()) t.attributes = d->attributes_doc;
    else for (const AttrDef& a : d->attrs) {
      if (!t.attributes.empty()) t.attributes += ", ";
      t.attributes += a.name + ": " + AttrTypeName(a.type);
      if (!a.required && a.has_default)
        t.attributes += " = " + DefaultText(a.default_value);
      else if (!a.required)
        t.attributes += " (optional)";
    }
    texts.push_back(std::move(t));
  }
  return texts[index];
}


}  // namespace
}  // namespace weft

extern "C" {

int32_t weft_op_count(void) {
  return static_cast<int32_t>(weft::OpRegistry::Global().Count());
}

weft_status* weft_op_describe(int32_t index, weft_op_description* out) {
  return weft::Guard([&]() -> weft_status* {
    const weft::OpDef* found =
        index < 0 ? nullptr : weft::OpRegistry::Global().At(index);
    if (found == nullptr)
      return weft::Errorf(WEFT_INVALID_ARGUMENT, "no op %d (there are %zu)",
                          index, weft::OpRegistry::Global().Count());
    const weft::OpDef& d = *found;
    const weft::OpText& t = weft::TextFor(index);
    weft_op_description full{};
    full.struct_size = sizeof full;
    full.name = d.name.c_str();
    full.summary = d.summary.c_str();
    full.inputs = t.inputs.c_str();
    full.outputs = t.outputs.c_str();
    full.attributes = t.attributes.c_str();
    full.num_inputs = static_cast<int32_t>(d.input_names.size());
    full.variadic = d.variadic;
    full.stateful = d.stateful;
    full.runs_in_runtime = d.exec != weft::ExecKind::kKernel;
    full.origin = d.origin.empty() ? "runtime" : d.origin.c_str();
    return weft::WriteSized(full, out);
  });
}

int32_t weft_kernel_count(const char* op) {
  if (op == nullptr) return 0;
  weft_status_destroy(weft::Registry::Get().Discover());
  return static_cast<int32_t>(weft::Registry::Get().KernelsFor(op).size());
}

weft_status* weft_kernel_describe(const char* op, int32_t index,
                                  weft_kernel_description* out) {
  if (op == nullptr) return weft::Error(WEFT_INVALID_ARGUMENT, "op is NULL");
  return weft::Guard([&]() -> weft_status* {
    weft_status_destroy(weft::Registry::Get().Discover());
    auto kernels = weft::Registry::Get().KernelsFor(op);
    if (index < 0 || index >= static_cast<int32_t>(kernels.size()))
      return weft::Errorf(WEFT_INVALID_ARGUMENT,
                          "op '%s' has no kernel %d (it has %zu)", op, index,
                          kernels.size());
    const weft::KernelReg& k = *kernels[index];
    weft_kernel_description full{};
    full.struct_size = sizeof full;
    full.op = k.op.c_str();
    full.device_type = k.device_type.c_str();
    full.plugin = k.plugin.c_str();
    full.dtype_attr = k.dtype_attr.c_str();
    full.dtypes = k.dtypes.data();
    full.num_dtypes = static_cast<int32_t>(k.dtypes.size());
    full.priority = k.priority;
    if (!k.described_constraints.empty()) {
      full.type_constraints = k.described_constraints.data();
      full.num_type_constraints =
          static_cast<int32_t>(k.described_constraints.size());
    }
    return weft::WriteSized(full, out);
  });
}

}  // extern "C"
