// The CPU plugin's WorkPool (plugins/cpu/work_pool.h), header-only, tested
// directly: every chunk runs exactly once whoever claims it, competing and
// nested callers, exceptions, and workers that really take chunks.  Plain
// C++ with TAP output (no Criterion), so that it also runs under
// ThreadSanitizer (`./scripts/tsan.sh`), where Criterion cannot start.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tap.h"
#include "work_pool.h"

using weft_cpu::WorkPool;

namespace {

using tap::Report;
using tap::Skip;

// Runs `chunks` chunks on `pool`, each adding 1 to its own counter, and
// says which counter is not 1 afterwards ("" when all are).
std::string CountOnce(WorkPool& pool, int64_t chunks) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(chunks));
  for (auto& h : hits) h.store(0);
  pool.Run(chunks, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
  for (int64_t i = 0; i < chunks; ++i) {
    const int got = hits[static_cast<size_t>(i)].load();
    if (got != 1) {
      return "chunk " + std::to_string(i) + " of " + std::to_string(chunks) +
             " ran " + std::to_string(got) + " times";
    }
  }
  return "";
}

void EveryChunkRunsOnce() {
  std::string why;
  for (int threads = 2; threads <= 4 && why.empty(); ++threads) {
    WorkPool* pool = WorkPool::For(threads);
    pool->IgnoreLoad(true);
    for (int64_t chunks : {1, 2, 3, 4, 5, 7, 31, 32, 33, 64, 1000}) {
      for (int round = 0; round < 200 && why.empty(); ++round)
        why = CountOnce(*pool, chunks);
    }
  }
  Report(why.empty(), "every chunk runs exactly once (2-4 threads, 1-1000 "
                      "chunks, 200 rounds each)", why);
}

void CompetingCallers() {
  WorkPool* pool = WorkPool::For(2);
  pool->IgnoreLoad(true);
  std::atomic<bool> bad{false};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 500; ++round) {
        if (!CountOnce(*pool, 1 + (round + c) % 9).empty()) bad = true;
      }
    });
  }
  for (auto& t : callers) t.join();
  Report(!bad, "four callers at once on one pool", "a chunk ran twice or never");
}

void NestedRun() {
  WorkPool* pool = WorkPool::For(2);
  pool->IgnoreLoad(true);
  std::atomic<int> inner{0};
  pool->Run(4, [&](int64_t) {
    pool->Run(3, [&](int64_t) { inner++; });
  });
  Report(inner.load() == 12, "a chunk that runs the pool again",
         "inner chunks ran " + std::to_string(inner.load()) + " times, not 12");
}

