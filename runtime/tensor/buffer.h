// Reference-counted memory behind tensors: host memory the runtime owns, host
// memory wrapped from the caller (zero-copy, with a deleter), or an opaque
// allocation on a plugin's device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "weft/tensor.h"

namespace weft {

class Device;

struct Buffer {
  enum class Kind : uint8_t { kHostOwned, kHostWrapped, kDevice };

  std::atomic<int32_t> refs{1};
  Kind kind = Kind::kHostOwned;
  // Set on buffers that hold session state (variables) or graph constants:
  // a fetch hands the caller a copy of those, never the state itself.
  bool is_state = false;
  Device* device = nullptr;  // for kDevice
  void* handle = nullptr;    // host pointer, or the device's opaque handle
  size_t bytes = 0;
  // For kDevice: the size allocated, which can exceed `bytes` (the device's
  // cache rounds sizes up, and may hand out a larger cached buffer).
  size_t capacity = 0;
  weft_deleter deleter = nullptr;  // for kHostWrapped
  void* deleter_arg = nullptr;
};

void BufferUnref(Buffer* buffer);

// An owning pointer to a Buffer (intrusive count: one allocation a buffer).
class BufferRef {
 public:
  BufferRef() = default;
  explicit BufferRef(Buffer* adopted) : p_(adopted) {}
  BufferRef(const BufferRef& o) : p_(o.p_) {
    if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  BufferRef(BufferRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  BufferRef& operator=(BufferRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~BufferRef() { reset(); }
  void reset() {
    if (p_) BufferUnref(std::exchange(p_, nullptr));
  }
  Buffer* get() const { return p_; }
  Buffer* operator->() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int32_t use_count() const {
    return p_ ? p_->refs.load(std::memory_order_acquire) : 0;
  }

 private:
  Buffer* p_ = nullptr;
};

// Host memory aligned to 64 bytes, zero-filled (with `zeroed` false only
// the padding past `bytes` is: for a caller that writes every byte before
// anyone reads it).  Returns an empty ref when memory runs out.  `bytes`
// may be 0 (then there is no allocation at all).
BufferRef AllocateHostBuffer(size_t bytes, bool zeroed = true);

}  // namespace weft
