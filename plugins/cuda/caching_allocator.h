// A cache of freed device blocks in front of a raw allocator, with a limit
// on the bytes it holds.  cudaMalloc and cudaFree are slow (cudaFree
// synchronizes the whole device), and a training step frees and allocates
// the same sizes every step; so memory_free keeps the block and the next
// memory_allocate of its size class takes it back.
//
// Plain C++ with no CUDA type: the backend is a template parameter, a type
// with
//   bool Allocate(uint64_t bytes, void** out, std::string* why);
//   void Free(void* block, uint64_t bytes);
// (cudaMalloc/cudaFree in the plugin, malloc/free in the host test).
//
// Rules, in order, for Allocate(bytes):
//  1. The request rounds up to its size class (SizeClass: four classes per
//     power of two, at most 2 MiB apart), and a cached block of that class
//     is handed out when there is one.
//  2. Otherwise a new block comes from the backend.  With a limit, the
//     bytes held (in use, cached, and being allocated) may not pass it:
//     the cache is released first to make room, and if the blocks in use
//     alone leave no room the request fails with kOverLimit.  A request
//     that fits the limit only unrounded is allocated at its own size
//     (kGranule multiple), so every request up to the limit can succeed.
//  3. When the backend fails, the whole cache is released to it and the
//     allocation is tried once more (only when something was released).
// Free(block) returns the block to the cache; nothing goes back to the
// backend until a later allocation needs the room (or Release()).
//
// Thread-safe: one mutex guards the bookkeeping, never held while the
// backend runs: a slow cudaMalloc on one thread does not hold up
// allocations served from the cache on others, and Free, which never calls
// the backend, can run in a stream's host function while another thread's
// cudaFree waits for that stream.  Bytes being allocated or released count
// against the limit meanwhile, so the backend never holds more than it.
#ifndef WEFT_PLUGINS_CUDA_CACHING_ALLOCATOR_H_
#define WEFT_PLUGINS_CUDA_CACHING_ALLOCATOR_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace weft_cuda {

// Every block is a multiple of this (cudaMalloc aligns to 256 anyway).
constexpr uint64_t kGranule = 512;
// The largest gap between neighbouring size classes.
constexpr uint64_t kMaxClassStep = uint64_t{2} << 20;

inline uint64_t RoundUpTo(uint64_t bytes, uint64_t step) {
  return (bytes + step - 1) / step * step;
}

// The block size a request of `bytes` gets: kGranule for the smallest, and
// four classes per power of two above (2^k times 1.25, 1.5, 1.75, 2), at
// most kMaxClassStep apart, so a block wastes under a quarter of itself
// and at most 2 MiB.  Sizes too large to round are returned unrounded.
inline uint64_t SizeClass(uint64_t bytes) {
  if (bytes <= kGranule) return kGranule;
  if (bytes > (uint64_t{1} << 62)) return bytes;
  const int k = 63 - __builtin_clzll(bytes - 1);  // 2^k < bytes <= 2^(k+1)
  uint64_t step = (uint64_t{1} << k) / 4;
  if (step < kGranule) step = kGranule;
  if (step > kMaxClassStep) step = kMaxClassStep;
  return RoundUpTo(bytes, step);
}

// WEFT_CUDA_MEMORY_LIMIT's syntax: a byte count, optionally followed by K,
// M, G or T (powers of 1024, either case, an optional "B" or "iB" after).
// Empty or "0": no limit (*bytes = 0).  Returns false, with *why, for
// anything else.
inline bool ParseMemoryLimit(const char* text, uint64_t* bytes,
                             std::string* why) {
  *bytes = 0;
  if (text == nullptr || *text == '\0') return true;
  const char* p = text;
  uint64_t value = 0;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; ++p) {
    digits = true;
    if (__builtin_mul_overflow(value, uint64_t{10}, &value) ||
        __builtin_add_overflow(value, uint64_t(*p - '0'), &value)) {
      *why = std::string("'") + text + "' is larger than 2^64 - 1 bytes";
      return false;
    }
  }
  int shift = 0;
  switch (*p) {
    case 'k': case 'K': shift = 10; ++p; break;
    case 'm': case 'M': shift = 20; ++p; break;
    case 'g': case 'G': shift = 30; ++p; break;
    case 't': case 'T': shift = 40; ++p; break;
    default: break;
  }
  if (shift != 0 && *p == 'i') ++p;
  if (*p == 'b' || *p == 'B') ++p;
  if (!digits || *p != '\0') {
    *why = std::string("'") + text +
           "' is not a byte count (digits, then optionally K, M, G or T)";
    return false;
  }
  if (shift != 0 && value > (~uint64_t{0} >> shift)) {
    *why = std::string("'") + text + "' is larger than 2^64 - 1 bytes";
    return false;
  }
  *bytes = value << shift;
  return true;
}

