// What every in-tree device plugin does the same way at the ABI boundary:
// admitting the host at the entry point, registering kernels, and the
// kernel call's reads of inputs and attributes, output allocation and
// node-naming errors.
//
// Header-only and built from abi/ alone, so a plugin stays a guest that
// links nothing of libweft.  C++14, so that nvcc's host pass accepts it as
// well as the C++ compiler, and nothing here throws: every failure is a
// status made with the host's status_create.
#ifndef WEFT_PLUGINS_COMMON_PLUGIN_KIT_H_
#define WEFT_PLUGINS_COMMON_PLUGIN_KIT_H_

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "weft/plugin.h"

// The offset just past `field` of struct `type`: a struct whose struct_size
// is at least this has the field.
#define WEFT_PLUGIN_KIT_END_OF(type, field) \
  (offsetof(type, field) + sizeof(static_cast<type*>(nullptr)->field))

namespace weft_plugin_kit {

// A status from `host` with a printf-style message; NULL for WEFT_OK.
// Formats into a fixed buffer (longer messages are truncated), so it works
// even when the heap is exhausted.
inline weft_status* MakeStatusV(const weft_host_api* host, int32_t code,
                                const char* format, va_list args) {
  char message[1024];
  std::vsnprintf(message, sizeof(message), format, args);
  return host->status_create(code, message);
}

__attribute__((format(printf, 3, 4))) inline weft_status* MakeStatus(
    const weft_host_api* host, int32_t code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  weft_status* status = MakeStatusV(host, code, format, args);
  va_end(args);
  return status;
}

// ---- The entry point ------------------------------------------------------

// The FAILED_PRECONDITION that refuses a host speaking no version of the
// major `plugin_name` implements (`chosen_version`); NULL when the host's
// range includes it.  `args` must cover the two host_*_version fields.
inline weft_status* RefuseOtherMajor(const weft_host_api* host,
                                     const weft_plugin_init_args* args,
                                     const char* plugin_name,
                                     uint32_t chosen_version) {
  const uint32_t min = args->host_min_version;
  const uint32_t max = args->host_max_version;
  const uint32_t major = WEFT_VERSION_MAJOR_OF(chosen_version);
  if (WEFT_VERSION_MAJOR_OF(min) <= major &&
      WEFT_VERSION_MAJOR_OF(max) >= major) {
    return nullptr;
  }
  return MakeStatus(
      host, WEFT_FAILED_PRECONDITION,
      "%s implements plugin interface %u.%u; the host speaks %u.%u to %u.%u",
      plugin_name, major, WEFT_VERSION_MINOR_OF(chosen_version),
      WEFT_VERSION_MAJOR_OF(min), WEFT_VERSION_MINOR_OF(min),
      WEFT_VERSION_MAJOR_OF(max), WEFT_VERSION_MINOR_OF(max));
}

// The outcome of Admit: `host` set when the plugin may go on and register
// its kernels; otherwise `refusal` is what weft_plugin_entry returns (a
// status, or NULL where the host gave no way to make one, leaving `plugin`
// unset as the only refusal left).
struct Admission {
  const weft_host_api* host;
  weft_status* refusal;
};

// The start of weft_plugin_entry for a plugin named `plugin_name`
// ("weft-opencl") implementing `chosen_version`: writes chosen_version
// whenever the args have room for it, then checks that the args reach
// `plugin`, that the host's table reaches `host_end` (the end of the last
// slot the plugin calls, see WEFT_PLUGIN_KIT_END_OF) and that the host
// speaks the plugin's major version.  `args` must not be NULL.
inline Admission Admit(weft_plugin_init_args* args, const char* plugin_name,
                       uint32_t chosen_version, size_t host_end) {
  const auto covers = [args](size_t end) { return args->struct_size >= end; };
  if (covers(WEFT_PLUGIN_KIT_END_OF(weft_plugin_init_args, chosen_version))) {
    args->chosen_version = chosen_version;
  }
  const Admission refused_silently = {nullptr, nullptr};
  const weft_host_api* host =
      covers(WEFT_PLUGIN_KIT_END_OF(weft_plugin_init_args, host)) ? args->host
                                                                  : nullptr;
  if (host == nullptr ||
      host->struct_size < WEFT_PLUGIN_KIT_END_OF(weft_host_api,
                                                 status_create) ||
      host->status_create == nullptr) {
    return refused_silently;
  }
  const unsigned major = WEFT_VERSION_MAJOR_OF(chosen_version);
  const unsigned minor = WEFT_VERSION_MINOR_OF(chosen_version);
  if (!covers(WEFT_PLUGIN_KIT_END_OF(weft_plugin_init_args, plugin))) {
    return Admission{
        nullptr,
        MakeStatus(host, WEFT_FAILED_PRECONDITION,
                   "%s: the init args are smaller than plugin interface "
                   "%u.%u defines",
                   plugin_name, major, minor)};
  }
  if (host->struct_size < host_end) {
    return Admission{
        nullptr,
        MakeStatus(host, WEFT_FAILED_PRECONDITION,
                   "%s: the host's service table is smaller than plugin "
                   "interface %u.%u defines",
                   plugin_name, major, minor)};
  }
  if (weft_status* status =
          RefuseOtherMajor(host, args, plugin_name, chosen_version)) {
    return Admission{nullptr, status};
  }
  return Admission{host, nullptr};
}

// ---- Kernels --------------------------------------------------------------

// "float32" and so on, for messages; NULL for an unknown dtype.
inline const char* DtypeName(int32_t dtype) {
  return weft_dtype_name_of(dtype);
}

// Registers `compute` for `op` with the dtype constraint given, and the
// `num_more` constraints on further type attributes at `more` (Cast's DstT),
// at the baseline priority 0: a vendor plugin that wants to replace one of
// these kernels on the same device type registers it with a higher
// priority.  A host older than 1.2 ignores `more`, so the kernel still
// checks those attributes when it runs.
inline weft_status* RegisterKernel(
    const weft_host_api* host, weft_kernel_registrar* registrar,
    const char* op, const char* dtype_attr, const int32_t* dtypes,
    int32_t num_dtypes, weft_kernel_compute_fn compute, void* kernel_arg,
    const weft_kernel_type_constraint* more = nullptr, int32_t num_more = 0,
    weft_kernel_described_fn described = nullptr,
    uint32_t output_overwrites = 0) {
  weft_kernel_def def{};
  def.struct_size = sizeof(def);
  def.op = op;
  def.dtype_attr = dtype_attr;
  def.dtypes = dtypes;
  def.num_dtypes = num_dtypes;
  def.priority = 0;
  def.compute = compute;
  def.kernel_arg = kernel_arg;
  def.type_constraints = more;
  def.num_type_constraints = num_more;
  def.compute_described = described;
  def.output_overwrites = output_overwrites;
  return host->register_kernel(registrar, &def);
}

// One compute call of a kernel as the host hands it over: the context and
// the host's accessors for it.  A plugin's own call class derives from this
// and adds its device's parts (streams, launches, error checks).
class KernelCallBase {
 public:
  // `device_type` ("OPENCL") is named in error prefixes; NULL names none.
  KernelCallBase(const weft_host_api* host, weft_kernel_context* ctx,
                 const char* device_type)
      : host_(host), ctx_(ctx), device_type_(device_type) {}

