// The CUDA plugin's caching allocator (caching_allocator.h) on the host:
// driven by a malloc/free backend that counts its calls, holds at most a
// set number of bytes (as a device would) and can be told to fail.  Size
// classes, reuse, the limit, the release-and-retry after a backend
// failure, bad frees, the WEFT_CUDA_MEMORY_LIMIT syntax, and many threads
// at once.  No GPU needed.  Prints TAP.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "caching_allocator.h"

using weft_cuda::AllocResult;
using weft_cuda::AllocatorStats;
using weft_cuda::CachingAllocator;
using weft_cuda::kGranule;
using weft_cuda::kMaxClassStep;
using weft_cuda::ParseMemoryLimit;
using weft_cuda::SizeClass;

namespace {

int g_case = 0;
int g_failed = 0;

void Report(bool ok, const std::string& name) {
  ++g_case;
  if (!ok) ++g_failed;
  std::printf("%s %d - %s\n", ok ? "ok" : "not ok", g_case, name.c_str());
}

// A "device" of `capacity` bytes (0: unbounded) on malloc.
struct MallocBackend {
  struct Counters {
    std::atomic<uint64_t> held{0}, peak{0}, allocations{0}, frees{0},
        failures{0};
    std::atomic<int> fail_next{0};  // fail this many calls outright
    uint64_t capacity = 0;
    std::function<void()> on_free;  // run by Free before it frees
  };
  Counters* c;

