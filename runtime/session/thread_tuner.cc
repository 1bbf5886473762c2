#include "session/thread_tuner.h"

#include <algorithm>

namespace weft {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int32_t ThreadTuner::Choose(int32_t max_threads, bool* timed) {
  // The stretch is counted down with a plain load and store, not a locked
  // read-modify-write (~20 cycles on the EPYC family 23, every run):
  // overlapping runs of the plan may lose a count (the stretch runs a
  // little longer) or, storing late, shorten a stretch Exploit has just
  // begun (the next probe comes sooner).  Either only moves when the
  // tuner looks again.
  const int32_t left = quiet_.load(std::memory_order_acquire);
  if (left > 0) {
    quiet_.store(left - 1, std::memory_order_relaxed);
    if (quiet_max_.load(std::memory_order_relaxed) == max_threads) {
      *timed = false;
      return quiet_threads_.load(std::memory_order_relaxed);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (max_threads != max_) {  // first run, or a session with another cap
    max_ = max_threads;
    current_ = max_threads;
    phase_ = Phase::kWarmUp;
    warm_left_ = 2;
    exploit_length_ = kMinExploit;
    quiet_.store(0, std::memory_order_relaxed);
  }
  // One count only: nothing to compare, ever.
  if (max_ <= 1) Exploit(kMaxExploit);
  // An exploit stretch whose runs Choose has all counted: probe again.
  else if (phase_ == Phase::kExploit &&
           quiet_.load(std::memory_order_relaxed) <= 0)
    StartProbe();
  *timed = phase_ != Phase::kExploit;
  if (max_ <= 1 || phase_ != Phase::kProbe) return current_;
  // Alternate, so that a change in the machine's load hits both alike.
  return next_is_alternative_ ? alternative_ : current_;
}

void ThreadTuner::Report(int32_t threads, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_ <= 1) return;
  switch (phase_) {
    case Phase::kWarmUp:
      if (--warm_left_ <= 0) StartProbe();
      return;
    case Phase::kExploit:  // Choose counts these runs
      return;
    case Phase::kProbe:
      break;
  }
  if (seconds < kMinRunSeconds) {
    // Too short for threads to matter: stay as we are for a while.
    Exploit(kMaxExploit);
    return;
  }
  // Runs of this plan may overlap; each reports the count it ran with.
  if (threads == alternative_) {
    if (alternative_times_.size() < kProbeRuns)
      alternative_times_.push_back(seconds);
  } else if (threads == current_) {
    if (current_times_.size() < kProbeRuns) current_times_.push_back(seconds);
  }
  next_is_alternative_ =
      alternative_times_.size() < current_times_.size() ? 1 : 0;
  if (current_times_.size() >= kProbeRuns &&
      alternative_times_.size() >= kProbeRuns)
    Decide();
}

int32_t ThreadTuner::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

void ThreadTuner::StartProbe() {
  // Half the current count, or twice it, in turn (only one way at the ends).
  const int32_t down = std::max(1, current_ / 2);
  const int32_t up = std::min(max_, current_ * 2);
  if (down == current_) probe_down_ = false;
  if (up == current_) probe_down_ = true;
  alternative_ = probe_down_ ? down : up;
  probe_down_ = !probe_down_;
  if (alternative_ == current_) {  // max_ == 1: nothing to compare
    Exploit(kMaxExploit);
    return;
  }
  phase_ = Phase::kProbe;
  current_times_.clear();
  alternative_times_.clear();
  next_is_alternative_ = 0;
}

void ThreadTuner::Decide() {
  const double keep = Median(current_times_);
  const double other = Median(alternative_times_);
  if (other < keep * (1.0 - kSwitchMargin)) {
    current_ = alternative_;
    exploit_length_ = kMinExploit;  // a change: look again soon
  } else {
    exploit_length_ = std::min(kMaxExploit, exploit_length_ * 2);
  }
  Exploit(exploit_length_);
}

void ThreadTuner::Exploit(int32_t runs) {
  phase_ = Phase::kExploit;
  quiet_threads_.store(current_, std::memory_order_relaxed);
  quiet_max_.store(max_, std::memory_order_relaxed);
  quiet_.store(runs, std::memory_order_release);
}

}  // namespace weft
