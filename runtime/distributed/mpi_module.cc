// weft-mpi.so: Weft's collectives over MPI (mpi_module.h says why a
// module).  Every MPI call of the process goes through this file, under
// one mutex, so the module works whatever thread level the MPI library
// grants; non-blocking operations are driven by one progress thread that
// tests them and calls their completion functions.
//
// Why a progress thread that polls: Open MPI advances non-blocking
// collectives only inside MPI calls, and the executor must not hold an
// inter-op thread while a collective waits for the other ranks.  The
// thread spins (yielding) briefly after activity and then sleeps in
// growing steps up to 1 ms, so an idle process costs nearly nothing and a
// busy one sees completions within microseconds.
#include "distributed/mpi_module.h"

#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "weft/dtype.h"
#include "weft/status.h"

namespace {

struct Pending {
  MPI_Request request;
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

  int32_t Start(const char* what, weft_mpi_done_fn done, void* arg,
                char* error, size_t n,
                int (*start)(void* ctx, MPI_Comm comm, MPI_Request* request),
                void* ctx) {
    if (init_code_ != 0 || !ready_) {
      std::snprintf(error, n, "MPI is not initialized");
      return WEFT_FAILED_PRECONDITION;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      std::snprintf(error, n, "%s: the process is shutting MPI down", what);
      return WEFT_CANCELLED;
    }
    Pending p{MPI_REQUEST_NULL, done, arg, what};
    int rc = start(ctx, comm_, &p.request);
    if (rc != MPI_SUCCESS) {
      std::snprintf(error, n, "%s: %s", what, ErrorText(rc).c_str());
      return WEFT_UNAVAILABLE;
    }
    pending_.push_back(p);
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ready_) return;
      stopping_ = true;
      wake_.notify_one();
    }
    if (progress_.joinable()) progress_.join();
    std::lock_guard<std::mutex> lock(mu_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) {
      if (pending_.empty()) {
        MPI_Comm_free(&comm_);
        MPI_Finalize();
      } else {
        // A peer never answered: finalizing would wait for it forever.
        std::fprintf(stderr,
                     "weft-mpi: exiting with %zu collective(s) unfinished "
                     "(a rank died or hung); aborting the MPI job\n",
                     pending_.size());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 70);
      }
    }
    ready_ = false;
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
    // Errors come back as codes: a dead peer must fail the run, not abort
    // the process.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    ready_ = true;
    progress_ = std::thread([this] { Progress(); });
    std::atexit([] { Get().Shutdown(); });
  }

  void Progress() {
    int idle = 0;
    std::vector<Pending> finished;
    std::vector<int> codes;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (stopping_) return;
      if (pending_.empty()) {
        wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
        idle = 0;
        continue;
      }
      for (auto it = pending_.begin(); it != pending_.end();) {
        int flag = 0;
        MPI_Status status;
        int rc = MPI_Test(&it->request, &flag, &status);
        if (rc != MPI_SUCCESS || flag) {
          finished.push_back(*it);
          codes.push_back(rc);
          it = pending_.erase(it);
        } else {
          ++it;
        }
      }
      if (!finished.empty()) {
        lock.unlock();
        for (size_t i = 0; i < finished.size(); ++i) {
          if (codes[i] == MPI_SUCCESS) {
            finished[i].done(finished[i].arg, 0, nullptr);
          } else {
            std::string why = std::string(finished[i].what) + ": " +
                              ErrorText(codes[i]);
            finished[i].done(finished[i].arg, WEFT_UNAVAILABLE, why.c_str());
          }
        }
        finished.clear();
        codes.clear();
        idle = 0;
        lock.lock();
        continue;
      }
      // Nothing finished: spin a little (collectives between busy ranks
      // finish within microseconds), then back off.
      ++idle;
      if (idle < 200) {
        lock.unlock();
        sched_yield();
        lock.lock();
      } else {
        int us = idle < 1000 ? 20 : (idle < 2000 ? 200 : 1000);
        wake_.wait_for(lock, std::chrono::microseconds(us));
      }
    }
  }

 public:
  static Module& Get() {
    static Module* module = new Module();  // never destroyed: atexit uses it
    return *module;
  }

 private:
  std::once_flag once_, version_once_;
  int32_t init_code_ = 0;
  char init_error_[512] = {};
  char version_[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  bool owns_mpi_ = false;
  std::atomic<bool> ready_{false};
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::list<Pending> pending_;
  std::thread progress_;
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
  struct Ctx {
    void* data;
    int count;
    MPI_Datatype type;
  } ctx{data, 0, MPI_DATATYPE_NULL};
  if (op != WEFT_MPI_SUM) {
    std::snprintf(error, n, "AllReduce: unknown reduction %d", op);
    return WEFT_INVALID_ARGUMENT;
  }
  if (!MpiType(dtype, &ctx.type)) {
    std::snprintf(error, n, "AllReduce: no MPI type for dtype %d", dtype);
    return WEFT_INVALID_ARGUMENT;
  }
  if (TooLarge(count, "AllReduce", error, n)) return WEFT_INVALID_ARGUMENT;
  ctx.count = static_cast<int>(count);
  return Module::Get().Start(
      "MPI_Iallreduce", done, arg, error, n,
      [](void* c, MPI_Comm comm, MPI_Request* r) {
        Ctx* x = static_cast<Ctx*>(c);
        return MPI_Iallreduce(MPI_IN_PLACE, x->data, x->count, x->type,
                              MPI_SUM, comm, r);
      },
      &ctx);
}

int32_t Broadcast(void* data, int64_t bytes, int32_t root,
                  weft_mpi_done_fn done, void* arg, char* error, size_t n) {
  struct Ctx {
    void* data;
    int bytes;
    int root;
  } ctx{data, 0, root};
  if (TooLarge(bytes, "Broadcast", error, n)) return WEFT_INVALID_ARGUMENT;
  ctx.bytes = static_cast<int>(bytes);
  return Module::Get().Start(
      "MPI_Ibcast", done, arg, error, n,
      [](void* c, MPI_Comm comm, MPI_Request* r) {
        Ctx* x = static_cast<Ctx*>(c);
        return MPI_Ibcast(x->data, x->bytes, MPI_BYTE, x->root, comm, r);
      },
      &ctx);
}

int32_t AllGather(const void* in, int64_t bytes, void* out,
                  weft_mpi_done_fn done, void* arg, char* error, size_t n) {
  struct Ctx {
    const void* in;
    int bytes;
    void* out;
  } ctx{in, 0, out};
  if (TooLarge(bytes, "AllGather", error, n)) return WEFT_INVALID_ARGUMENT;
  ctx.bytes = static_cast<int>(bytes);
  return Module::Get().Start(
      "MPI_Iallgather", done, arg, error, n,
      [](void* c, MPI_Comm comm, MPI_Request* r) {
        Ctx* x = static_cast<Ctx*>(c);
        return MPI_Iallgather(x->in, x->bytes, MPI_BYTE, x->out, x->bytes,
                              MPI_BYTE, comm, r);
      },
      &ctx);
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
