// The CPU plugin's host memory (plugins/cpu/host_memory.h): the buddy
// allocator over huge-page chunks hands out 64-byte aligned blocks that
// never overlap, merges freed buddies and gives chunks back, keeps other
// sizes off the chunks, uses no chunk at all without huge pages, and the
// kernel really backs a chunk with a huge page where the process uses them.
// Plain C++ with TAP output, so it runs in the ASan+UBSan suite too (there
// the process allocator has huge pages off; the allocators these cases make
// have them forced on or off).
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tap.h"
#include "host_memory.h"

namespace hm = weft_cpu::host_memory_testing;

namespace {

using tap::Report;
using tap::Skip;

constexpr size_t kKiB = 1024;
constexpr size_t kChunk = 2048 * kKiB;

struct Live {
  unsigned char* p;
  size_t bytes;
  unsigned char mark;
};

// Fills every live buffer with its own byte, then checks them all: two
// blocks that overlap would overwrite each other's bytes.
std::string CheckDisjoint(const std::vector<Live>& live) {
  for (const Live& b : live) std::memset(b.p, b.mark, b.bytes);
  for (const Live& b : live) {
    for (size_t i = 0; i < b.bytes; i += 512) {
      if (b.p[i] != b.mark || b.p[b.bytes - 1] != b.mark) {
        char why[160];
        std::snprintf(why, sizeof why,
                      "a %zu-byte buffer at %p was overwritten by another",
                      b.bytes, static_cast<void*>(b.p));
        return why;
      }
    }
  }
  return "";
}

// Random sizes across the range and beyond it, allocated and freed in a
// random order: blocks are 64-byte aligned and never overlap, and once
// everything is freed no chunk is left in use.
void RandomBlocksAreDisjoint() {
  hm::Allocator* a = hm::NewAllocator(true);
  std::mt19937 rng(7);
  const size_t sizes[] = {1,          100,         64 * kKiB - 1, 64 * kKiB,
                          64 * kKiB + 1, 100 * kKiB, 128 * kKiB,  200 * kKiB,
                          256 * kKiB, 513 * kKiB,  784 * kKiB,   1024 * kKiB,
                          1024 * kKiB + 1, 3000 * kKiB};
  std::vector<Live> live;
  std::string why;
  unsigned char mark = 1;
  for (int step = 0; step < 3000 && why.empty(); ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t bytes = sizes[rng() % (sizeof sizes / sizeof *sizes)];
      auto* p = static_cast<unsigned char*>(hm::Allocate(a, bytes));
      if (p == nullptr) {
        why = "allocating " + std::to_string(bytes) + " bytes failed";
        break;
      }
      if (reinterpret_cast<uintptr_t>(p) % 64 != 0) {
        why = std::to_string(bytes) + " bytes not 64-byte aligned";
        break;
      }
      live.push_back(Live{p, bytes, mark});
      mark = static_cast<unsigned char>(mark % 250 + 1);
    } else {
      const size_t i = rng() % live.size();
      hm::Free(a, live[i].p);
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 100 == 99) why = CheckDisjoint(live);
  }
  if (why.empty()) why = CheckDisjoint(live);
  for (const Live& b : live) hm::Free(a, b.p);
  const hm::Counts c = hm::CountsOf(a);
  if (why.empty() && (c.chunks != 0 || c.blocks != 0)) {
    why = std::to_string(c.chunks) + " chunks and " +
          std::to_string(c.blocks) + " blocks left after freeing everything";
  }
  hm::DeleteAllocator(a);
  Report(why.empty(), "random blocks are aligned and disjoint", why);
}

// Blocks of different sizes share a chunk; freed buddies merge so that a
// chunk's whole space can be handed out again as one block.
void BuddiesShareAndMerge() {
  hm::Allocator* a = hm::NewAllocator(true);
  std::string why;
  // 1 MiB + 512 KiB + 256 KiB + 2 x 128 KiB fill one chunk exactly.
  const size_t fill[] = {1024 * kKiB, 512 * kKiB, 256 * kKiB, 128 * kKiB,
                         128 * kKiB};
  std::vector<void*> held;
  for (size_t bytes : fill) held.push_back(hm::Allocate(a, bytes));
  hm::Counts c = hm::CountsOf(a);
  if (c.chunks != 1 || c.blocks != 5) {
    why = "1 MiB + 512 + 256 + 2 x 128 KiB took " + std::to_string(c.chunks) +
          " chunks (" + std::to_string(c.blocks) + " blocks), not 1 (5)";
  }
  for (void* p : held) hm::Free(a, p);
  held.clear();
  // Merged back: 32 blocks of 64 KiB, then 2 of 1 MiB, each fit one chunk.
  for (int i = 0; i < 32 && why.empty(); ++i)
    held.push_back(hm::Allocate(a, 64 * kKiB));
  c = hm::CountsOf(a);
  if (why.empty() && c.chunks != 1)
    why = "32 x 64 KiB took " + std::to_string(c.chunks) + " chunks, not 1";
  for (void* p : held) hm::Free(a, p);
  held.clear();
  held.push_back(hm::Allocate(a, 1024 * kKiB));
  held.push_back(hm::Allocate(a, 1024 * kKiB));
  c = hm::CountsOf(a);
  if (why.empty() && c.chunks != 1) {
    why = "after the 64 KiB blocks were freed, 2 x 1 MiB took " +
          std::to_string(c.chunks) + " chunks, not 1 (buddies not merged)";
  }
  held.push_back(hm::Allocate(a, 64 * kKiB));
  c = hm::CountsOf(a);
  if (why.empty() && c.chunks != 2)
    why = "a full chunk's next block did not take a second chunk";
  for (void* p : held) hm::Free(a, p);
  hm::DeleteAllocator(a);
  Report(why.empty(), "blocks of different sizes share chunks and merge", why);
}

