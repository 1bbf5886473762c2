// Queue runners (weft_queue_runner_*): threads that run an enqueue op in a
// loop.  Their runs form one group of the session's runs, so stopping the
// runner cancels exactly them (a thread whose enqueue waits for room, or
// whose input stage waits on another queue, ends at once) and nothing the
// consumers run.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "session/executor.h"
#include "session/session.h"
#include "weft/session.h"

struct weft_queue_runner {
  weft_session* session = nullptr;
  weft_node* enqueue = nullptr;
  weft_node* close = nullptr;
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  weft_status* error = nullptr;  // the first, under mu
  int32_t running = 0;           // threads still looping, under mu
};

namespace weft {
namespace {

weft_status* RunTarget(weft_queue_runner* r, weft_node* node) {
  RunControl control;
  control.group = r;
  return RunSession(r->session, control, nullptr, nullptr, 0, nullptr, 0,
                    &node, 1, nullptr, nullptr);
}

void Loop(weft_queue_runner* r) {
  weft_status* st = nullptr;
  while (!r->stopping.load(std::memory_order_acquire)) {
    st = RunTarget(r, r->enqueue);
    if (st != nullptr) break;
  }
  const weft_code code = st != nullptr ? weft_status_code(st) : WEFT_OK;
  const bool quiet = st == nullptr || code == WEFT_OUT_OF_RANGE ||
                     code == WEFT_CANCELLED;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    if (!quiet && !r->stopping.load() && r->error == nullptr) {
      r->error = st;
      st = nullptr;
    }
    last = --r->running == 0;
  }
  weft_status_destroy(st);
  // A failure stops the others (their runs are cancelled); the queue is
  // closed once, by the thread that ends last or the one that failed, so
  // consumers drain it and then see OUT_OF_RANGE.
  if (!quiet && !r->stopping.exchange(true)) {
    weft_status* why = Error(WEFT_CANCELLED, "a queue runner thread failed");
    CancelRuns(r->session, why, r);
    weft_status_destroy(why);
  }
  if ((last || !quiet) && r->close != nullptr) {
    RunControl control;  // not in the group: the stop must not cancel it
    weft_node* close = r->close;
    weft_status_destroy(RunSession(r->session, control, nullptr, nullptr, 0,
                                   nullptr, 0, &close, 1, nullptr, nullptr));
  }
}

}  // namespace
}  // namespace weft

extern "C" {

weft_status* weft_queue_runner_start(weft_session* session,
                                     weft_node* enqueue, int32_t num_threads,
                                     weft_node* close,
                                     weft_queue_runner** out_runner) {
  using weft::Error;
  using weft::Errorf;
  if (out_runner == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "out_runner is NULL");
  *out_runner = nullptr;
  if (session == nullptr || enqueue == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "session or enqueue is NULL");
  if (num_threads < 1 || num_threads > 64)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "num_threads is %d: a queue runner has 1 to 64 threads",
                  num_threads);
  if (!session->graph->Owns(enqueue) ||
      (close != nullptr && !session->graph->Owns(close)))
    return Error(WEFT_INVALID_ARGUMENT,
                 "enqueue and close must be nodes of the session's graph");
  return weft::Guard([&]() -> weft_status* {
    auto r = std::make_unique<weft_queue_runner>();
    r->session = session;
    r->enqueue = enqueue;
    r->close = close;
    r->running = num_threads;
    for (int32_t i = 0; i < num_threads; ++i) {
      try {
        r->threads.emplace_back(weft::Loop, r.get());
      } catch (const std::system_error& e) {
        // Threads already started stop before the error returns.
        r->stopping.store(true);
        {
          std::lock_guard<std::mutex> lock(r->mu);
          r->running -= num_threads - i;
        }
        weft_status* why = Error(WEFT_CANCELLED, "queue runner start failed");
        weft::CancelRuns(session, why, r.get());
        weft_status_destroy(why);
        for (std::thread& t : r->threads) t.join();
        weft_status_destroy(r->error);
        return Errorf(WEFT_RESOURCE_EXHAUSTED,
                      "could not start queue runner thread %d: %s", i,
                      e.what());
      }
    }
    *out_runner = r.release();
    return nullptr;
  });
}

weft_status* weft_queue_runner_error(weft_queue_runner* runner) {
  if (runner == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "runner is NULL");
  std::lock_guard<std::mutex> lock(runner->mu);
  if (runner->error == nullptr) return nullptr;
  return weft::Error(weft_status_code(runner->error),
                     weft_status_message(runner->error));
}

weft_status* weft_queue_runner_stop(weft_queue_runner* runner,
                                    weft_node* cancel) {
  if (runner == nullptr) return nullptr;
  runner->stopping.store(true, std::memory_order_release);
  weft_status* result = nullptr;
  if (cancel != nullptr) {
    weft::RunControl control;
    result = weft::RunSession(runner->session, control, nullptr, nullptr, 0,
                              nullptr, 0, &cancel, 1, nullptr, nullptr);
  }
  // Cancelled until every thread has seen the flag: one may be between
  // runs when the first cancel comes.
  weft_status* why =
      weft::Error(WEFT_CANCELLED, "the queue runner was stopped");
  for (;;) {
    weft::CancelRuns(runner->session, why, runner);
    {
      std::lock_guard<std::mutex> lock(runner->mu);
      if (runner->running == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  weft_status_destroy(why);
  for (std::thread& t : runner->threads) t.join();
  if (result == nullptr) result = std::exchange(runner->error, nullptr);
  weft_status_destroy(runner->error);
  delete runner;
  return result;
}

}  // extern "C"
