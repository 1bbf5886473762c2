// Host memory for the CPU device's buffers and the matrix products'
// scratch.
//
// Buffers of 64 KiB .. 1 MiB lie on transparent huge pages where the kernel
// offers them (its setting "madvise" or "always"): blocks of a buddy
// allocator over 2 MiB-aligned chunks marked MADV_HUGEPAGE.  Measured on a
// 2-core EPYC (family 23, AVX2) in a VM: oneDNN's gemm:jit on the MLP's
// operands took 1.41 ms on small pages against 1.10 on huge pages, the
// training step 2.65 - 2.84 ms against 2.43 - 2.49 (bench/train_mlp 1,
// WEFT_CPU_HUGE_PAGES=0 and 1); TLB misses in its panel walks, with the
// VM's nested page tables behind each, are the likely cost.  Convolution
// and pooling ran no faster on them, so the kernels' other scratch stays
// on small pages (a CNN process held 2.7 MiB more at its peak otherwise).
// Where huge pages are off (the kernel's "never", madvise refusing,
// WEFT_CPU_HUGE_PAGES=0, or a sanitizer build, whose checks need malloc's
// redzones) every buffer comes from aligned_alloc: 2 MiB-aligned buffers on
// small pages are the worst placement of all (the same product took 2.7
// ms there), so the chunks are never used without huge pages.
#ifndef WEFT_PLUGINS_CPU_HOST_MEMORY_H_
#define WEFT_PLUGINS_CPU_HOST_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <new>

namespace weft_cpu {

// 64-byte aligned memory of at least `bytes` (0 counts as 1); nullptr when
// out of memory.  Freed with FreeHost, from any thread.
void* AllocateHost(size_t bytes);
void FreeHost(void* p);

// Whether AllocateHost puts large buffers on huge pages in this process.
bool HostHugePages();

// Temporary memory for one kernel call, 64-byte aligned: on huge pages as
// AllocateHost's buffers except in slot kKernel (convolution, pooling).  Requests up to
// kKeepBytes reuse a buffer the calling thread keeps per slot, so that a
// steady-state run allocates nothing; larger ones are allocated and freed
// with the Scratch, so that one huge layer does not pin its memory in every
// executor thread forever.  Scratches alive at once on one thread take
// different slots (a second one on the same slot would share the buffer).
class Scratch {
 public:
  enum Slot { kKernel, kPrimitive, kCompactOperand, kProduct, kSlots };
  static constexpr size_t kKeepBytes = size_t{32} << 20;

  explicit Scratch(size_t bytes, Slot slot = kKernel);
  ~Scratch() {
    if (owned_) FreeHost(data_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  bool owned_ = false;
};

namespace host_memory_testing {

// For tests: an allocator with huge pages forced on or off, whatever the
// process chose, with the counts the tests check.
struct Counts {
  size_t chunks = 0;  // 2 MiB chunks in use (the spare not counted)
  size_t blocks = 0;  // buffers handed out from them
};
class Allocator;
Allocator* NewAllocator(bool huge_pages);
void DeleteAllocator(Allocator* a);
void* Allocate(Allocator* a, size_t bytes);
void Free(Allocator* a, void* p);
Counts CountsOf(Allocator* a);

}  // namespace host_memory_testing

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_HOST_MEMORY_H_