// Sizes below 64 KiB and above 1 MiB, and every size without huge pages,
// come from the C library: no chunk is used for them.
void OtherSizesUseNoChunk() {
  std::string why;
  for (bool huge : {true, false}) {
    hm::Allocator* a = hm::NewAllocator(huge);
    std::vector<void*> held;
    for (size_t bytes : {size_t{0}, size_t{64}, 64 * kKiB - 1,
                         1024 * kKiB + 1, 4096 * kKiB}) {
      held.push_back(hm::Allocate(a, bytes));
    }
    if (!huge) {
      for (size_t bytes : {64 * kKiB, 128 * kKiB, 1024 * kKiB})
        held.push_back(hm::Allocate(a, bytes));
    }
    for (void* p : held) {
      if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 64 != 0)
        why = "a buffer was NULL or not 64-byte aligned";
    }
    const hm::Counts c = hm::CountsOf(a);
    if (why.empty() && (c.chunks != 0 || c.blocks != 0)) {
      why = std::string(huge ? "with" : "without") + " huge pages, " +
            std::to_string(c.blocks) + " buffers came from chunks";
    }
    for (void* p : held) hm::Free(a, p);
    hm::DeleteAllocator(a);
  }
  Report(why.empty(), "other sizes, and all without huge pages, use no chunk",
         why);
}

// What /proc/self/smaps says of the mapping that holds `p`: its kilobytes
// on huge pages (AnonHugePages; -1 when not found) and whether it is
// marked for them (VmFlags "hg", MADV_HUGEPAGE).
struct MappingPages {
  long huge_kib = -1;
  bool advised = false;
};
MappingPages PagesAt(const void* p) {
  MappingPages m;
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return m;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool inside = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
        std::strchr(line, '-') < std::strchr(line, ' ')) {
      if (inside) break;  // past the mapping
      inside = lo <= at && at < hi;
      continue;
    }
    if (!inside) continue;
    long v = 0;
    if (std::sscanf(line, "AnonHugePages: %ld kB", &v) == 1) m.huge_kib = v;
    if (std::strncmp(line, "VmFlags:", 8) == 0) {
      m.advised = std::strstr(line, " hg") != nullptr;
    }
  }
  std::fclose(f);
  return m;
}

// Where this process uses huge pages, a block the plugin hands out lies in
// a mapping marked for them and, once touched, on one: the mechanism
// works, not only the bookkeeping.  A marked mapping the kernel left on
// small pages (no free 2 MiB of memory) is its choice, reported as such.
void ProcessBlocksLieOnHugePages() {
  const char* name = "the process's blocks lie on huge pages";
  if (!weft_cpu::HostHugePages()) {
    Skip(name,
         "this process does not use huge pages (the kernel's "
         "transparent_hugepage setting is never, a sanitizer build, or "
         "WEFT_CPU_HUGE_PAGES=0)");
    return;
  }
  void* p = weft_cpu::AllocateHost(1024 * kKiB);
  if (p == nullptr) {
    Report(false, name, "allocating 1 MiB failed");
    return;
  }
  std::memset(p, 1, 1024 * kKiB);
  const MappingPages m = PagesAt(p);
  weft_cpu::FreeHost(p);
  if (!m.advised) {
    Report(false, name,
           "the mapping holding the block is not marked MADV_HUGEPAGE "
           "(smaps VmFlags has no hg)");
  } else if (m.huge_kib < 2048) {
    Skip(name, "the mapping is marked MADV_HUGEPAGE but the kernel gave it " +
                   std::to_string(m.huge_kib) +
                   " KiB of huge pages (no free 2 MiB of memory?)");
  } else {
    Report(true, name, "");
  }
}

// Scratch: a kept buffer per thread and slot, and a fresh one beyond
// kKeepBytes; slots alive at once do not share memory.
void ScratchSlotsAreSeparate() {
  std::string why;
  {
    weft_cpu::Scratch a(300 * kKiB, weft_cpu::Scratch::kPrimitive);
    weft_cpu::Scratch b(300 * kKiB, weft_cpu::Scratch::kProduct);
    weft_cpu::Scratch c(300 * kKiB);
    if (a.data() == b.data() || a.data() == c.data() || b.data() == c.data())
      why = "two slots alive at once share a buffer";
    std::memset(a.data(), 1, 300 * kKiB);
    std::memset(b.data(), 2, 300 * kKiB);
    std::memset(c.data(), 3, 300 * kKiB);
  }
  void* first = nullptr;
  {
    weft_cpu::Scratch a(200 * kKiB, weft_cpu::Scratch::kPrimitive);
    first = a.data();
  }
  {
    weft_cpu::Scratch a(100 * kKiB, weft_cpu::Scratch::kPrimitive);
    if (why.empty() && a.data() != first)
      why = "a smaller request on the same slot got a new buffer";
  }
  {
    weft_cpu::Scratch big(weft_cpu::Scratch::kKeepBytes + 64,
                          weft_cpu::Scratch::kPrimitive);
    if (why.empty() && big.data() == first)
      why = "a request beyond kKeepBytes reused the kept buffer";
    static_cast<char*>(big.data())[weft_cpu::Scratch::kKeepBytes] = 1;
  }
  Report(why.empty(), "scratch slots are kept and separate", why);
}

}  // namespace

int main() {
  std::printf("1..5\n");
  RandomBlocksAreDisjoint();
  BuddiesShareAndMerge();
  OtherSizesUseNoChunk();
  ProcessBlocksLieOnHugePages();
  ScratchSlotsAreSeparate();
  return tap::g_failed == 0 ? 0 : 1;
}
