// Host memory on transparent huge pages: see host_memory.h for why.
#include "host_memory.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define WEFT_CPU_SANITIZED_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WEFT_CPU_SANITIZED_HEAP 1
#endif

namespace weft_cpu {
namespace {

// 64-byte aligned memory from the C library.
void* AllocatePlain(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > SIZE_MAX - 63) return nullptr;
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
}

}  // namespace

namespace host_memory_testing {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr int kSmallestShift = 16;  // 64 KiB: below it, aligned_alloc
constexpr size_t kSmallest = size_t{1} << kSmallestShift;
// Block sizes 64 KiB << k for k in [0, kOrders): 64 KiB .. 2 MiB (a whole
// chunk, only ever split: buffers are at most kLargest).
constexpr int kOrders = 6;
constexpr int kChunkOrder = kOrders - 1;
constexpr size_t kLargest = kHugePage / 2;

// The order of the smallest block holding `bytes` (<= kHugePage).
int OrderOf(size_t bytes) {
  int k = 0;
  while ((kSmallest << k) < bytes) ++k;
  return k;
}

// A fresh 2 MiB chunk at a 2 MiB boundary, marked for huge pages; nullptr
// when the address space or memory is exhausted.
char* MapChunk() {
  const size_t span = 2 * kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  char* begin = static_cast<char*>(raw);
  char* chunk = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(begin) + kHugePage - 1) &
      ~static_cast<uintptr_t>(kHugePage - 1));
  if (chunk > begin) munmap(begin, chunk - begin);
  char* end = begin + span;
  if (end > chunk + kHugePage) munmap(chunk + kHugePage, end - chunk - kHugePage);
  madvise(chunk, kHugePage, MADV_HUGEPAGE);
  return chunk;
}

}  // namespace

// A buddy allocator over 2 MiB chunks: a request of 64 KiB .. 1 MiB takes
// the power-of-two block that holds it, split from a larger free block,
// and a freed block merges with its free buddy, so that buffers of
// different sizes share chunks (a chunk per size left up to 2 MiB resident
// per size).  Other sizes come from aligned_alloc: the larger buffers in
// the CNN (activations of 1.6 – 6.4 MB) ran no faster on huge pages, and
// huge pages make a block's untouched parts resident too.
class Allocator {
 public:
  explicit Allocator(bool huge_pages) : huge_(huge_pages) {}
  ~Allocator() {
    for (uintptr_t chunk : chunks_) munmap(reinterpret_cast<void*>(chunk),
                                           kHugePage);
    if (spare_ != nullptr) munmap(spare_, kHugePage);
  }
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  void* Allocate(size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (!huge_ || bytes < kSmallest || bytes > kLargest) {
      return AllocatePlain(bytes);
    }
    const int k = OrderOf(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    int j = k;
    while (j < kOrders && free_[j].empty()) ++j;
    uintptr_t block;
    if (j == kOrders) {
      char* chunk = spare_ != nullptr ? spare_ : MapChunk();
      spare_ = nullptr;
      if (chunk == nullptr) return nullptr;
      block = reinterpret_cast<uintptr_t>(chunk);
      chunks_.insert(block);
      j = kChunkOrder;
    } else {
      block = *free_[j].begin();
      free_[j].erase(free_[j].begin());
    }
    // Split down to order k, the upper halves becoming free blocks.
    while (j > k) {
      --j;
      free_[j].insert(block + (kSmallest << j));
    }
    live_[block] = k;
    return reinterpret_cast<void*>(block);
  }

  void Free(void* p) {
    if (p == nullptr) return;
    if (huge_) {
      std::lock_guard<std::mutex> lock(mu_);
      const uintptr_t at = reinterpret_cast<uintptr_t>(p);
      auto live = live_.find(at);
      if (live != live_.end()) {
        Release(live);
        return;
      }
      if (chunks_.count(at & ~static_cast<uintptr_t>(kHugePage - 1)) != 0) {
        std::fprintf(stderr,
                     "weft-cpu: FreeHost(%p): not a buffer handed out (freed "
                     "twice?)\n", p);
        std::abort();
      }
    }
    std::free(p);
  }

  Counts Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return Counts{chunks_.size(), live_.size()};
  }
  bool huge_pages() const { return huge_; }