  bool Allocate(uint64_t bytes, void** out, std::string* why) {
    ++c->allocations;
    if (c->fail_next > 0) {
      --c->fail_next;
      ++c->failures;
      *why = "told to fail";
      return false;
    }
    const uint64_t now = c->held.fetch_add(bytes) + bytes;
    if (c->capacity != 0 && now > c->capacity) {
      c->held -= bytes;
      ++c->failures;
      *why = "out of memory";
      return false;
    }
    uint64_t peak = c->peak.load();
    while (now > peak && !c->peak.compare_exchange_weak(peak, now)) {
    }
    *out = std::malloc(bytes);
    return *out != nullptr;
  }
  void Free(void* block, uint64_t bytes) {
    if (c->on_free) c->on_free();
    ++c->frees;
    c->held -= bytes;
    std::free(block);
  }
};

using Allocator = CachingAllocator<MallocBackend>;

void TestSizeClasses() {
  bool ok = SizeClass(1) == kGranule && SizeClass(kGranule) == kGranule &&
            SizeClass(kGranule + 1) == 2 * kGranule;
  uint64_t previous = 0;
  for (uint64_t bytes = 1; bytes < (uint64_t{1} << 34) && ok;
       bytes = bytes * 9 / 8 + 1) {
    const uint64_t c = SizeClass(bytes);
    ok = c >= bytes && c % kGranule == 0 && c >= previous &&
         SizeClass(c) == c;  // a class is its own class
    if (bytes > 4 * kGranule) ok = ok && (c - bytes) * 4 < c;
    ok = ok && c - bytes < kMaxClassStep;
    previous = c;
  }
  Report(ok, "size classes: >= the request, multiples of 512, idempotent, "
             "monotonic, under 25% and 2 MiB of waste");
  // 4 classes per power of two in the middle range.
  Report(SizeClass(4097) == 5120 && SizeClass(5121) == 6144 &&
             SizeClass(7169) == 8192 && SizeClass(8193) == 10240,
         "four classes per power of two (4097 -> 5120, 5121 -> 6144, "
         "7169 -> 8192, 8193 -> 10240)");
  const uint64_t huge = (uint64_t{1} << 33) + 1;
  Report(SizeClass(huge) == (uint64_t{1} << 33) + kMaxClassStep,
         "large requests round to 2 MiB steps");
}

void TestReuse() {
  MallocBackend::Counters c;
  Allocator a(MallocBackend{&c}, 0);
  std::string why;
  void *p = nullptr, *q = nullptr, *r = nullptr;
  bool ok = a.Allocate(1000, &p, &why) == AllocResult::kOk && p != nullptr;
  ok = ok && a.Free(p);
  ok = ok && a.Allocate(700, &q, &why) == AllocResult::kOk;
  Report(ok && q == p && c.allocations == 1 && a.Stats().cache_hits == 1,
         "a freed block is handed out again for a request of its class");
  ok = a.Allocate(2000, &r, &why) == AllocResult::kOk && r != q;
  AllocatorStats s = a.Stats();
  Report(ok && c.allocations == 2 && s.in_use == 1024 + 2048 &&
             s.cached == 0 && s.reserved == s.in_use,
         "another class gets a new block; in-use bytes count classes");
  a.Free(q);
  a.Free(r);
  s = a.Stats();
  Report(s.in_use == 0 && s.cached == 3072 && c.frees == 0 &&
             c.held == 3072,
         "frees go to the cache, not to the backend");
  Report(a.Release() == 3072 && c.frees == 2 && c.held == 0 &&
             a.Stats().reserved == 0,
         "Release gives the cache back to the backend");
  Report(!a.Free(r) && !a.Free(reinterpret_cast<void*>(&c)) && a.Free(nullptr),
         "freeing a block twice or a foreign pointer is refused; NULL is a "
         "no-op");
}

void TestLimit() {
  MallocBackend::Counters c;
  Allocator a(MallocBackend{&c}, 4096);
  std::string why;
  void *p = nullptr, *q = nullptr, *r = nullptr;
  bool ok = a.Allocate(2048, &p, &why) == AllocResult::kOk &&
            a.Allocate(2048, &q, &why) == AllocResult::kOk;
  why.clear();
  ok = ok && a.Allocate(1, &r, &why) == AllocResult::kOverLimit &&
       r == nullptr;
  Report(ok && why == "4096 bytes in use" && c.allocations == 2,
         "past the limit: kOverLimit, no backend call, bytes in use named (" +
             why + ")");
  a.Free(q);
  ok = a.Allocate(1800, &q, &why) == AllocResult::kOk;  // class 2048
  Report(ok && c.allocations == 2, "a cached block is reused at the limit");
  a.Free(q);
  // A 1024-byte class does not fit beside p and the cached 2048: the cache
  // makes room.
  ok = a.Allocate(1024, &r, &why) == AllocResult::kOk;
  AllocatorStats s = a.Stats();
  Report(ok && c.frees == 1 && s.cached == 0 && s.reserved == 3072 &&
             c.held <= 4096,
         "the cache is released to make room under the limit");
  a.Free(p);
  a.Free(r);
  a.Release();
  // 4600 bytes round to 5120, past a 4700-byte limit; unrounded (4608) it
  // fits.
  Allocator b(MallocBackend{&c}, 4700);
  ok = b.Allocate(4600, &p, &why) == AllocResult::kOk;
  Report(ok && b.Stats().in_use == 4608,
         "a request that fits the limit only unrounded gets its own size");
  b.Free(p);
  Report(b.Allocate(4701, &p, &why) == AllocResult::kOverLimit,
         "a request larger than the limit fails");
}

void TestRetry() {
  MallocBackend::Counters c;
  c.capacity = 8192;  // the "device" is full with 8 KiB
  Allocator a(MallocBackend{&c}, 0);
  std::string why;
  void *p = nullptr, *q = nullptr, *r = nullptr;
  bool ok = a.Allocate(4096, &p, &why) == AllocResult::kOk &&
            a.Allocate(4096, &q, &why) == AllocResult::kOk;
  a.Free(p);
  a.Free(q);
  ok = ok && a.Allocate(6000, &r, &why) == AllocResult::kOk;
  AllocatorStats s = a.Stats();
  Report(ok && c.failures == 1 && s.retries == 1 && c.frees == 2 &&
             s.in_use == 6144 && s.cached == 0 && s.reserved == 6144,
         "a backend failure releases the cache and retries once");
  a.Free(r);
  // Both tries fail: the first outright, the second on capacity (p stays
  // in use, a small block waits in the cache).
  ok = a.Allocate(7000, &p, &why) == AllocResult::kOk;  // r's block freed
  ok = ok && a.Allocate(100, &r, &why) == AllocResult::kOk && a.Free(r);
  c.fail_next = 1;
  q = reinterpret_cast<void*>(&c);
  const AllocResult result = a.Allocate(4096, &q, &why);
  s = a.Stats();
  Report(ok && result == AllocResult::kBackendFailed && q == nullptr &&
             why == "out of memory" && s.reserved == s.in_use &&
             s.in_use == 7168,
         "when the retry fails too: kBackendFailed with the backend's "
         "reason, nothing left reserved");
  const uint64_t calls = c.allocations;
  c.fail_next = 1;
  const AllocResult again = a.Allocate(100, &q, &why);
  Report(again == AllocResult::kBackendFailed && c.allocations == calls + 1,
         "no retry when there was no cache to release");
  a.Free(p);
}

void TestParse() {
  struct Case {
    const char* text;
    bool ok;
    uint64_t bytes;
  };
  const Case cases[] = {
      {nullptr, true, 0},
      {"", true, 0},
      {"0", true, 0},
      {"123", true, 123},
      {"64k", true, 64 << 10},
      {"64KiB", true, 64 << 10},
      {"2M", true, 2 << 20},
      {"3g", true, uint64_t{3} << 30},
      {"3GB", true, uint64_t{3} << 30},
      {"1T", true, uint64_t{1} << 40},
      {"12B", true, 12},
      {"18446744073709551615", true, ~uint64_t{0}},
      {"18446744073709551616", false, 0},
      {"17179869184G", false, 0},
      {"G", false, 0},
      {"-1", false, 0},
      {"1.5G", false, 0},
      {"12 M", false, 0},
      {"12X", false, 0},
      {"12iB", false, 0},
  };
  bool ok = true;
  std::string failed;
  for (const Case& k : cases) {
    uint64_t bytes = 99;
    std::string why;
    const bool parsed = ParseMemoryLimit(k.text, &bytes, &why);
    const bool right = parsed == k.ok && (!parsed || bytes == k.bytes) &&
                       (parsed || !why.empty());
    if (!right) failed += std::string(" ") + (k.text ? k.text : "(null)");
    ok = ok && right;
  }
  Report(ok, "WEFT_CUDA_MEMORY_LIMIT syntax" +
                 (failed.empty() ? std::string() : ": wrong for" + failed));
}

void TestThreads() {
  MallocBackend::Counters c;
  c.capacity = 3 << 20;  // the backend fails past 3 MiB
  const uint64_t limit = 2 << 20;
  Allocator a(MallocBackend{&c}, limit);
  std::atomic<int> corrupted{0}, over{0}, failed{0}, served{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      std::vector<std::pair<unsigned char*, uint64_t>> held;
      for (int i = 0; i < 20000; ++i) {
        if (held.size() < 6 && rng() % 2 == 0) {
          const uint64_t bytes = 1 + rng() % (rng() % 8 == 0 ? 300000 : 5000);
          void* p = nullptr;
          std::string why;
          const AllocResult r = a.Allocate(bytes, &p, &why);
          if (r == AllocResult::kOverLimit) {
            ++over;
            continue;
          }
          if (r != AllocResult::kOk) {
            ++failed;
            continue;
          }
          ++served;
          // Fill the whole request: overlapping blocks would show as a
          // wrong byte at check time.
          std::memset(p, t * 31 + static_cast<int>(bytes % 200), bytes);
          held.emplace_back(static_cast<unsigned char*>(p), bytes);
        } else if (!held.empty()) {
          const size_t k = rng() % held.size();
          auto [p, bytes] = held[k];
          const unsigned char want =
              static_cast<unsigned char>(t * 31 + static_cast<int>(bytes % 200));
          for (uint64_t j = 0; j < bytes; j += 97)
            if (p[j] != want) ++corrupted;
          if (p[bytes - 1] != want) ++corrupted;
          if (!a.Free(p)) ++corrupted;
          held.erase(held.begin() + static_cast<long>(k));
        }
      }
      for (auto& h : held) a.Free(h.first);
    });
  }
  for (auto& th : threads) th.join();
  const AllocatorStats s = a.Stats();
  Report(corrupted == 0 && failed == 0 && served > 50000,
         "8 threads: no block handed out twice, no backend failure (" +
             std::to_string(served.load()) + " served, " +
             std::to_string(over.load()) + " over the limit)");
  Report(c.peak <= limit && s.in_use == 0 && s.reserved == s.cached &&
             c.held == s.cached && s.cache_hits > 0,
         "8 threads: the backend never held more than the limit (peak " +
             std::to_string(c.peak.load()) + "), the books balance");
}

