#include "session/thread_pool.h"

#include <system_error>

#include "base/status.h"

namespace weft {

weft_status* ThreadPool::Create(int threads, const char* what,
                                std::unique_ptr<ThreadPool>* out) {
  // Owned from the start, so that any failure below runs the destructor,
  // which joins the workers already started: a joinable std::thread
  // destroyed unjoined would terminate the process.
  std::unique_ptr<ThreadPool> pool(new ThreadPool);
  pool->workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    try {
      pool->workers_.emplace_back([p = pool.get()] { p->Work(); });
    } catch (const std::system_error& e) {
      return Errorf(WEFT_RESOURCE_EXHAUSTED,
                    "%s: cannot start thread %d of %d: %s", what, i + 1,
                    threads, e.what());
    }
  }
  *out = std::move(pool);
  return nullptr;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace weft