 private:
  // Gives a block back, merging it with its free buddies; a chunk wholly
  // free becomes the spare (one kept, so that a buffer freed and allocated
  // again maps nothing) or is unmapped.  Called with mu_ held.
  void Release(std::unordered_map<uintptr_t, int>::iterator live) {
    uintptr_t block = live->first;
    int k = live->second;
    live_.erase(live);
    while (k < kChunkOrder) {
      const uintptr_t buddy = block ^ (kSmallest << k);
      auto it = free_[k].find(buddy);
      if (it == free_[k].end()) break;
      free_[k].erase(it);
      block &= ~static_cast<uintptr_t>(kSmallest << k);
      ++k;
    }
    if (k < kChunkOrder) {
      free_[k].insert(block);
      return;
    }
    chunks_.erase(block);
    if (spare_ == nullptr) {
      spare_ = reinterpret_cast<char*>(block);
    } else {
      munmap(reinterpret_cast<void*>(block), kHugePage);
    }
  }

  const bool huge_;
  std::mutex mu_;
  std::unordered_set<uintptr_t> chunks_;          // mapped, in use
  std::set<uintptr_t> free_[kOrders];  // free blocks by order, lowest first
  std::unordered_map<uintptr_t, int> live_;       // handed out -> order
  char* spare_ = nullptr;                         // an empty chunk kept
};

Allocator* NewAllocator(bool huge_pages) { return new Allocator(huge_pages); }
void DeleteAllocator(Allocator* a) { delete a; }
void* Allocate(Allocator* a, size_t bytes) { return a->Allocate(bytes); }
void Free(Allocator* a, void* p) { a->Free(p); }
Counts CountsOf(Allocator* a) { return a->Count(); }

}  // namespace host_memory_testing

namespace {

// Whether this process gets huge pages: the kernel offers them (its
// setting is not "never" and madvise accepts MADV_HUGEPAGE), the heap is
// not a sanitizer's, and WEFT_CPU_HUGE_PAGES is not 0.
bool WantHugePages() {
#if defined(WEFT_CPU_SANITIZED_HEAP)
  return false;
#else
  const char* env = std::getenv("WEFT_CPU_HUGE_PAGES");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  if (std::FILE* f =
          std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    char setting[128] = {0};
    const size_t n = std::fread(setting, 1, sizeof setting - 1, f);
    std::fclose(f);
    setting[n] = '\0';
    if (std::strstr(setting, "[never]") != nullptr) return false;
  }
  const size_t span = size_t{2} << 20;
  void* probe = mmap(nullptr, span, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return false;
  const bool ok = madvise(probe, span, MADV_HUGEPAGE) == 0;
  munmap(probe, span);
  return ok;
#endif
}

host_memory_testing::Allocator& Process() {
  // Never destroyed: threads' kept scratch is freed at their exit, which
  // may come after static destructors.
  static auto* allocator = new host_memory_testing::Allocator(WantHugePages());
  return *allocator;
}

}  // namespace

void* AllocateHost(size_t bytes) { return Process().Allocate(bytes); }
void FreeHost(void* p) { Process().Free(p); }
bool HostHugePages() { return Process().huge_pages(); }

Scratch::Scratch(size_t bytes, Slot slot) {
  if (bytes == 0) return;
  bytes = (bytes + 63) / 64 * 64;
  // Convolution and pooling scratch on small pages (host_memory.h).
  auto allocate = [slot](size_t n) {
    return slot == kKernel ? AllocatePlain(n) : AllocateHost(n);
  };
  if (bytes > kKeepBytes) {
    data_ = allocate(bytes);
    if (data_ == nullptr) throw std::bad_alloc();
    owned_ = true;
    return;
  }
  struct Kept {
    void* data = nullptr;
    size_t size = 0;
    ~Kept() { FreeHost(data); }
  };
  static thread_local Kept kept[kSlots];
  Kept& k = kept[slot];
  if (k.size < bytes) {
    void* grown = allocate(bytes);
    if (grown == nullptr) throw std::bad_alloc();
    FreeHost(k.data);
    k.data = grown;
    k.size = bytes;
  }
  data_ = k.data;
}

}  // namespace weft_cpu