void ExceptionReachesCaller() {
  WorkPool* pool = WorkPool::For(3);
  pool->IgnoreLoad(true);
  std::string message;
  try {
    pool->Run(16, [](int64_t i) {
      if (i == 5) throw std::runtime_error("chunk five failed");
    });
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  const std::string after = CountOnce(*pool, 16);
  Report(message == "chunk five failed" && after.empty(),
         "an exception in a chunk reaches the caller; the pool goes on",
         "caught '" + message + "', then: " + after);
}

void WorkersTakeChunks() {
  WorkPool* pool = WorkPool::For(2);
  pool->IgnoreLoad(true);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  for (int round = 0; round < 50 && elsewhere.load() == 0; ++round) {
    pool->Run(4, [&](int64_t) {
      if (std::this_thread::get_id() != caller) elsewhere++;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  Report(elsewhere.load() > 0, "a worker takes chunks the caller has not",
         "the caller ran every chunk of 50 rounds");
}

void LoadCheckKeepsResults() {
  // With the load check on, the caller may run every chunk itself; the
  // chunks, and so what they compute, stay the same.
  WorkPool* pool = WorkPool::For(3);
  pool->IgnoreLoad(false);
  std::string why;
  for (int round = 0; round < 100 && why.empty(); ++round)
    why = CountOnce(*pool, 10);
  pool->IgnoreLoad(true);
  Report(why.empty(), "with the machine's load checked", why);
}

// Workers that finish late (a vCPU the host gave to another guest, which
// /proc/loadavg does not show) make the pool run alone for a while, then
// share again; every chunk still runs once.  The workers' chunks sleep
// 3 ms, the caller's take 0.2 ms.  A pool of its own (5 threads): the
// other tests' pools share whatever happens (IgnoreLoad).
void LateWorkersMakeThePoolRunAlone() {
  auto gain = [](double own, int64_t own_chunks, int64_t chunks,
                 double waited) {
    return WorkPool::SharedRunGain(own, own_chunks, chunks, waited);
  };
  const bool rule = std::fabs(gain(100e-6, 1, 2, 10e-6) - 90e-6) < 1e-12 &&
                    std::fabs(gain(300e-6, 3, 4, 0) - 100e-6) < 1e-12 &&
                    std::fabs(gain(1e-3, 1, 2, 3e-3) + 2e-3) < 1e-12;
  Report(rule, "what a shared run saves: the workers' chunks at the "
               "caller's pace, less its wait",
         "WorkPool::SharedRunGain disagrees");
  WorkPool* pool = WorkPool::For(5);
  pool->IgnoreLoad(false);
  pool->IgnoreLoadCount(true);
  const bool lagging_before = pool->Lagging();
  const std::thread::id caller = std::this_thread::get_id();
  auto chunk = [&](int64_t) {
    const auto start = std::chrono::steady_clock::now();
    if (std::this_thread::get_id() != caller) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      return true;
    }
    while (std::chrono::steady_clock::now() - start <
           std::chrono::microseconds(200)) {
    }
    return false;
  };
  int shared = 0;
  bool lagging = false;
  std::string why;
  for (int round = 0; round < 40 && why.empty() && !lagging; ++round) {
    std::atomic<int> hits[2] = {{0}, {0}};
    std::atomic<bool> elsewhere{false};
    pool->Run(2, [&](int64_t i) {
      hits[i]++;
      if (chunk(i)) elsewhere = true;
    });
    if (hits[0] != 1 || hits[1] != 1) why = "a chunk ran twice or never";
    if (elsewhere) ++shared;
    lagging = pool->Lagging();
  }
  // While it lags, the caller runs every chunk (checked only where the lag
  // outlasted the run: a caller put off its CPU for 50 ms sees it end).
  const bool alone = pool->RunsAlone();
  std::atomic<int> away{0};
  pool->Run(6, [&](int64_t) {
    if (std::this_thread::get_id() != caller) away++;
  });
  const bool held = pool->Lagging();
  // The first lag lasts kLagSeconds.
  std::this_thread::sleep_for(std::chrono::duration<double>(
      2 * WorkPool::kLagSeconds));
  const bool lagging_after = pool->Lagging();
  const std::string after = CountOnce(*pool, 7);
  pool->IgnoreLoadCount(false);
  if (!why.empty() || !after.empty()) {
    Report(false, "late workers: every chunk runs once", why + after);
  } else if (shared == 0) {
    Skip("late workers make the pool run alone",
         "the workers took no chunk in 40 runs (a loaded machine)");
  } else {
    Report(!lagging_before && lagging && (!held || (alone && away == 0)) &&
               !lagging_after,
           "late workers make the pool run alone, then share again",
           "lagging before " + std::to_string(lagging_before) +
               ", after " + std::to_string(shared) + " late runs " +
               std::to_string(lagging) + " (alone " + std::to_string(alone) +
               ", chunks elsewhere " + std::to_string(away.load()) +
               "), after the lag " + std::to_string(lagging_after));
  }
}

}  // namespace

int main() {
  std::printf("1..8\n");
  EveryChunkRunsOnce();
  CompetingCallers();
  NestedRun();
  ExceptionReachesCaller();
  WorkersTakeChunks();
  LoadCheckKeepsResults();
  LateWorkersMakeThePoolRunAlone();
  return tap::g_failed == 0 ? 0 : 1;
}
