// The CPU plugin's intra-op workers: a pool per thread count that runs a
// kernel's work as numbered chunks, the calling thread taking chunks too.
//
// Why a pool of our own rather than OpenMP's (oneDNN's, Debian's build) or
// Eigen's.  Measured on 2-core VMs (issue 12; README "Performance"):
//  * A parallel region whose workers sleep (passive waiting) waits tens of
//    microseconds for them to wake: the MLP step ran no faster at 2 threads
//    than at 1.  Workers that spin instead (libgomp's default, or
//    GOMP_SPINCOUNT) took it to 1.7x idle, but with another process busy on
//    one core the spinning worker took the CPU the step needed (0.66x), and
//    libgomp reads its spin policy once per process.
//  * A static split (OpenMP's, and oneDNN's inside a region) waits at the
//    join for a worker the scheduler put off the CPU: under load 2 threads
//    ran slower than 1.
// So here: (1) chunks are claimed one at a time from a shared counter and
// the caller claims them too, so it never waits for work nobody has started;
// (2) an idle worker spins for a bounded time (kSpinSeconds) before it
// sleeps, so back-to-back kernels find it awake; (3) both only while the
// machine has a CPU to spare for it: the runnable threads (/proc/loadavg's
// fourth field) plus the pool's sleeping workers must fit the online CPUs.
// When they do not, a worker sleeps at once instead of spinning, and the
// caller runs every chunk itself without waking anyone: a step then runs
// as on one thread, but for what splitting costs in itself (the MLP's row
// blocks read the weights once each), which the product kernel spares by
// running one whole primitive where it gives the chunks' very bits
// (RunsAlone; matmul_onednn.h, "One piece instead of blocks").
// The caller reads the count at most every 4 ms (kCheckSeconds), a worker
// once per idle period.  The chunks are the same either way, so are the
// results.
//
// A load the count cannot show: in a virtual machine the host may give a
// vCPU to another guest (steal), and on a 2-core Ice Lake guest a 2-thread
// MLP step then ran at 0.86 - 0.96x one thread with /proc/loadavg and
// `ps` idle (README, "Stop 50").  The caller sees it as a worker that
// finishes its chunks late.  It times its own chunks and its wait for the
// workers', and keeps what sharing saved (SharedRunGain: the workers'
// chunks at its own pace, less the wait and the cost of waking them) as a
// credit, capped at kMaxCredit.  When the losses exceed the credit by
// kMaxLoss (a time slice the host took, not chunks a little uneven),
// sharing no longer pays: the pool runs alone for kLagSeconds, doubled
// while the losses come back as soon as that ends (up to kMaxLagSeconds),
// and its workers sleep instead of spinning.  Measured on a 2-core Ice
// Lake guest, the MLP step paired 2 vs 1 threads (bench/train_mlp),
// alternating processes: with the workers held to 30 % of a CPU by a
// cgroup quota (which /proc/loadavg does not show either), 0.84 - 0.93x
// before in five runs (lower quartiles 0.60 - 0.71: a late run waits out
// the rest of the quota's 100 ms period) and 0.84 - 1.11x with the credit
// (lower quartiles 0.70 - 0.93); unthrottled, 1.26 - 1.36x before and
// 1.13 - 1.38x with it, the same within this host's noise (the CNN 1.51 -
// 1.66x and 1.52 - 1.71x).  A credit rather than lagging on any late run:
// that gave up 2 threads' gain on a host whose own contention came and
// went (1.03x against 1.26x) where sharing still paid on balance.
//
// Measured on a 2-core AMD EPYC, the MLP training step (bench/train_mlp):
// idle, 2 threads 1.6x one (OpenMP's passive waiting: 1.16x); with a busy
// process on one core, spinning regardless of the load or waking a worker
// for each kernel made 2 threads 0.92 - 0.98x one, because a worker that
// shares its core with the other process finishes its chunk late and the
// caller waits for it; with the caller doing it all, 0.96 - 1.03x in
// separate runs, and 0.985 - 0.992x measured paired (WEFT_BENCH_PAIRED,
// quartiles within 1 %; idle 1.65 - 1.67x): the 1 % was the blocks' own
// cost, which the products' one-piece primitives (same bits) now spare.  An
// involuntary-context-switch or off-CPU-gap trigger instead of the count
// fired on the idle machine too (kernel threads) and too rarely under load.
//
// Results never depend on which thread runs a chunk: every chunk computes its
// own outputs, so callers that split the same way get the same bits.
//
// Header-only: bench/ uses the very pool the kernels run on.  Each shared
// object that includes it gets its own pools (the plugin's symbols are
// hidden).  Pools live until the process exits.
#ifndef WEFT_PLUGINS_CPU_WORK_POOL_H_
#define WEFT_PLUGINS_CPU_WORK_POOL_H_

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace weft_cpu {

class WorkPool {
 public:
  // How long an idle worker spins before it sleeps: longer than the gap
  // between two kernels of a training step (a few to tens of
  // microseconds), short enough that a worker with nothing to do gives its
  // CPU back within a fraction of a millisecond.
  static constexpr double kSpinSeconds = 150e-6;
  // How often the caller looks at the machine's load: a read of
  // /proc/loadavg takes ~2 us (0.2 % of a step's time once a millisecond),
  // and a load that comes or goes is seen within a few steps of the MLP.
  static constexpr double kCheckSeconds = 4e-3;
  // The most chunks one Run hands out (state_'s 16-bit fields).
  static constexpr int64_t kMaxChunks = 0xffff;
  // Chunks offered first to one thread each (home_'s low 32 bits).
  static constexpr int64_t kMaxHomes = 32;
  // Pools for up to this many threads (more are capped).
  static constexpr int kMaxThreads = 256;
  // Late workers (the introduction): the most credit sharing keeps, in
  // seconds (a new contention then costs at most this much, and kMaxLoss,
  // before the pool runs alone), the loss beyond the credit that starts a
  // lag, and how long the pool then runs alone at first and at most.
  static constexpr double kMaxCredit = 10e-3;
  static constexpr double kMaxLoss = 0.5e-3;
  static constexpr double kLagSeconds = 0.05;
  static constexpr double kMaxLagSeconds = 2.0;

  // What a run the caller and the workers shared saved against the caller
  // running every chunk, in seconds: the workers' chunks at the caller's
  // pace (`own_seconds` for its `own_chunks` of `chunks`; 0 < own_chunks <
  // chunks), less its wait for them.  Negative when they finished later
  // than the caller could have run their chunks itself.
  static double SharedRunGain(double own_seconds, int64_t own_chunks,
                              int64_t chunks, double waited) {
    return own_seconds * static_cast<double>(chunks - own_chunks) /
               static_cast<double>(own_chunks) -
           waited;
  }

  // The pool for `threads` threads in all (the caller and threads - 1
  // workers), created on first use; NULL for threads <= 1.  May throw
  // std::bad_alloc or std::system_error.
  static WorkPool* For(int threads) {
    if (threads <= 1) return nullptr;
    if (threads > kMaxThreads) threads = kMaxThreads;
    std::atomic<WorkPool*>& slot = Slots()[threads];
    if (WorkPool* pool = slot.load(std::memory_order_acquire)) return pool;
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    if (WorkPool* pool = slot.load(std::memory_order_relaxed)) return pool;
    auto* pool = new WorkPool(threads);
    slot.store(pool, std::memory_order_release);
    return pool;
  }

  // Runs fn(i) for every i in [0, chunks) and returns when all have run.
  // Chunks run in any order on any of the pool's threads, the caller's
  // included.  When the pool is already running another caller's chunks,
  // or the caller is one of a pool's workers, or the machine has no CPU to
  // spare, or the workers have been late (the introduction), the caller
  // runs them all itself (no nested or competing teams on the same cores),
  // as it does for more than kMaxChunks chunks.  The first exception a
  // chunk throws is rethrown here once every chunk has finished or been
  // skipped; chunks not yet started when it was thrown are skipped.
  template <typename Fn>
  void Run(int64_t chunks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    if (chunks <= 0) return;
    if (chunks == 1 || chunks > kMaxChunks || InWorker() ||
        Contended() || busy_.exchange(true, std::memory_order_acquire)) {
      for (int64_t i = 0; i < chunks; ++i) fn(i);
      return;
    }
    struct Release {
      WorkPool* pool;
      ~Release() { pool->busy_.store(false, std::memory_order_release); }
    } release{this};
    fn_.store(const_cast<void*>(static_cast<const void*>(&fn)),
              std::memory_order_relaxed);
    invoke_.store([](void* f, int64_t i) { (*static_cast<F*>(f))(i); },
                  std::memory_order_relaxed);
    const double publish = Now();
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    // 32 bits that wrap: a generation only has to differ from the last.
    const uint64_t generation =
        ((state_.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffffu;
    // Publishes the fields above (release): no home chunk claimed, the
    // counter at the first chunk that is no thread's home.  The previous
    // job is complete: every claim of it has run, and its words (its
    // counter at its chunk count, every home bit set) refuse more.
    home_.store(generation << 32, std::memory_order_seq_cst);
    state_.store(State(generation, static_cast<uint64_t>(chunks),
                       static_cast<uint64_t>(Homes(chunks, threads_))),
                 std::memory_order_seq_cst);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      Futex(&wake_, FUTEX_WAKE_PRIVATE, INT_MAX);
    }
    const double begin = Now();
    const int64_t own = WorkOn(generation, 0);
    const double own_done = Now();
    WaitDone(static_cast<uint32_t>(chunks));
    // Only a run both sides took part in, and that ran every chunk, says
    // what sharing saved (the caller's time is then its own chunks'); the
    // publishing and waking count against it.  Not while the load is
    // ignored: the pool then shares whatever happens.
    if (own > 0 && own < chunks &&
        !failed_.load(std::memory_order_relaxed) &&
        !ignore_load_.load(std::memory_order_relaxed)) {
      const double now = Now();
      NoteRun(SharedRunGain(own_done - begin, own, chunks,
                            now - own_done + (begin - publish)),
              now);
    }
    if (error_) std::rethrow_exception(error_);
  }

  // Tells idle workers of every pool to stop spinning now: the caller is
  // about to start threads of another runtime (an OpenMP region) that need
  // the cores.
  static void Hush() { HushEpoch().fetch_add(1, std::memory_order_relaxed); }

  int threads() const { return threads_; }

  // Whether a Run now would run every chunk on the caller because the
  // caller is one of a pool's workers, the machine has no CPU to spare or
  // the workers have been late (the reading Run itself uses).  A caller
  // that can compute the chunks' very bits in one piece may do so instead
  // (SplitMatMul).
  bool RunsAlone() { return InWorker() || Contended(); }

  // Whether the pool runs alone because its workers were late (sharing
  // ran out of credit), for tests.  With IgnoreLoad(true) the pool shares
  // anyway and counts nothing.
  bool Lagging() const {
    return Now() < lag_until_.load(std::memory_order_relaxed);
  }

  // For tests and benchmarks: behave as on an idle machine (wake and spin
  // whatever the load or the workers' lateness), or check them again.
  void IgnoreLoad(bool ignore) {
    ignore_load_.store(ignore, std::memory_order_relaxed);
  }
  // For tests: ignore /proc/loadavg's count but still watch the workers'
  // lateness (with IgnoreLoad(false)), or not.
  void IgnoreLoadCount(bool ignore) {
    ignore_count_.store(ignore, std::memory_order_relaxed);
  }
  // For tests: behave as on a machine with no CPU to spare (every chunk on
  // the caller; overrides IgnoreLoad), or not.
  void AssumeBusy(bool busy) {
    assume_busy_.store(busy, std::memory_order_relaxed);
  }

  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

 private:
  explicit WorkPool(int threads) : threads_(threads) {
    // A worker that cannot start leaves a smaller pool: the caller runs
    // whatever no worker claims, so the results are the same.
    for (int i = 1; i < threads; ++i) {
      try {
        std::thread(&WorkPool::WorkerLoop, this, i).detach();
      } catch (const std::system_error&) {
        break;
      }
    }
  }

  static std::atomic<WorkPool*>* Slots() {
    static std::atomic<WorkPool*> slots[kMaxThreads + 1];
    return slots;
  }
  static std::atomic<uint32_t>& HushEpoch() {
    static std::atomic<uint32_t> epoch{0};
    return epoch;
  }
  static bool& InWorker() {
    static thread_local bool in_worker = false;
    return in_worker;
  }
  static long Futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
    static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
                  "futex words are 32 bits");
    return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value,
                   nullptr, nullptr, 0);
  }
  static double Now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  // state_: the generation (32 bits), the job's chunk count (16) and the
  // next chunk the counter hands out (16).  Every claim is a
  // compare-and-swap of a whole word that names its generation and, for the
  // counter, the chunk count: a claim that succeeds is of a chunk of a job
  // not yet complete, whatever the claimer read before.
  static uint64_t State(uint64_t generation, uint64_t chunks, uint64_t next) {
    return (generation << 32) | (chunks << 16) | next;
  }

  // Runs claimed chunk i of the current job and counts it done.  The
  // claim (acquire, from the caller's release of this generation) makes
  // the job's fields visible, and they cannot change before this chunk is
  // counted.
  void RunChunk(int64_t chunks, int64_t i) {
    if (!failed_.load(std::memory_order_relaxed)) {
      void* fn = fn_.load(std::memory_order_relaxed);
      void (*invoke)(void*, int64_t) = invoke_.load(std::memory_order_relaxed);
      try {
        invoke(fn, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    const uint32_t done = done_.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (done == static_cast<uint32_t>(chunks) &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      Futex(&done_, FUTEX_WAKE_PRIVATE, 1);
    }
  }

  // Home chunks: chunk t is first offered to thread t (the caller is 0),
  // so that kernels split alike keep each part of their data on one core
  // (a weight gradient computed in row blocks, then the update of those
  // rows, ran 13 us on one thread and 62 us on two when the blocks changed
  // hands).  A thread that finds its home chunk taken, or has none, takes
  // the others' from the counter and then whatever home chunk is still
  // unclaimed.
  static int64_t Homes(int64_t chunks, int threads) {
    int64_t homes = chunks < threads ? chunks : threads;
    return homes < kMaxHomes ? homes : kMaxHomes;
  }

  // Claims home chunk i of `generation` (bit i of home_).
  bool ClaimHome(uint64_t generation, int64_t i) {
    uint64_t home = home_.load(std::memory_order_acquire);
    const uint64_t bit = uint64_t{1} << i;
    while ((home >> 32) == generation && (home & bit) == 0) {
      if (home_.compare_exchange_weak(home, home | bit,
                                      std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return true;
      }
    }
    return false;
  }

  // Claims and runs chunks of `generation` as thread `self` until none is
  // left; returns how many it ran.
  int64_t WorkOn(uint64_t generation, int self) {
    int64_t ran = 0;
    uint64_t state = state_.load(std::memory_order_acquire);
    if ((state >> 32) != generation) return ran;
    const int64_t chunks = static_cast<int64_t>((state >> 16) & 0xffff);
    const int64_t homes = Homes(chunks, threads_);
    if (self < homes && ClaimHome(generation, self)) {
      RunChunk(chunks, self);
      ++ran;
    }
    state = state_.load(std::memory_order_acquire);
    for (;;) {
      if ((state >> 32) != generation) return ran;
      const int64_t i = static_cast<int64_t>(state & 0xffff);
      if (i >= chunks) break;
      if (state_.compare_exchange_weak(state, state + 1,
                                       std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        RunChunk(chunks, i);
        ++ran;
        state = state_.load(std::memory_order_acquire);
      }
    }
    for (int64_t i = 0; i < homes; ++i) {
      if (ClaimHome(generation, i)) {
        RunChunk(chunks, i);
        ++ran;
      }
    }
    return ran;
  }

  // Adds what the run that ended at `now` saved to the credit, and when
  // the losses exceed it by kMaxLoss starts a lag: twice the last one's
  // length when the losses are back within that length of its end.  A run
  // that ends inside a lag (its caller found the pool sharing just before
  // the lag began) is not counted.  Only the caller that holds busy_ calls
  // it.
  void NoteRun(double gain, double now) {
    const double last_end = lag_until_.load(std::memory_order_relaxed);
    if (now < last_end) return;
    credit_ = credit_ + gain < kMaxCredit ? credit_ + gain : kMaxCredit;
    if (credit_ >= -kMaxLoss) return;
    credit_ = 0;
    lag_seconds_ = now - last_end < lag_seconds_
                       ? (2 * lag_seconds_ < kMaxLagSeconds ? 2 * lag_seconds_
                                                            : kMaxLagSeconds)
                       : kLagSeconds;
    lag_until_.store(now + lag_seconds_, std::memory_order_relaxed);
  }

  // The caller, out of chunks to claim, waits for those others run: a short
  // spin (a chunk is tens of microseconds), then sleeps until the last one
  // wakes it.
  void WaitDone(uint32_t chunks) {
    const double start = Now();
    for (int spins = 0;; ++spins) {
      if (done_.load(std::memory_order_acquire) == chunks) return;
      if ((spins & 63) == 63 && Now() - start > 50e-6) break;
      Pause();
    }
    for (;;) {
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      const uint32_t done = done_.load(std::memory_order_seq_cst);
      if (done == chunks) break;
      Futex(&done_, FUTEX_WAIT_PRIVATE, done);
    }
    caller_sleeping_.store(false, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
  }

  // Runnable threads on the machine (the reader included) and online CPUs,
  // from /proc/loadavg ("0.52 0.58 0.59 3/467 12345": the fourth field is
  // runnable/total).  False when they cannot be read.
  static bool ReadLoad(long* runnable, long* cpus) {
    static const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    static const long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (fd < 0 || online <= 0) return false;
    char text[128];
    const ssize_t got = pread(fd, text, sizeof text - 1, 0);
    if (got <= 0) return false;
    text[got] = '\0';
    const char* p = text;
    for (int field = 0; field < 3; ++field) {
      while (*p != '\0' && *p != ' ') ++p;
      while (*p == ' ') ++p;
    }
    long count = 0;
    while (*p >= '0' && *p <= '9') count = count * 10 + (*p++ - '0');
    if (*p != '/') return false;
    *runnable = count;
    *cpus = online;
    return true;
  }

  // Reads the load and records whether the pool's threads, sleeping ones
  // woken, would outnumber the CPUs (false when unknown).
  bool CheckLoad() {
    long runnable = 0, cpus = 0;
    const bool contended =
        !ignore_count_.load(std::memory_order_relaxed) &&
        ReadLoad(&runnable, &cpus) &&
        runnable + sleepers_.load(std::memory_order_relaxed) > cpus;
    contended_.store(contended, std::memory_order_relaxed);
    return contended;
  }

  // The caller's view: the last reading, refreshed when it is older than
  // kCheckSeconds (by one caller at a time).
  bool Contended() {
    if (assume_busy_.load(std::memory_order_relaxed)) return true;
    if (ignore_load_.load(std::memory_order_relaxed)) return false;
    const double now = Now();
    if (now < lag_until_.load(std::memory_order_relaxed)) return true;
    double checked = checked_.load(std::memory_order_relaxed);
    if (now - checked > kCheckSeconds &&
        checked_.compare_exchange_strong(checked, now,
                                         std::memory_order_relaxed)) {
      return CheckLoad();
    }
    return contended_.load(std::memory_order_relaxed);
  }

  void WorkerLoop(int self) {
    InWorker() = true;
    uint64_t seen = state_.load(std::memory_order_acquire) >> 32;
    for (;;) {
      const uint32_t hush = HushEpoch().load(std::memory_order_relaxed);
      bool spin = ignore_load_.load(std::memory_order_relaxed) ||
                  (!Lagging() && !CheckLoad());
      const double start = Now();
      for (int spins = 0; spin; ++spins) {
        if ((state_.load(std::memory_order_acquire) >> 32) != seen) break;
        if ((spins & 63) == 63 &&
            (Now() - start > kSpinSeconds ||
             HushEpoch().load(std::memory_order_relaxed) != hush)) {
          spin = false;
        }
        Pause();
      }
      if ((state_.load(std::memory_order_acquire) >> 32) == seen) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        for (;;) {
          const uint32_t wake = wake_.load(std::memory_order_seq_cst);
          if ((state_.load(std::memory_order_seq_cst) >> 32) != seen) break;
          Futex(&wake_, FUTEX_WAIT_PRIVATE, wake);
        }
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = state_.load(std::memory_order_acquire) >> 32;
      WorkOn(seen, self);
    }
  }

  const int threads_;
  // Generation, chunk count and next chunk (State()).
  alignas(64) std::atomic<uint64_t> state_{0};
  // Generation (high 32 bits) and the home chunks claimed (a bit each).
  std::atomic<uint64_t> home_{0};
  std::atomic<void*> fn_{nullptr};
  std::atomic<void (*)(void*, int64_t)> invoke_{nullptr};
  alignas(64) std::atomic<uint32_t> done_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> failed_{false};
  alignas(64) std::atomic<uint32_t> wake_{0};
  std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<bool> busy_{false};
  std::atomic<bool> contended_{false};
  std::atomic<bool> ignore_load_{false};
  std::atomic<bool> ignore_count_{false};
  std::atomic<bool> assume_busy_{false};
  std::atomic<double> checked_{0};
  // Late workers: when the pool runs alone until (Now()'s clock); the
  // credit and the last lag's length (the caller's, under busy_).
  std::atomic<double> lag_until_{0};
  double credit_ = 0;
  double lag_seconds_ = kLagSeconds;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_WORK_POOL_H_
