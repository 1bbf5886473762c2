// oneDNN's engine, streams, thread count and a bounded primitive cache,
// shared by every oneDNN kernel of the CPU plugin (convolution, pooling,
// MatMul) and by bench/, which calls the same setup directly.
//
// Header-only; include it only where WEFT_CPU_HAVE_ONEDNN is defined.  Each
// shared object that includes it gets its own engine and caches (the
// plugin's symbols are hidden).
//
// Threads.  oneDNN runs its parallel regions on the threading runtime it
// was built with.  Debian's libdnnl2 (2.6) is built with OpenMP
// (DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP in dnnl_config.h, and libdnnl.so
// needs libgomp.so.1): a parallel region takes its size from the OpenMP
// setting of the thread that starts it, and a primitive splits its work for
// the thread count it sees when it is created.  So, before creating or
// executing a primitive, a kernel calls OnednnPrepareThread(threads), which
// sets the calling thread's OpenMP thread count, and keys its primitive
// cache on that count.  Every oneDNN user in the plugin must go through it
// (it remembers the count it last set on each thread).  With a sequential
// build every count is 1; with TBB or a threadpool build the library's own
// default applies (such builds would need a task arena or a threadpool
// adapter here).
#ifndef WEFT_PLUGINS_CPU_ONEDNN_ENGINE_H_
#define WEFT_PLUGINS_CPU_ONEDNN_ENGINE_H_

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "work_pool.h"

namespace weft_cpu {

// One CPU engine for the process: creating it probes the ISA, and
// primitives made on it may execute on any thread.  Throws dnnl::error when
// oneDNN cannot create it; the next call tries again.
inline const dnnl::engine& OnednnEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

namespace onednn_detail {

// The plugin links oneDNN but not OpenMP, so the OpenMP functions come from
// the runtime oneDNN itself loaded (RTLD_NOLOAD: never load one of our own).
// NULL when none is found; oneDNN then uses all cores.
inline void* FindOmpSymbol(const char* name) {
  for (const char* lib : {"libgomp.so.1", "libiomp5.so", "libomp.so.5"}) {
    if (void* handle = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      void* sym = dlsym(handle, name);
      // The library stays loaded by oneDNN's reference; ours is dropped.
      dlclose(handle);
      if (sym != nullptr) return sym;
    }
  }
  return nullptr;
}

using SetIntFn = void (*)(int);
using GetIntFn = int (*)();

inline SetIntFn OmpSetNumThreads() {
  static const auto fn =
      reinterpret_cast<SetIntFn>(FindOmpSymbol("omp_set_num_threads"));
  return fn;
}
inline SetIntFn OmpSetDynamic() {
  static const auto fn =
      reinterpret_cast<SetIntFn>(FindOmpSymbol("omp_set_dynamic"));
  return fn;
}

// OMP_THREAD_LIMIT caps every parallel region, whatever
// omp_set_num_threads asked for; 0 when unknown (no limit).
inline int OmpThreadLimit() {
  static const int limit = [] {
    auto get = reinterpret_cast<GetIntFn>(FindOmpSymbol("omp_get_thread_limit"));
    return get != nullptr ? get() : 0;
  }();
  return limit;
}

}  // namespace onednn_detail

// The thread count oneDNN will actually use for a request of `threads`
// (<= 0 meaning one): the value to key primitive caches with.
inline int OnednnThreads(int threads) {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_SEQ
  (void)threads;
  return 1;
#else
  // A primitive splits its work for the thread count it is created with,
  // and a parallel region that then gets fewer threads leaves the missing
  // threads' share of the output unwritten (a silent wrong answer seen with
  // OMP_THREAD_LIMIT=1).  So never ask for more than OpenMP will deliver.
  if (threads < 1) threads = 1;
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  int limit = onednn_detail::OmpThreadLimit();
  if (limit > 0 && threads > limit) threads = limit;
#endif
  return threads;
#endif
}

// Makes the calling thread's next oneDNN primitive creations and executions
// use `threads` threads, and returns the stream to execute on (one per
// thread: streams are not documented as safe to share between threads).
inline dnnl::stream& OnednnPrepareThread(int threads) {
  threads = OnednnThreads(threads);
  // OpenMP's workers are about to run: the WorkPool's idle workers stop
  // spinning on the cores they need.
  if (threads > 1) WorkPool::Hush();
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  // Only a change costs a call into OpenMP.
  static thread_local int current = 0;
  if (current != threads) {
    if (onednn_detail::SetIntFn set = onednn_detail::OmpSetNumThreads())
      set(threads);
    // Dynamic adjustment (OMP_DYNAMIC=true) could also hand a region fewer
    // threads than the primitive was split for.
    if (onednn_detail::SetIntFn dynamic = onednn_detail::OmpSetDynamic())
      dynamic(0);
    current = threads;
  }
#endif
  static thread_local dnnl::stream stream(OnednnEngine());
  return stream;
}

// A bounded, thread-safe LRU cache of primitives (or anything expensive to
// build) keyed by a trivially copyable struct compared byte for byte;
// callers value-initialize keys so that padding bytes compare equal.  A hit
// allocates nothing and takes one short lock; entries are shared_ptrs, so
// an entry evicted while another thread executes it stays alive until that
// thread is done.
template <typename Key, typename Value, size_t kCapacity = 128>
class OnednnCache {
  static_assert(std::is_trivially_copyable<Key>::value,
                "cache keys are compared as bytes");

 public:
  // The cached value for `key`, built by `make()` (which returns a
  // std::shared_ptr<const Value> and may throw) on a miss.  Building runs
  // outside the lock, so a slow primitive creation never stalls the
  // other threads' hits.
  template <typename Make>
  std::shared_ptr<const Value> Get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
    }
    std::shared_ptr<const Value> built = make();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;  // another thread won
    order_.emplace_front(key, built);
    index_.emplace(key, order_.begin());
    if (order_.size() > kCapacity) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return built;
  }

 private:
  struct Hash {
    size_t operator()(const Key& k) const {
      // FNV-1a over the key's 8-byte words (then its last bytes): a
      // 232-byte MatMulGeometry hashed byte by byte made a hit cost
      // ~200 ns, a few of them per product.
      const unsigned char* p = reinterpret_cast<const unsigned char*>(&k);
      uint64_t h = 1469598103934665603ull;
      size_t i = 0;
      for (; i + 8 <= sizeof k; i += 8) {
        uint64_t word;
        std::memcpy(&word, p + i, 8);
        h = (h ^ word) * 1099511628211ull;
        h ^= h >> 29;
      }
      for (; i < sizeof k; ++i) h = (h ^ p[i]) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  struct Equal {
    bool operator()(const Key& a, const Key& b) const {
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
  };
  using Entry = std::pair<Key, std::shared_ptr<const Value>>;

  std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash, Equal>
      index_;
};

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_ONEDNN_ENGINE_H_
