// weft-mpi.so: Weft's collectives over MPI (mpi_module.h says why a
// module).  Every MPI call of the process but initialization runs on one
// thread of this module, the collective thread, in the order the
// collectives were started; callers enqueue and return, and hear of the
// end through their completion function (called on that thread).
//
// Why blocking calls on a thread of their own rather than MPI's
// non-blocking collectives: the executor must not hold an inter-op thread
// while a collective waits for the other ranks, which either gives; but
// Open MPI runs MPI_Iallreduce with a generic schedule (libnbc) that moved
// 64 MiB between two ranks of this machine in 81 ms, against 35 ms for
// MPI_Allreduce's tuned algorithm (bench/allreduce_mpi, one run).  Order
// is kept by the queue: collectives run in the order they were started,
// which collective.cc makes the same on every rank.  The cost: one
// collective at a time per process, and a peer that never comes holds the
// thread (the run's deadline still ends the node; at exit the module then
// aborts the MPI job rather than wait).
#include "distributed/mpi_module.h"

#include <mpi.h>

#include <climits>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "weft/dtype.h"
#include "weft/status.h"

namespace {

struct Job {
  std::function<int(MPI_Comm)> run;  // a blocking MPI call
  weft_mpi_done_fn done;
  void* arg;
  const char* what;
};

class Module {
 public:
  int32_t Init(int32_t* rank, int32_t* size, char* error, size_t n) {
    std::call_once(once_, [this] { InitOnce(); });
    if (init_code_ != 0) {
      std::snprintf(error, n, "%s", init_error_);
      return init_code_;
    }
    *rank = rank_;
    *size = size_;
    return 0;
  }

  int32_t Start(Job job, char* error, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_code_ != 0 || !ready_) {
      std::snprintf(error, n, "MPI is not initialized");
      return WEFT_FAILED_PRECONDITION;
    }
    if (stopping_) {
      std::snprintf(error, n, "%s: the process is shutting MPI down",
                    job.what);
      return WEFT_CANCELLED;
    }
    queue_.push_back(std::move(job));
    wake_.notify_one();
    return 0;
  }

  const char* LibraryVersion() {
    std::call_once(version_once_, [this] {
      int len = 0;
      // Allowed before MPI_Init.
      MPI_Get_library_version(version_, &len);
      version_[sizeof version_ - 1] = '\0';
      if (char* nl = std::strchr(version_, '\n')) *nl = '\0';
    });
    return version_;
  }

  void Shutdown() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ready_) return;
    stopping_ = true;
    const size_t unfinished = queue_.size() + (busy_ ? 1 : 0);
    if (unfinished != 0) {
      // A peer never came: the collective thread waits in MPI for it, and
      // finalizing would wait forever too.
      std::fprintf(stderr,
                   "weft-mpi: exiting with %zu collective(s) unfinished (a "
                   "rank died or hung); aborting the MPI job\n", unfinished);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 70);
      return;
    }
    wake_.notify_one();
    lock.unlock();
    if (worker_.joinable()) worker_.join();
    lock.lock();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) {
      MPI_Comm_free(&comm_);
      MPI_Finalize();
    }
    ready_ = false;
  }

  static Module& Get() {
    static Module* module = new Module();  // never destroyed: atexit uses it
    return *module;
  }

 private:
  static std::string ErrorText(int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error";
    return std::string(text, static_cast<size_t>(len));
  }

  void Fail(int32_t code, const char* fmt, ...) {
    init_code_ = code;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(init_error_, sizeof init_error_, fmt, ap);
    va_end(ap);
  }

  void InitOnce() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // The collective thread makes the calls; MPI_Abort at exit may come
      // from another thread while it waits.
      int provided = 0;
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE,
                               &provided);
      if (rc != MPI_SUCCESS) {
        Fail(WEFT_UNAVAILABLE, "MPI_Init_thread failed: %s",
             ErrorText(rc).c_str());
        return;
      }
      owns_mpi_ = true;
    }
    // Errors come back as codes: a failing peer must fail the run, not
    // abort the process.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = true;
    }
    worker_ = std::thread([this] { Work(); });
    std::atexit([] { Get().Shutdown(); });
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      Job job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      const int rc = job.run(comm_);
      // Out of MPI before the caller hears: a program that exits as soon
      // as its last collective is done must find the module idle.
      lock.lock();
      busy_ = false;
      lock.unlock();
      if (rc == MPI_SUCCESS) {
        job.done(job.arg, 0, nullptr);
      } else {
        std::string why = std::string(job.what) + ": " + ErrorText(rc);
        job.done(job.arg, WEFT_UNAVAILABLE, why.c_str());
      }
      lock.lock();
    }
  }

  std::once_flag once_, version_once_;
  int32_t init_code_ = 0;
  char init_error_[512] = {};
  char version_[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  bool owns_mpi_ = false;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::mutex mu_;
  std::condition_variable wake_;
  bool ready_ = false;
  bool stopping_ = false;
  bool busy_ = false;
  std::deque<Job> queue_;
  std::thread worker_;
};

