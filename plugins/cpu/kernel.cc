// Error reporting, attribute helpers and registration shared by the kernels.
#include "kernel.h"

#include <cstdarg>
#include <cstdio>
#include <exception>

#include "plugin_kit.h"

namespace weft_cpu {

const weft_host_api* g_host = nullptr;

namespace {


// Long enough for any message here; longer ones are truncated, not lost.
constexpr size_t kMessageSize = 1024;

}  // namespace

weft_status* MakeStatus(int32_t code, const char* format, ...) {
  char message[kMessageSize];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return g_host->status_create(code, message);
}

weft_status* NodeError(const weft_kernel_context* ctx, int32_t code,
                       const char* format, ...) {
  char detail[kMessageSize];
  va_list args;
  va_start(args, format);
  vsnprintf(detail, sizeof detail, format, args);
  va_end(args);
  const char* node = g_host->kernel_node_name(ctx);
  const char* op = g_host->kernel_op(ctx);
  return MakeStatus(code, "node '%s' (%s on CPU): %s", node ? node : "?",
                    op ? op : "?", detail);
}

void DiscardStatus(weft_status* status) {
  if (status == nullptr) return;
  // A host without status_destroy gives the plugin no way to free what it
  // returned; leaking is the only safe choice there.
  if (WEFT_CPU_HOST_HAS(status_destroy)) g_host->status_destroy(status);
}

int32_t StatusCode(const weft_status* status) {
  if (status == nullptr) return WEFT_OK;
  if (WEFT_CPU_HOST_HAS(status_code)) return g_host->status_code(status);
  // Without the slot every failure looks like an absent attribute; callers
  // then fall back to defaults, the documented meaning of absence.
  return WEFT_NOT_FOUND;
}

const char* DtypeName(int32_t dtype) { return weft_dtype_name_of(dtype); }

const char* FormatShape(const int64_t* dims, int32_t rank, char* buffer,
                        size_t size) {
  if (size == 0) return buffer;
  size_t used = 0;
  auto append = [&](const char* format, long long value) {
    if (used >= size) return;
    int n = snprintf(buffer + used, size - used, format, value);
    if (n > 0) used += static_cast<size_t>(n);
  };
  buffer[0] = '\0';
  append("[", 0);
  for (int32_t i = 0; i < rank; ++i) {
    append(i == 0 ? "%lld" : ",%lld", static_cast<long long>(dims[i]));
  }
  append("]", 0);
  return buffer;
}

weft_status* RankTooLarge(const weft_kernel_context* ctx, const char* what,
                          int32_t rank) {
  return NodeError(ctx, WEFT_INVALID_ARGUMENT,
                   "%s has rank %d; ranks run from 0 to %d", what, rank,
                   WEFT_MAX_RANK);
}

weft_status* DescribedArity(const weft_kernel_context* ctx, int32_t inputs,
                            int32_t outputs) {
  return NodeError(ctx, WEFT_INTERNAL,
                   "the host described %d inputs and %d outputs, which this "
                   "op does not have", inputs, outputs);
}

weft_status* DescribedOutputMismatch(const weft_kernel_context* ctx,
                                     const Tensor& got, int32_t want_dtype,
                                     const int64_t* want_dims,
                                     int32_t want_rank) {
  char have[160], want[160];
  return NodeError(ctx, WEFT_INTERNAL,
                   "the host made the output %s %s where the kernel makes %s "
                   "%s from these inputs (the op's shape function and its "
                   "kernel disagree)", DtypeName(got.dtype),
                   FormatShape(got.dims, got.rank, have, sizeof have),
                   DtypeName(want_dtype),
                   FormatShape(want_dims, want_rank, want, sizeof want));
}

weft_status* OptionalBoolAttr(const weft_kernel_context* ctx, const char* name,
                              bool fallback, bool* out) {
  int32_t value = 0;
  weft_status* status = g_host->kernel_attr_bool(ctx, name, &value);
  if (status == nullptr) {
    *out = value != 0;
    return nullptr;
  }
  if (StatusCode(status) != WEFT_NOT_FOUND) return status;
  DiscardStatus(status);
  *out = fallback;
  return nullptr;
}

weft_status* OptionalIntListAttr(const weft_kernel_context* ctx,
                                 const char* name, const int64_t** values,
                                 int32_t* count, bool* present) {
  weft_status* status =
      g_host->kernel_attr_int_list(ctx, name, values, count);
  if (status == nullptr) {
    *present = true;
    if (*count < 0) {
      return NodeError(ctx, WEFT_INTERNAL,
                       "host returned a negative length for attr '%s'", name);
    }
    return nullptr;
  }
  if (StatusCode(status) != WEFT_NOT_FOUND) return status;
  DiscardStatus(status);
  *present = false;
  *values = nullptr;
  *count = 0;
  return nullptr;
}

weft_status* DtypeMismatch(const weft_kernel_context* ctx, const char* what,
                           int32_t got, int32_t want) {
  return NodeError(ctx, WEFT_INVALID_ARGUMENT, "%s is %s, expected %s", what,
                   DtypeName(got), DtypeName(want));
}

weft_status* UnsupportedDtype(const weft_kernel_context* ctx, int32_t dtype) {
  return NodeError(ctx, WEFT_UNIMPLEMENTED,
                   "the CPU plugin has no kernel for dtype %s (%d)",
                   DtypeName(dtype), dtype);
}

weft_status* StatusFromCurrentException(
    const weft_kernel_context* ctx) noexcept {
  // Rethrowing is the only portable way to learn the exception's type.
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return NodeError(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return NodeError(ctx, WEFT_INTERNAL, "unexpected exception: %s",
                     e.what());
  } catch (...) {
    return NodeError(ctx, WEFT_INTERNAL, "unexpected exception");
  }
}

weft_status* Registrar::Add(const char* op,
                            std::initializer_list<int32_t> dtypes,
                            weft_kernel_compute_fn compute,
                            const char* dtype_attr) const {
  // At priority 0, as plain Eigen kernels: anything more specialised
  // (oneDNN, a vendor's plugin) should win over them.
  const bool any_dtype = dtypes.size() == 0;
  return weft_plugin_kit::RegisterKernel(
      host_, registrar_, op, any_dtype ? nullptr : dtype_attr,
      any_dtype ? nullptr : dtypes.begin(),
      static_cast<int32_t>(dtypes.size()), compute, nullptr);
}

weft_status* Registrar::Add(const char* op, const int32_t* dtypes, int32_t n,
                            weft_kernel_compute_fn compute,
                            const char* dtype_attr) const {
  return weft_plugin_kit::RegisterKernel(host_, registrar_, op, dtype_attr,
                                         dtypes, n, compute, nullptr);
}

weft_status* Registrar::Add(const char* op, const int32_t* dtypes, int32_t n,
                            weft_kernel_compute_fn compute,
                            weft_kernel_described_fn described,
                            uint32_t output_overwrites) const {
  return weft_plugin_kit::RegisterKernel(host_, registrar_, op, "T", dtypes,
                                         n, compute, nullptr, nullptr, 0,
                                         described, output_overwrites);
}

weft_status* Registrar::Add(const char* op, const char* dtype_attr,
                            std::initializer_list<int32_t> dtypes,
                            const char* attr2,
                            std::initializer_list<int32_t> dtypes2,
                            weft_kernel_compute_fn compute) const {
  // The host copies the lists during registration, so locals will do.
  const weft_kernel_type_constraint more = {
      attr2, dtypes2.begin(), static_cast<int32_t>(dtypes2.size())};
  return weft_plugin_kit::RegisterKernel(
      host_, registrar_, op, dtype_attr, dtypes.begin(),
      static_cast<int32_t>(dtypes.size()), compute, nullptr, &more, 1);
}

}  // namespace weft_cpu
