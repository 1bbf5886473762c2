// A device provided by a plugin, as the runtime sees it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

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

  bool host_memory() const { return (flags & WEFT_DEVICE_HOST_MEMORY) != 0; }
  bool has_streams() const { return api->stream_create != nullptr; }

  // Allocates `bytes` on the device; bytes == 0 gives an empty ref.
  weft_status* Allocate(size_t bytes, BufferRef* out);
  // Called when the last reference to one of this device's buffers goes:
  // keeps it for reuse or frees it.
  void Recycle(Buffer* buffer);

 private:
  // Freed allocations kept for reuse, so the executor's hot path does not go
  // to the plugin (and malloc) for every output.  Small sizes only, bounded
  // per size class; a buffer keeps its Buffer object too.
  static constexpr int kClasses = 15;  // 64 B .. 1 MiB, powers of two
  static constexpr size_t kMaxPerClass = 64;
  std::mutex cache_mu_;
  std::vector<Buffer*> cache_[kClasses];
};

}  // namespace weft