bool MpiType(int32_t dtype, MPI_Datatype* out) {
  switch (dtype) {
    case WEFT_FLOAT32: *out = MPI_FLOAT; return true;
    case WEFT_FLOAT64: *out = MPI_DOUBLE; return true;
    case WEFT_INT32: *out = MPI_INT32_T; return true;
    case WEFT_INT64: *out = MPI_INT64_T; return true;
    default: return false;
  }
}

bool TooLarge(int64_t n, const char* what, char* error, size_t size) {
  if (n >= 0 && n <= INT_MAX) return false;
  std::snprintf(error, size,
                "%s: %lld elements or bytes is more than one MPI call takes "
                "(%d)", what, static_cast<long long>(n), INT_MAX);
  return true;
}

int32_t Init(int32_t* rank, int32_t* size, char* error, size_t n) {
  return Module::Get().Init(rank, size, error, n);
}

int32_t AllReduce(void* data, int64_t count, int32_t dtype, int32_t op,
                  weft_mpi_done_fn done, void* arg, char* error, size_t n) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  if (op != WEFT_MPI_SUM) {
    std::snprintf(error, n, "AllReduce: unknown reduction %d", op);
    return WEFT_INVALID_ARGUMENT;
  }
  if (!MpiType(dtype, &type)) {
    std::snprintf(error, n, "AllReduce: no MPI type for dtype %d", dtype);
    return WEFT_INVALID_ARGUMENT;
  }
  if (TooLarge(count, "AllReduce", error, n)) return WEFT_INVALID_ARGUMENT;
  const int c = static_cast<int>(count);
  return Module::Get().Start(
      Job{[data, c, type](MPI_Comm comm) {
            return MPI_Allreduce(MPI_IN_PLACE, data, c, type, MPI_SUM, comm);
          },
          done, arg, "MPI_Allreduce"},
      error, n);
}

int32_t Broadcast(void* data, int64_t bytes, int32_t root,
                  weft_mpi_done_fn done, void* arg, char* error, size_t n) {
  if (TooLarge(bytes, "Broadcast", error, n)) return WEFT_INVALID_ARGUMENT;
  const int b = static_cast<int>(bytes);
  return Module::Get().Start(
      Job{[data, b, root](MPI_Comm comm) {
            return MPI_Bcast(data, b, MPI_BYTE, root, comm);
          },
          done, arg, "MPI_Bcast"},
      error, n);
}

int32_t AllGather(const void* in, int64_t bytes, void* out,
                  weft_mpi_done_fn done, void* arg, char* error, size_t n) {
  if (TooLarge(bytes, "AllGather", error, n)) return WEFT_INVALID_ARGUMENT;
  const int b = static_cast<int>(bytes);
  return Module::Get().Start(
      Job{[in, b, out](MPI_Comm comm) {
            return MPI_Allgather(in, b, MPI_BYTE, out, b, MPI_BYTE, comm);
          },
          done, arg, "MPI_Allgather"},
      error, n);
}

const char* LibraryVersion() { return Module::Get().LibraryVersion(); }

const weft_mpi_table kTable = {
    sizeof(weft_mpi_table), Init, AllReduce, Broadcast, AllGather,
    LibraryVersion,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const weft_mpi_table*
weft_mpi_module_table(void) {
  return &kTable;
}
