// Intra-op thread pools, one per thread count, created on first use.
//
// Header-only so that bench/ can call the plugin's compute functions with
// the very same pools.  Each shared object that includes it gets its own
// cache (the plugin's symbols are hidden).
#ifndef WEFT_PLUGINS_CPU_THREAD_POOL_H_
#define WEFT_PLUGINS_CPU_THREAD_POOL_H_

#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif

#include <atomic>
#include <mutex>

#include <unsupported/Eigen/CXX11/Tensor>

namespace weft_cpu {

// Sessions ask for a handful of distinct counts; capping keeps the cache a
// fixed array that readers can index without a lock.
constexpr int kMaxIntraOpThreads = 256;

struct PoolEntry {
  Eigen::ThreadPool* pool;
  Eigen::ThreadPoolDevice* device;
};

inline std::mutex& ThreadPoolMutex() {
  static std::mutex mutex;
  return mutex;
}

inline std::atomic<PoolEntry*>* ThreadPoolSlots() {
  // Constant-initialised to null: no guard on the read path.
  static std::atomic<PoolEntry*> slots[kMaxIntraOpThreads + 1];
  return slots;
}

// The device for `threads` threads, or NULL when one thread (the caller)
// should do the work.  May throw std::bad_alloc or std::system_error when
// the pool cannot be created.
inline Eigen::ThreadPoolDevice* ThreadPoolFor(int threads) {
  if (threads <= 1) return nullptr;
  if (threads > kMaxIntraOpThreads) threads = kMaxIntraOpThreads;
  std::atomic<PoolEntry*>& slot = ThreadPoolSlots()[threads];
  if (PoolEntry* entry = slot.load(std::memory_order_acquire)) {
    return entry->device;
  }
  std::lock_guard<std::mutex> lock(ThreadPoolMutex());
  if (PoolEntry* entry = slot.load(std::memory_order_relaxed)) {
    return entry->device;
  }
  auto* entry = new PoolEntry{nullptr, nullptr};
  try {
    entry->pool = new Eigen::ThreadPool(threads);
    entry->device = new Eigen::ThreadPoolDevice(entry->pool, threads);
  } catch (...) {
    delete entry->pool;
    delete entry;
    throw;
  }
  slot.store(entry, std::memory_order_release);
  return entry->device;
}

// Joins every pool.  Pools are otherwise never destroyed: running static
// destructors at process exit while pool threads still spin would race with
// them, whereas an unload (after shutdown) must not leave threads running
// code that is about to be unmapped.  No kernel may run during or after
// this call.
inline void ShutdownThreadPools() {
  std::lock_guard<std::mutex> lock(ThreadPoolMutex());
  std::atomic<PoolEntry*>* slots = ThreadPoolSlots();
  for (int i = 0; i <= kMaxIntraOpThreads; ++i) {
    PoolEntry* entry = slots[i].exchange(nullptr, std::memory_order_acq_rel);
    if (entry == nullptr) continue;
    delete entry->device;
    delete entry->pool;
    delete entry;
  }
}

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_THREAD_POOL_H_
