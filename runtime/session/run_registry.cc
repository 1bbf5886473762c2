// The session's runs in flight: listed while they execute so that a
// cancellation (weft_session_cancel, a deadline, a peer's failure) can
// reach every one of them, and the canceller a caller attaches to one run.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "session/executor.h"
#include "session/run.h"

namespace weft {

namespace {

// What a canceller leaves in a run's entry of run_slots while it reaches
// the run: the run waits for its entry back before it leaves.
exec::Run* const kRunHeld = reinterpret_cast<exec::Run*>(uintptr_t{1});

}  // namespace

std::atomic<exec::Run*>* ListRun(weft_session* session, exec::Run* run) {
  for (std::atomic<exec::Run*>& slot : session->run_slots) {
    exec::Run* none = nullptr;
    if (slot.load(std::memory_order_relaxed) == nullptr &&
        slot.compare_exchange_strong(none, run, std::memory_order_acq_rel))
      return &slot;
  }
  std::lock_guard<std::mutex> lock(session->runs_mu);
  session->runs.push_back(run);
  return nullptr;
}

void UnlistRun(weft_session* session, std::atomic<exec::Run*>* slot,
               exec::Run* run) {
  if (slot != nullptr) {
    exec::Run* expected = run;
    while (!slot->compare_exchange_weak(expected, nullptr,
                                        std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
      // A canceller holds the entry (kRunHeld) for the moment it takes to
      // cancel this run.
      expected = run;
      std::this_thread::yield();
    }
    return;
  }
  std::lock_guard<std::mutex> lock(session->runs_mu);
  std::vector<exec::Run*>& runs = session->runs;
  *std::find(runs.begin(), runs.end(), run) = runs.back();
  runs.pop_back();
}

int32_t CancelRuns(weft_session* session, const weft_status* why,
                   const void* group) {
  // One canceller at a time: an entry is held by one thread only.
  std::lock_guard<std::mutex> lock(session->runs_mu);
  int32_t n = 0;
  auto cancel = [&](exec::Run* run) {
    if (group != nullptr && run->group() != group) return;
    run->Cancel(Error(weft_status_code(why), weft_status_message(why)));
    n++;
  };
  for (std::atomic<exec::Run*>& slot : session->run_slots) {
    exec::Run* run = slot.load(std::memory_order_acquire);
    while (run != nullptr &&
           !slot.compare_exchange_weak(run, kRunHeld,
                                       std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
    }
    if (run == nullptr) continue;
    cancel(run);
    slot.store(run, std::memory_order_release);
  }
  for (exec::Run* run : session->runs) cancel(run);
  return n;
}

RunCanceller::~RunCanceller() { weft_status_destroy(why_); }

void RunCanceller::Cancel(const weft_status* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (why_ != nullptr) return;
  why_ = Error(weft_status_code(why), weft_status_message(why));
  if (run_ != nullptr)
    run_->Cancel(Error(weft_status_code(why), weft_status_message(why)));
}

void RunCanceller::Attach(exec::Run* run) {
  std::lock_guard<std::mutex> lock(mu_);
  run_ = run;
  if (why_ != nullptr)
    run->Cancel(Error(weft_status_code(why_), weft_status_message(why_)));
}

void RunCanceller::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  run_ = nullptr;
}

}  // namespace weft
