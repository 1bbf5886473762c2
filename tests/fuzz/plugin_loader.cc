// Fuzz target: the plugin loader after dlsym (Registry::LoadEntry), against
// a plugin whose every answer comes from the input: the version it picks,
// its table's size and empty slots, its strings (NULL, unterminated up to
// the end of their allocation), device counts, handles, statuses, kernel
// and gradient registrations with odd definitions, and registrations made
// late through the registrar it kept.  Each input loads the plugin into a
// fresh Registry.  Every input must end in a load or a refusal: never a
// crash, a sanitizer report, a leak or a hang.  Built and run by
// scripts/fuzz.sh.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "device/registry.h"

namespace {

FuzzedDataProvider* in;  // the current input
const weft_host_api* host;
weft_kernel_registrar* kept_registrar;
weft_plugin_api table;
// Every string handed out for this input, freed when it ends.
std::vector<std::unique_ptr<char[]>> strings;
int device_token;

// A string as a plugin might hand one over: NULL, a fixed good one, input
// bytes with a NUL, or input bytes without one in an allocation of exactly
// WEFT_PLUGIN_MAX_STRING bytes (the most the host may read, plugin.h), so
// that reading further is an ASan report.
const char* String(const char* good) {
  switch (in->ConsumeIntegralInRange(0, 3)) {
    case 0: return nullptr;
    case 1: return good;
    default: break;
  }
  bool terminated = in->ConsumeBool();
  std::string bytes = in->ConsumeBytesAsString(
      in->ConsumeIntegralInRange<size_t>(0, WEFT_PLUGIN_MAX_STRING + 8));
  size_t size = terminated ? bytes.size() + 1 : WEFT_PLUGIN_MAX_STRING;
  auto s = std::make_unique<char[]>(size);
  std::memset(s.get(), 'x', size);
  std::memcpy(s.get(), bytes.data(), std::min(bytes.size(), size));
  if (terminated) s[size - 1] = '\0';
  else std::replace(s.get(), s.get() + size, '\0', 'x');
  strings.push_back(std::move(s));
  return strings.back().get();
}

weft_status* Status() {
  if (in->ConsumeBool()) return nullptr;
  return host->status_create(in->ConsumeIntegral<int32_t>(),
                             String("fuzzed failure"));
}

weft_status* Compute(void*, weft_kernel_context*) { return nullptr; }
weft_status* Gradient(void*, weft_gradient_context*) { return nullptr; }

// One registration through `registrar`, of a kernel or a gradient; the
// status it gets is released, as a plugin must.
void Register(weft_kernel_registrar* registrar) {
  static const char* const ops[] = {"Relu", "MatMul", "Add", "Unknown"};
  const char* op = String(ops[in->ConsumeIntegralInRange(0, 3)]);
  if (in->ConsumeBool() &&
      host->struct_size >= offsetof(weft_host_api, graph)) {
    host->status_destroy(host->register_gradient(
        registrar, op, in->ConsumeBool() ? Gradient : nullptr, nullptr));
    return;
  }
  int32_t dtypes[4];
  for (int32_t& d : dtypes) d = in->ConsumeIntegral<int32_t>();
  weft_kernel_def def{};
  // 0, short of 1.0, exactly 1.1 (before type_constraints), 1.2.
  static const size_t sizes[] = {
      0, offsetof(weft_kernel_def, kernel_arg),
      offsetof(weft_kernel_def, type_constraints), sizeof def};
  def.struct_size = sizes[in->ConsumeIntegralInRange(0, 3)];
  // Interface 1.2: constraints on further type attributes.
  weft_kernel_type_constraint constraints[2];
  for (weft_kernel_type_constraint& c : constraints) {
    c.attr = String("DstT");
    c.num_dtypes = in->ConsumeIntegralInRange(-1, 4);
    c.dtypes = in->ConsumeBool() ? dtypes : nullptr;
  }
  def.num_type_constraints = in->ConsumeIntegralInRange(-1, 2);
  def.type_constraints = in->ConsumeBool() ? constraints : nullptr;
  def.op = op;
  def.dtype_attr = String("T");
  def.num_dtypes = in->ConsumeIntegralInRange(-2, 4);
  def.dtypes = in->ConsumeBool() ? dtypes : nullptr;
  def.priority = in->ConsumeIntegral<int32_t>();
  def.compute = in->ConsumeBool() ? Compute : nullptr;
  host->status_destroy(
      host->register_kernel(registrar, in->ConsumeBool() ? &def : nullptr));
}

// Sometimes registers through the kept registrar, after the entry returned.
void MaybeRegisterLate() {
  if (kept_registrar != nullptr && in->ConsumeIntegralInRange(0, 7) == 0)
    Register(kept_registrar);
}

weft_status* DeviceCount(int32_t* out) {
  MaybeRegisterLate();
  static const int32_t counts[] = {0, 1, 2, -1, WEFT_PLUGIN_MAX_DEVICES,
                                   WEFT_PLUGIN_MAX_DEVICES + 1, INT32_MAX};
  *out = in->ConsumeBool() ? counts[in->ConsumeIntegralInRange(0, 6)]
                           : in->ConsumeIntegralInRange(-4, 8);
  return Status();
}

weft_status* DeviceOpen(int32_t, weft_plugin_device** out) {
  MaybeRegisterLate();
  static weft_plugin_device* const handles[] = {
      nullptr, reinterpret_cast<weft_plugin_device*>(&device_token),
      reinterpret_cast<weft_plugin_device*>(uintptr_t{1})};
  *out = handles[in->ConsumeIntegralInRange(0, 2)];
  return Status();
}

void DeviceClose(weft_plugin_device*) {}

weft_status* DeviceProperties(weft_plugin_device*,
                              weft_device_properties* out) {
  MaybeRegisterLate();
  if (in->ConsumeBool()) out->description = String("fuzzed device");
  if (in->ConsumeBool()) out->vendor = String("fuzzed vendor");
  out->memory_bytes = in->ConsumeIntegral<uint64_t>();
  out->flags = in->ConsumeIntegral<uint32_t>();
  return Status();
}

// Fails or succeeds without a handle: a real handle would go to the
// device's buffer cache, which outlives nothing here.
weft_status* MemoryAllocate(weft_plugin_device*, uint64_t, void** out) {
  *out = nullptr;
  return Status();
}

void MemoryFree(weft_plugin_device*, void*) {}

weft_status* CopyHostToDevice(weft_plugin_device*, weft_plugin_stream*,
                              const void*, void*, uint64_t, uint64_t) {
  return nullptr;
}
weft_status* CopyDeviceToHost(weft_plugin_device*, weft_plugin_stream*,
                              const void*, uint64_t, void*, uint64_t) {
  return nullptr;
}
weft_status* CopyDeviceToDevice(weft_plugin_device*, weft_plugin_stream*,
                                const void*, uint64_t, void*, uint64_t,
                                uint64_t) {
  return nullptr;
}
weft_status* StreamCreate(weft_plugin_device*, weft_plugin_stream** out) {
  *out = nullptr;
  return nullptr;
}

weft_status* Entry(weft_plugin_init_args* args) {
  host = args->host;
  kept_registrar = args->registrar;
  static const uint32_t versions[] = {
      WEFT_VERSION_PACK(1, 0), WEFT_VERSION_PACK(1, 1),
      WEFT_VERSION_PACK(1, 2), WEFT_VERSION_PACK(2, 0), 0};
  args->chosen_version = in->ConsumeBool()
                             ? versions[in->ConsumeIntegralInRange(0, 4)]
                             : in->ConsumeIntegral<uint32_t>();
  for (int n = in->ConsumeIntegralInRange(0, 4); n > 0; --n)
    Register(in->ConsumeIntegralInRange(0, 15) == 0 ? nullptr
                                                    : args->registrar);

  table = weft_plugin_api{};
  static const size_t sizes[] = {
      0, offsetof(weft_plugin_api, shutdown),
      offsetof(weft_plugin_api, shutdown) + sizeof(void*),
      sizeof(weft_plugin_api)};
  table.struct_size = sizes[in->ConsumeIntegralInRange(0, 3)];
  table.name = String("weft-fuzz");
  table.version = String("0.0.1");
  table.device_type = String("FUZZ");
  // Each slot may be left empty.
  auto slot = [](auto fn) { return in->ConsumeIntegralInRange(0, 15) == 0
                                       ? nullptr : fn; };
  table.device_count = slot(DeviceCount);
  table.device_open = slot(DeviceOpen);
  table.device_close = slot(DeviceClose);
  table.device_properties = slot(DeviceProperties);
  table.memory_allocate = slot(MemoryAllocate);
  table.memory_free = slot(MemoryFree);
  table.copy_host_to_device = slot(CopyHostToDevice);
  table.copy_device_to_host = slot(CopyDeviceToHost);
  table.copy_device_to_device = slot(CopyDeviceToDevice);
  if (in->ConsumeIntegralInRange(0, 3) == 0) table.stream_create = StreamCreate;
  args->plugin = in->ConsumeIntegralInRange(0, 15) == 0 ? nullptr : &table;
  return Status();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  in = &provider;
  kept_registrar = nullptr;
  {
    weft::Registry registry;
    weft_status_destroy(registry.LoadEntry("/fuzz/plugin.so", nullptr, Entry));
    // What the runtime does with a loaded plugin's devices and kernels.
    for (weft::Device* d : registry.Devices()) {
      weft::BufferRef ref;
      weft_status_destroy(d->Allocate(64, &ref));
    }
    // A node's type attributes, as kernel selection sees them.
    weft::AttrMap attrs;
    for (const char* name : {"T", "DstT"}) {
      weft::AttrValue v;
      v.type = weft::AttrType::kDtype;
      v.i = in->ConsumeIntegralInRange<int32_t>(-1, 20);
      attrs.emplace_back(name, v);
    }
    for (const char* op : {"Relu", "MatMul", "Add"})
      registry.FindKernel(op, "FUZZ", attrs);
    MaybeRegisterLate();
  }
  strings.clear();
  return 0;
}