// cudaFree waits for the device, which may wait for a stream's host
// function that returns a scratch block with Free: the backend's Free must
// run without the allocator's lock.  Here it waits for another thread's
// Free.
void TestFreeDuringRelease() {
  MallocBackend::Counters c;
  Allocator a(MallocBackend{&c}, 0);
  std::string why;
  void *p = nullptr, *q = nullptr;
  a.Allocate(1000, &p, &why);
  a.Allocate(5000, &q, &why);
  a.Free(p);
  bool freed = false;
  c.on_free = [&] {
    std::thread t([&] { freed = a.Free(q); });
    t.join();
  };
  auto done = std::async(std::launch::async, [&] { return a.Release(); });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    Report(false, "Free while the cache is released: deadlock");
    std::fflush(stdout);
    std::_Exit(1);
  }
  c.on_free = nullptr;
  const AllocatorStats s = a.Stats();
  Report(done.get() == 1024 && freed && s.cached == 5120 && s.in_use == 0,
         "Free runs while the backend frees the cache (no lock held)");
}

}  // namespace

int main() {
  std::printf("1..20\n");
  TestSizeClasses();
  TestReuse();
  TestLimit();
  TestRetry();
  TestParse();
  TestThreads();
  TestFreeDuringRelease();
  if (g_case != 20) std::printf("# planned 20, ran %d\n", g_case);
  return g_failed == 0 && g_case == 20 ? 0 : 1;
}
