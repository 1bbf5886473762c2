// How many threads a kernel may use, when the session leaves the choice to
// the runtime (intra_op_threads = 0, the default): chosen per plan by
// timing its runs.
//
// Why measure instead of taking the core count: on a machine another
// process keeps busy, a kernel split over every core waits at each join for
// the thread the scheduler put off the CPU, and a training step of many
// short parallel regions can then run slower with 2 threads than with 1
// (measured on the 2-core CI machines: the MLP step 10 % slower, the CNN
// step 7 %).  That was oneDNN's static OpenMP split.  Since stop 34 the
// CPU plugin splits its large products, convolutions and loops on a pool
// of its own (plugins/cpu/work_pool.h) whose caller takes over the chunks
// no worker has started and which runs them all on the caller when the
// machine has no CPU to spare, so 2 threads under load cost little (2-4 %
// on the MLP step); other plugins, and the CPU plugin's remaining OpenMP
// users (batched products, pooling of a single image), still split
// statically.  So the session tries the alternatives on the plan's own
// runs and keeps the faster, and keeps checking, since the machine's load
// changes.
//
// The tuner alternates, for kProbeRuns runs each, the current count and one
// alternative (half of it, or twice it up to the session's maximum, in
// turn), compares the medians and switches when the alternative is at
// least kSwitchMargin faster.  Then it exploits for a stretch of runs that
// doubles (up to kMaxExploit) each time the choice holds, and probes again.
// Runs shorter than kMinRunSeconds are not timed: their kernels are too
// small to split, so the count changes nothing.  A pinned count (the
// session option set to N) is used as it is: results then never depend on
// a choice made at run time (reductions split differently round
// differently).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace weft {

class ThreadTuner {
 public:
  static constexpr int kProbeRuns = 5;
  static constexpr double kSwitchMargin = 0.03;
  static constexpr int kMinExploit = 32;
  static constexpr int kMaxExploit = 1024;
  static constexpr double kMinRunSeconds = 50e-6;

  // The count for the next run, at most `max_threads`.  `*timed`: whether
  // the tuner wants the run's time (Report); a run of an exploit stretch
  // is only counted, here, without a lock or a locked instruction, and
  // without the two clock reads.
  int32_t Choose(int32_t max_threads, bool* timed);
  // How long a run with `threads` took (successful runs only, and only
  // those Choose asked to time).
  void Report(int32_t threads, double seconds);
  // The count runs use between probes (for run metadata and tests).
  int32_t Current() const;

 private:
  enum class Phase { kWarmUp, kProbe, kExploit };
  void StartProbe();  // under mu_
  void Decide();      // under mu_
  void Exploit(int32_t runs);  // under mu_: a stretch of `runs` quiet runs

  mutable std::mutex mu_;
  int32_t max_ = 0;
  int32_t current_ = 0;
  int32_t alternative_ = 0;
  bool probe_down_ = true;  // which way the next probe looks
  Phase phase_ = Phase::kWarmUp;
  int32_t warm_left_ = 2;  // the first runs page in memory: not timed
  int32_t next_is_alternative_ = 0;
  std::vector<double> current_times_, alternative_times_;
  int32_t exploit_length_ = kMinExploit;
  // The exploit stretch's runs left, the count they use and the cap it was
  // chosen under: read by Choose without the lock.  `quiet_` is stored
  // last (release), after the other two.
  std::atomic<int32_t> quiet_{0};
  std::atomic<int32_t> quiet_threads_{0};
  std::atomic<int32_t> quiet_max_{0};
};

}  // namespace weft