  const weft_host_api* host() const { return host_; }
  weft_kernel_context* context() const { return ctx_; }
  // Set by FindDeviceAndStream.
  weft_plugin_device* device() const { return device_; }
  weft_plugin_stream* plugin_stream() const { return stream_; }

  weft_status* Input(int32_t index, weft_kernel_tensor* out) const {
    *out = weft_kernel_tensor{};
    out->struct_size = sizeof(*out);
    return host_->kernel_input(ctx_, index, out);
  }

  weft_status* AllocateOutput(int32_t index, int32_t dtype,
                              const int64_t* dims, int32_t rank,
                              weft_kernel_tensor* out) const {
    *out = weft_kernel_tensor{};
    out->struct_size = sizeof(*out);
    return host_->kernel_allocate_output(ctx_, index, dtype, dims, rank, out);
  }

  weft_status* ForwardInput(int32_t input_index, int32_t output_index,
                            const int64_t* dims, int32_t rank) const {
    return host_->kernel_forward_input(ctx_, input_index, output_index, dims,
                                       rank);
  }

  // Optional attributes: `fallback` when absent, an error when of another
  // type.
  weft_status* AttrBool(const char* name, bool fallback, bool* out) const {
    int32_t value = 0;
    weft_status* status = host_->kernel_attr_bool(ctx_, name, &value);
    if (status != nullptr) {
      if (host_->status_code(status) != WEFT_NOT_FOUND) return status;
      host_->status_destroy(status);
      *out = fallback;
      return nullptr;
    }
    *out = value != 0;
    return nullptr;
  }

