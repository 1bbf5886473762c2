// The C API over the plugin registry, and the library's versions.
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>

#include "base/sized_struct.h"
#include "base/status.h"
#include "device/registry.h"
#include "distributed/cluster.h"
#include "weft/device.h"
#include "weft/version.h"

#ifndef WEFT_VERSION_STRING
#define WEFT_VERSION_STRING "0.0.0"
#endif

namespace {

void EnsureDiscovered() {
  weft_status_destroy(weft::Registry::Get().Discover());
}

// Entry `index` of a list the registry only appends to (refusals, shadowed
// plugins), copied into `stable`, storage that never moves, so that its
// strings can be handed out for the life of the process.  NULL when out of
// range.
template <typename Entry>
const Entry* StableEntry(const std::vector<Entry>& now, int32_t index,
                         std::deque<Entry>* stable, std::mutex* mu) {
  if (index < 0 || index >= static_cast<int32_t>(now.size())) return nullptr;
  std::lock_guard<std::mutex> lock(*mu);
  while (stable->size() < now.size()) stable->push_back(now[stable->size()]);
  return &(*stable)[index];
}

}  // namespace

extern "C" {

const char* weft_version_string(void) { return WEFT_VERSION_STRING; }

uint32_t weft_abi_version(void) {
  return WEFT_VERSION_PACK(WEFT_ABI_VERSION_MAJOR, WEFT_ABI_VERSION_MINOR);
}

void weft_plugin_interface_range(uint32_t* out_min, uint32_t* out_max) {
  if (out_min) *out_min = WEFT_VERSION_PACK(1, 0);
  if (out_max)
    *out_max = WEFT_VERSION_PACK(WEFT_PLUGIN_INTERFACE_MAJOR,
                                 WEFT_PLUGIN_INTERFACE_MINOR);
}

weft_status* weft_plugins_discover(void) {
  return weft::Guard([] { return weft::Registry::Get().Discover(); });
}

weft_status* weft_plugin_load(const char* path) {
  if (path == nullptr || *path == '\0')
    return weft::Error(WEFT_INVALID_ARGUMENT, "plugin path is empty");
  return weft::Guard([&] { return weft::Registry::Get().Load(path); });
}

int32_t weft_plugin_count(void) {
  EnsureDiscovered();
  return static_cast<int32_t>(weft::Registry::Get().Plugins().size());
}

weft_status* weft_plugin_describe(int32_t index, weft_plugin_description* out) {
  EnsureDiscovered();
  auto plugins = weft::Registry::Get().Plugins();
  if (index < 0 || index >= static_cast<int32_t>(plugins.size()))
    return weft::Errorf(WEFT_INVALID_ARGUMENT, "no plugin %d (there are %zu)",
                        index, plugins.size());
  const weft::Plugin& p = *plugins[index];
  weft_plugin_description d{};
  d.struct_size = sizeof d;
  d.name = p.name.c_str();
  d.version = p.version.c_str();
  d.path = p.path.c_str();
  d.interface_version = p.interface_version;
  d.device_type = p.device_type.c_str();
  d.device_count = static_cast<int32_t>(p.devices.size());
  d.no_device_reason = p.no_device_reason.c_str();
  return weft::WriteSized(d, out);
}

int32_t weft_plugin_refusal_count(void) {
  EnsureDiscovered();
  return static_cast<int32_t>(weft::Registry::Get().Refusals().size());
}

weft_status* weft_plugin_refusal(int32_t index, const char** out_path,
                                 const char** out_reason) {
  EnsureDiscovered();
  static std::mutex mu;
  static std::deque<weft::Refusal> stable;
  auto refusals = weft::Registry::Get().Refusals();
  const weft::Refusal* r = StableEntry(refusals, index, &stable, &mu);
  if (r == nullptr)
    return weft::Errorf(WEFT_INVALID_ARGUMENT, "no refusal %d (there are %zu)",
                        index, refusals.size());
  if (out_path) *out_path = r->path.c_str();
  if (out_reason) *out_reason = r->reason.c_str();
  return nullptr;
}

int32_t weft_plugin_shadowed_count(void) {
  EnsureDiscovered();
  return static_cast<int32_t>(weft::Registry::Get().ShadowedPlugins().size());
}

weft_status* weft_plugin_shadowed(int32_t index, const char** out_path,
                                  const char** out_shadowed_by) {
  EnsureDiscovered();
  static std::mutex mu;
  static std::deque<weft::Shadowed> stable;
  auto shadowed = weft::Registry::Get().ShadowedPlugins();
  const weft::Shadowed* s = StableEntry(shadowed, index, &stable, &mu);
  if (s == nullptr)
    return weft::Errorf(WEFT_INVALID_ARGUMENT,
                        "no shadowed plugin %d (there are %zu)", index,
                        shadowed.size());
  if (out_path) *out_path = s->path.c_str();
  if (out_shadowed_by) *out_shadowed_by = s->shadowed_by.c_str();
  return nullptr;
}

int32_t weft_device_count(void) {
  EnsureDiscovered();
  return static_cast<int32_t>(weft::Registry::Get().Devices().size());
}

weft_status* weft_device_describe(int32_t index,
                                  weft_device_description* out) {
  EnsureDiscovered();
  auto devices = weft::Registry::Get().Devices();
  if (index < 0 || index >= static_cast<int32_t>(devices.size()))
    return weft::Errorf(WEFT_INVALID_ARGUMENT, "no device %d (there are %zu)",
                        index, devices.size());
  const weft::Device& dev = *devices[index];
  weft_device_description d{};
  d.struct_size = sizeof d;
  d.name = dev.name.c_str();
  d.type = dev.type.c_str();
  d.index = dev.index;
  d.description = dev.description.c_str();
  d.vendor = dev.vendor.c_str();
  d.plugin = dev.plugin->name.c_str();
  d.memory_bytes = dev.memory_bytes;
  d.compute_gflops = dev.compute_gflops;
  d.flags = dev.flags;
  d.unsupported_dtypes = dev.unsupported_dtypes;
  return weft::WriteSized(d, out);
}

weft_status* weft_cluster_world(int32_t* out_rank, int32_t* out_size) {
  if (out_rank == nullptr || out_size == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT,
                       "weft_cluster_world: NULL argument");
  const weft::distributed::World* world = nullptr;
  WEFT_RETURN_IF_ERROR(weft::distributed::GetWorld(&world));
  *out_rank = world->rank;
  *out_size = world->size;
  return nullptr;
}

weft_status* weft_cluster_abort(int32_t code) {
  const weft::distributed::World* world = nullptr;
  WEFT_RETURN_IF_ERROR(weft::distributed::GetWorld(&world));
  if (world->mpi == nullptr)
    return weft::Error(WEFT_FAILED_PRECONDITION,
                       "weft_cluster_abort: this process was not started by "
                       "an MPI launcher: there is no job to end");
  world->mpi->abort(code);
  return nullptr;  // not reached
}

}  // extern "C"