struct AllocatorStats {
  uint64_t in_use = 0;    // bytes of blocks handed out
  uint64_t cached = 0;    // bytes of freed blocks kept
  uint64_t reserved = 0;  // in_use + cached + allocations under way
  uint64_t backend_allocations = 0;
  uint64_t backend_frees = 0;
  uint64_t cache_hits = 0;
  uint64_t retries = 0;   // backend failures followed by a release and retry
};

enum class AllocResult { kOk, kOverLimit, kBackendFailed };

template <typename Backend>
class CachingAllocator {
 public:
  // `limit` 0: none.
  CachingAllocator(Backend backend, uint64_t limit)
      : backend_(std::move(backend)), limit_(limit) {}
  // Returns the cache to the backend; blocks still in use are the owner's
  // (the plugin's allocators live as long as the process and are never
  // destroyed).
  ~CachingAllocator() { Release(); }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  uint64_t limit() const { return limit_; }
  Backend& backend() { return backend_; }

  // `bytes` > 0.  On kOverLimit *why says how many bytes are in use; on
  // kBackendFailed it is the backend's reason.
  AllocResult Allocate(uint64_t bytes, void** out, std::string* why) {
    *out = nullptr;
    uint64_t size = SizeClass(bytes);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        auto hit = free_.find(size);
        if (hit != free_.end()) {
          void* block = hit->second;
          free_.erase(hit);
          stats_.cached -= size;
          stats_.in_use += size;
          ++stats_.cache_hits;
          in_use_[block] = size;
          *out = block;
          return AllocResult::kOk;
        }
        if (limit_ == 0 || Fits(size)) break;
        if (stats_.cached != 0) {  // make room, then look again
          ReleaseCache(&lock);
          continue;
        }
        if (releasing_ != 0) {  // another thread is making room
          released_.wait(lock);
          continue;
        }
        const uint64_t exact = RoundUpTo(bytes, kGranule);
        if (exact >= bytes && Fits(exact)) {
          size = exact;  // fits only unrounded
          break;
        }
        *why = std::to_string(stats_.reserved) + " bytes in use";
        return AllocResult::kOverLimit;
      }
      stats_.reserved += size;  // under way: counted against the limit
    }
    // Outside the lock: cudaMalloc may be slow, and blocks cached or freed
    // meanwhile by other threads need not wait for it.
    void* block = nullptr;
    bool ok = backend_.Allocate(size, &block, why);
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ok && ReleaseCache(&lock) != 0) {
      ++stats_.retries;
      lock.unlock();
      ok = backend_.Allocate(size, &block, why);
      lock.lock();
    }
    if (!ok) {
      stats_.reserved -= size;
      released_.notify_all();  // the bytes may let a waiter in
      return AllocResult::kBackendFailed;
    }
    ++stats_.backend_allocations;
    stats_.in_use += size;
    in_use_[block] = size;
    *out = block;
    return AllocResult::kOk;
  }

  // Returns a block from Allocate to the cache.  False (and nothing done)
  // for a pointer this allocator did not hand out or already took back.
  // Never calls the backend, so it may run where CUDA calls may not (a
  // stream's host function).
  bool Free(void* block) {
    if (block == nullptr) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_use_.find(block);
    if (it == in_use_.end()) return false;
    const uint64_t size = it->second;
    in_use_.erase(it);
    stats_.in_use -= size;
    stats_.cached += size;
    free_.emplace(size, block);
    return true;
  }

  // Gives every cached block back to the backend; returns the bytes.
  uint64_t Release() {
    std::unique_lock<std::mutex> lock(mutex_);
    return ReleaseCache(&lock);
  }

  AllocatorStats Stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  // Whether `size` more bytes stay within the limit.
  bool Fits(uint64_t size) const {
    return stats_.reserved <= limit_ && size <= limit_ - stats_.reserved;
  }

  // Frees the cache to the backend with the lock dropped (cudaFree
  // synchronizes the device, which may be waiting on a stream's host
  // function that calls Free), and relocks.  The bytes count against the
  // limit until the backend has them back, so it never holds more than the
  // limit; threads that need them wait on released_ meanwhile.  Returns
  // the bytes released.
  uint64_t ReleaseCache(std::unique_lock<std::mutex>* lock) {
    const uint64_t bytes = stats_.cached;
    if (bytes == 0) return 0;
    std::multimap<uint64_t, void*> blocks;
    blocks.swap(free_);
    stats_.cached = 0;
    releasing_ += bytes;
    lock->unlock();
    for (const auto& entry : blocks) backend_.Free(entry.second, entry.first);
    lock->lock();
    stats_.backend_frees += blocks.size();
    stats_.reserved -= bytes;
    releasing_ -= bytes;
    released_.notify_all();
    return bytes;
  }

  Backend backend_;
  const uint64_t limit_;
  mutable std::mutex mutex_;
  std::multimap<uint64_t, void*> free_;         // cached, by size
  std::unordered_map<void*, uint64_t> in_use_;  // handed out, with size
  uint64_t releasing_ = 0;  // cached bytes on their way to the backend
  std::condition_variable released_;
  AllocatorStats stats_;
};

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_CACHING_ALLOCATOR_H_