  weft_status* AttrInt(const char* name, int64_t fallback,
                       int64_t* out) const {
    weft_status* status = host_->kernel_attr_int(ctx_, name, out);
    if (status != nullptr && host_->status_code(status) == WEFT_NOT_FOUND) {
      host_->status_destroy(status);
      *out = fallback;
      return nullptr;
    }
    return status;
  }

  weft_status* AttrDtype(const char* name, int32_t* out) const {
    return host_->kernel_attr_dtype(ctx_, name, out);
  }

  // `*present` says whether the attribute exists; `*values` is borrowed for
  // the call.
  weft_status* AttrIntList(const char* name, bool* present,
                           const int64_t** values, int32_t* count) const {
    *values = nullptr;
    *count = 0;
    weft_status* status =
        host_->kernel_attr_int_list(ctx_, name, values, count);
    if (status != nullptr) {
      if (host_->status_code(status) != WEFT_NOT_FOUND) return status;
      host_->status_destroy(status);
      *present = false;
      return nullptr;
    }
    *present = true;
    return nullptr;
  }

  // `*out` stays NULL when the attribute is absent.
  weft_status* AttrString(const char* name, const char** out) const {
    *out = nullptr;
    weft_status* status = host_->kernel_attr_string(ctx_, name, out);
    if (status != nullptr && host_->status_code(status) == WEFT_NOT_FOUND) {
      host_->status_destroy(status);
      return nullptr;
    }
    return status;
  }

  // An error status whose message starts with "node 'N' (Op on TYPE): ", or
  // "node 'N' (Op): " without a device type.
  __attribute__((format(printf, 3, 4))) weft_status* Error(
      int32_t code, const char* format, ...) const {
    char message[768];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    const char* node = host_->kernel_node_name(ctx_);
    const char* op = host_->kernel_op(ctx_);
    return MakeStatus(host_, code, "node '%s' (%s%s%s): %s",
                      node ? node : "?", op ? op : "?",
                      device_type_ != nullptr ? " on " : "",
                      device_type_ != nullptr ? device_type_ : "", message);
  }

 protected:
  // Finds the kernel's device and stream; `api` ("CUDA") names the kernel
  // in the error for a missing stream.
  weft_status* FindDeviceAndStream(const char* api) {
    device_ = host_->kernel_device(ctx_);
    stream_ = host_->kernel_stream(ctx_);
    if (device_ == nullptr) {
      return Error(WEFT_INTERNAL, "the host gave the kernel no device");
    }
    // The table has streams, so the host must hand every kernel one; a NULL
    // stream would mean work the host believes complete on return.
    if (stream_ == nullptr) {
      return Error(WEFT_INTERNAL,
                   "the host gave the %s kernel no stream to enqueue on", api);
    }
    return nullptr;
  }

 private:
  const weft_host_api* host_;
  weft_kernel_context* ctx_;
  const char* device_type_;
  weft_plugin_device* device_ = nullptr;
  weft_plugin_stream* stream_ = nullptr;
};

}  // namespace weft_plugin_kit

#endif  // WEFT_PLUGINS_COMMON_PLUGIN_KIT_H_
