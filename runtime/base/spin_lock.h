// A lock for critical sections of a few dozen instructions (the device
// buffer cache's push and pop, taken for every kernel output): uncontended
// it costs one atomic exchange and one store, against a pthread mutex's two
// library calls.  Contended, it spins briefly and then yields the core, so
// a holder that was preempted gets to run.  Not for sections that block.
#pragma once

#include <sched.h>

#include <atomic>

namespace weft {

class SpinLock {
 public:
  void lock() {
    int spins = 0;
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) {
          sched_yield();
        } else {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        }
      }
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace weft
