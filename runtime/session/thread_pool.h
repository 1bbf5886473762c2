// The inter-op thread pool: runs independent nodes at once.  Deliberately
// simple (one locked queue): the executor keeps chains on the thread that
// made them ready, so the queue only sees genuine parallelism.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "weft/status.h"

namespace weft {

class ThreadPool {
 public:
  // Starts `threads` workers.  When the system cannot start one, the
  // workers already started are stopped and joined, and the status is
  // RESOURCE_EXHAUSTED, naming `what` (the option that asked for them).
  static weft_status* Create(int threads, const char* what,
                             std::unique_ptr<ThreadPool>* out);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> task);
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  ThreadPool() = default;
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace weft
