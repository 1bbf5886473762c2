// A device provided by a plugin, as the runtime sees it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/spin_lock.h"
#include "tensor/buffer.h"
#include "weft/device.h"
#include "weft/plugin.h"

namespace weft {

struct Plugin;

class Device {
 public:
  Plugin* plugin = nullptr;
  // The plugin's table, copied and zero-extended to the host's size, so a
  // slot the plugin's (older, smaller) table lacks reads as NULL.
  const weft_plugin_api* api = nullptr;
  weft_plugin_device* handle = nullptr;

  std::string name;  // "/device:CPU:0"
  std::string type;  // "CPU"
  int32_t index = 0;
  std::string description;
  std::string vendor;
  uint64_t memory_bytes = 0;
  double compute_gflops = 0;
  uint32_t flags = 0;
  // weft_device_properties.unsupported_dtypes (plugin interface 1.6).
  uint64_t unsupported_dtypes = 0;

  bool host_memory() const { return (flags & WEFT_DEVICE_HOST_MEMORY) != 0; }
  bool has_streams() const { return api->stream_create != nullptr; }
  // Whether its plugin runs AllReduce and Broadcast itself (interface
  // 1.7: the collective_* slots, all set or all NULL).
  bool has_collectives() const {
    return api->collective_unique_id != nullptr;
  }

  // Allocates `bytes` on the device; bytes == 0 gives an empty ref.
  weft_status* Allocate(size_t bytes, BufferRef* out);
  // Called when the last reference to one of this device's buffers goes:
  // keeps it for reuse or frees it.
  void Recycle(Buffer* buffer);

 private:
  // Freed allocations kept for reuse, so running a plan again does not go
  // to the plugin (and to malloc and fresh pages) for every output; a
  // buffer keeps its Buffer object too.  Sizes up to 1 MiB are rounded to
  // powers of two; larger ones to whole MiB (at most 1/16 waste from 16 MiB
  // on).  The cache is bounded in entries per size and in total bytes.
  static constexpr int kSmallClasses = 15;          // 64 B .. 1 MiB
  static constexpr size_t kMaxPerClass = 64;
  static constexpr size_t kLargeStep = size_t{1} << 20;
  static constexpr size_t kLargestCached = size_t{256} << 20;
  static constexpr size_t kMaxCachedBytes = size_t{512} << 20;
  // The size `bytes` is rounded to, and its cache list.
  size_t RoundedSize(size_t bytes) const;
  std::vector<Buffer*>* CacheList(size_t rounded);
  // Where the cache has none of `rounded`: the list of the smallest larger
  // size up to twice it that has one, or null (needs cache_mu_).
  std::vector<Buffer*>* LargerCached(size_t rounded);
  SpinLock cache_mu_;
  std::vector<Buffer*> small_cache_[kSmallClasses];
  std::unordered_map<size_t, std::vector<Buffer*>> large_cache_;
  size_t cached_bytes_ = 0;
};

}  // namespace weft
