// weft-mpi.so: Weft's collectives and transfers over MPI (mpi_module.h
// says why a module).  The process's MPI calls but initialization run on
// two threads of this module: collectives on the collective thread, in the
// order they were started; point-to-point messages and liveness checks on
// the progress thread.  Callers enqueue and return, and hear of the end
// through their completion function (called on that thread).
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
//
// Point-to-point messages (transfers between the tasks of a cluster
// session) are the other way round: many at once, in no order MPI could
// predict, so a progress thread drives them with non-blocking calls on a
// communicator of their own (MPI_Isend, MPI_Iprobe for arriving headers,
// MPI_Irecv of payloads straight into the receiver's memory, MPI_Testsome).
// That thread and the collective thread call MPI at once: point-to-point
// and liveness checks need MPI_THREAD_MULTIPLE (without it the progress
// thread does not start and they report why).
#include "distributed/mpi_module.h"

#include <mpi.h>

#include <climits>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "weft/dtype.h"
#include "weft/status.h"

namespace {

#define WEFT_MPI_RETURN_IF(expr)      \
  do {                                \
    if (int32_t _c = (expr)) return _c; \
  } while (0)

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
    p2p_wake_.notify_one();
    // A message nobody waits for (a liveness check's answer, sent just
    // before exit) completes within moments: give the threads 2 s before
    // taking what is left for a peer that will never come.
    size_t unfinished = 0;
    for (int waited_ms = 0;; waited_ms += 2) {
      unfinished =
          queue_.size() + (busy_ ? 1 : 0) + outbox_.size() + in_flight_;
      if (unfinished == 0 || waited_ms >= 2000) break;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      lock.lock();
    }
    if (unfinished != 0) {
      // A peer never came: the collective thread waits in MPI for it, and
      // finalizing would wait forever too.
      std::fprintf(stderr,
                   "weft-mpi: exiting with %zu collective(s) or transfer(s) "
                   "unfinished (a rank died or hung); aborting the MPI job\n",
                   unfinished);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 70);
      return;
    }
    wake_.notify_one();
    p2p_wake_.notify_one();
    lock.unlock();
    if (worker_.joinable()) worker_.join();
    if (p2p_thread_.joinable()) p2p_thread_.join();
    lock.lock();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) {
      MPI_Comm_free(&p2p_comm_);
      MPI_Comm_free(&comm_);
      MPI_Finalize();
    }
    ready_ = false;
  }

  // ---- Point-to-point ----

  int32_t Send(int32_t dest, const void* header, int64_t header_bytes,
               const void* payload, int64_t payload_bytes,
               weft_mpi_done_fn done, void* arg, char* error, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    WEFT_MPI_RETURN_IF(P2pReadyLocked(error, n));
    if (dest < 0 || dest >= size_ || dest == rank_) {
      std::snprintf(error, n, "send to rank %d: not another rank of 0..%d",
                    dest, size_ - 1);
      return WEFT_INVALID_ARGUMENT;
    }
    if (header_bytes < 0 || header_bytes > WEFT_MPI_MAX_HEADER ||
        payload_bytes < 0) {
      std::snprintf(error, n, "send: header of %lld bytes (at most %d) or "
                    "payload of %lld bytes", static_cast<long long>(header_bytes),
                    WEFT_MPI_MAX_HEADER, static_cast<long long>(payload_bytes));
      return WEFT_INVALID_ARGUMENT;
    }
    Outgoing out;
    out.dest = dest;
    const uint64_t chunks = Chunks(payload_bytes);
    Envelope env{static_cast<uint64_t>(payload_bytes), 0,
                 static_cast<uint32_t>(chunks)};
    // Payload tags: consecutive per destination, wrapping well below the
    // bound (a tag comes back only after ~a billion messages to one rank).
    int& next = next_tag_[static_cast<size_t>(dest)];
    if (static_cast<int64_t>(next) + static_cast<int64_t>(chunks) >= tag_ub_)
      next = kFirstPayloadTag;
    env.first_tag = static_cast<uint32_t>(next);
    next += static_cast<int>(chunks);
    out.envelope.resize(sizeof env + static_cast<size_t>(header_bytes));
    std::memcpy(out.envelope.data(), &env, sizeof env);
    if (header_bytes != 0)
      std::memcpy(out.envelope.data() + sizeof env, header,
                  static_cast<size_t>(header_bytes));
    out.payload = static_cast<const char*>(payload);
    out.payload_bytes = payload_bytes;
    out.first_tag = static_cast<int>(env.first_tag);
    out.done = done;
    out.arg = arg;
    outbox_.push_back(std::move(out));
    p2p_wake_.notify_one();
    return 0;
  }

  int32_t Listen(weft_mpi_arrival_fn arrival, weft_mpi_landed_fn landed,
                 void* arg, char* error, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    WEFT_MPI_RETURN_IF(P2pReadyLocked(error, n));
    if (listening_) return 0;
    arrival_ = arrival;
    landed_ = landed;
    listen_arg_ = arg;
    listening_ = true;
    p2p_wake_.notify_one();
    return 0;
  }

  // A receiver starts (+1) or stops (-1) waiting for a message.
  void Expect(int32_t delta) {
    std::lock_guard<std::mutex> lock(mu_);
    expected_ += delta;
    if (delta > 0) p2p_wake_.notify_one();
  }

  int32_t Ping(int32_t timeout_ms, uint8_t* answered, char* error,
               size_t n) {
    std::lock_guard<std::mutex> one(ping_mu_);  // one check at a time
    std::unique_lock<std::mutex> lock(mu_);
    WEFT_MPI_RETURN_IF(P2pReadyLocked(error, n));
    ++ping_id_;
    ping_answered_.assign(static_cast<size_t>(size_), 0);
    ping_answered_[static_cast<size_t>(rank_)] = 1;
    ping_wanted_ = true;
    p2p_wake_.notify_one();
    ping_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] {
      for (uint8_t a : ping_answered_)
        if (!a) return false;
      return true;
    });
    std::memcpy(answered, ping_answered_.data(), ping_answered_.size());
    return 0;
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

  static int AtFinalize(MPI_Comm, int, void*, void*) {
    Get().StopP2p();
    return MPI_SUCCESS;
  }

  // Stops the progress thread (the program finalizes MPI): what is still
  // in flight is abandoned, and later transfers fail.
  void StopP2p() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      p2p_stopped_ = true;
      p2p_wake_.notify_one();
    }
    if (p2p_thread_.joinable()) p2p_thread_.join();
  }

  void InitOnce() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // The module's two threads call MPI at once (and MPI_Abort at exit
      // may come from a third while they wait).
      int provided = 0;
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE,
                               &provided);
      if (rc != MPI_SUCCESS) {
        Fail(WEFT_UNAVAILABLE, "MPI_Init_thread failed: %s",
             ErrorText(rc).c_str());
        return;
      }
      owns_mpi_ = true;
      provided_ = provided;
    } else {
      MPI_Query_thread(&provided_);
    }
    // Errors come back as codes: a failing peer must fail the run, not
    // abort the process.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm_);
    MPI_Comm_set_errhandler(p2p_comm_, MPI_ERRORS_RETURN);
    void* ub = nullptr;
    int has_ub = 0;
    MPI_Comm_get_attr(p2p_comm_, MPI_TAG_UB, &ub, &has_ub);
    if (has_ub && ub != nullptr) tag_ub_ = *static_cast<int*>(ub);
    next_tag_.assign(static_cast<size_t>(size_), kFirstPayloadTag);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = true;
    }
    worker_ = std::thread([this] { Work(); });
    // From the start: it answers other ranks' liveness checks.
    if (provided_ >= MPI_THREAD_MULTIPLE)
      p2p_thread_ = std::thread([this] { P2pWork(); });
    std::atexit([] { Get().Shutdown(); });
    // A program that initialized MPI itself may finalize it before exit:
    // MPI deletes MPI_COMM_SELF's attributes first thing in MPI_Finalize,
    // and this one's deletion stops the progress thread before MPI goes.
    int key = MPI_KEYVAL_INVALID;
    if (!owns_mpi_ &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, AtFinalize, &key,
                               nullptr) == MPI_SUCCESS)
      MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
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

  // What precedes a message's header on the wire.
  struct Envelope {
    uint64_t payload_bytes;
    uint32_t first_tag;  // of the payload's chunks, consecutive
    uint32_t chunks;
  };
  // Tags on p2p_comm_.
  static constexpr int kHeaderTag = 1;
  static constexpr int kPingTag = 2;
  static constexpr int kPongTag = 3;
  static constexpr int kFirstPayloadTag = 4;
  // MPI counts are ints: payloads go in chunks of at most this.
  static constexpr int64_t kChunk = int64_t{1} << 30;
  static uint64_t Chunks(int64_t bytes) {
    return bytes == 0 ? 0 : static_cast<uint64_t>((bytes + kChunk - 1) / kChunk);
  }

  struct Outgoing {
    int32_t dest = 0;
    std::vector<char> envelope;  // Envelope + header
    const char* payload = nullptr;
    int64_t payload_bytes = 0;
    int first_tag = 0;
    weft_mpi_done_fn done = nullptr;
    void* arg = nullptr;
  };

  // A message in flight (its requests are in p2p_reqs_), on the progress
  // thread only.
  struct Flight {
    bool is_send = true;
    int remaining = 0;  // requests not yet complete
    int error = MPI_SUCCESS;
    std::vector<char> envelope;          // a send's, alive until sent
    std::vector<char> scratch;           // a discarded payload
    weft_mpi_done_fn done = nullptr;     // send
    void* arg = nullptr;
    void* token = nullptr;               // receive
    int32_t peer = 0;
  };

  int32_t P2pReadyLocked(char* error, size_t n) {
    if (init_code_ != 0 || !ready_) {
      std::snprintf(error, n, "MPI is not initialized");
      return WEFT_FAILED_PRECONDITION;
    }
    if (stopping_) {
      std::snprintf(error, n, "the process is shutting MPI down");
      return WEFT_CANCELLED;
    }
    if (p2p_stopped_) {
      std::snprintf(error, n, "the program has finalized MPI");
      return WEFT_FAILED_PRECONDITION;
    }
    if (provided_ < MPI_THREAD_MULTIPLE) {
      std::snprintf(error, n,
                    "transfers between ranks need an MPI library with "
                    "MPI_THREAD_MULTIPLE; this one (%s) gives thread level %d",
                    LibraryVersion(), provided_);
      return WEFT_UNAVAILABLE;
    }
    return 0;
  }

  void Post(Outgoing& out) {
    auto f = std::make_unique<Flight>();
    f->is_send = true;
    f->done = out.done;
    f->arg = out.arg;
    f->peer = out.dest;
    f->envelope = std::move(out.envelope);
    MPI_Request r;
    int rc = MPI_Isend(f->envelope.data(), static_cast<int>(f->envelope.size()),
                       MPI_BYTE, out.dest, kHeaderTag, p2p_comm_, &r);
    Flight* raw = f.get();
    if (rc != MPI_SUCCESS) {
      raw->error = rc;
      flights_.push_back(std::move(f));
      Finish(raw);
      return;
    }
    Track(r, raw);
    int64_t left = out.payload_bytes;
    const char* p = out.payload;
    int tag = out.first_tag;
    while (left > 0 && rc == MPI_SUCCESS) {
      const int c = static_cast<int>(left < kChunk ? left : kChunk);
      rc = MPI_Isend(p, c, MPI_BYTE, out.dest, tag++, p2p_comm_, &r);
      if (rc == MPI_SUCCESS) Track(r, raw);
      else raw->error = rc;
      p += c;
      left -= c;
    }
    flights_.push_back(std::move(f));
    if (raw->remaining == 0) Finish(raw);
  }

  void Track(MPI_Request r, Flight* f) {
    p2p_reqs_.push_back(r);
    p2p_owner_.push_back(f);
    f->remaining++;
  }

  // A message's requests are all complete (or failed): forget it, then
  // tell its owner (a program that exits as soon as its last transfer is
  // done must find nothing in flight).
  void Finish(Flight* raw) {
    std::unique_ptr<Flight> f;
    for (size_t i = 0; i < flights_.size(); ++i)
      if (flights_[i].get() == raw) {
        f = std::move(flights_[i]);
        flights_[i] = std::move(flights_.back());
        flights_.pop_back();
        break;
      }
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_ = flights_.size();
    }
    const int32_t code = raw->error == MPI_SUCCESS ? 0 : WEFT_UNAVAILABLE;
    std::string why;
    if (code != 0)
      why = std::string(raw->is_send ? "MPI_Isend to rank "
                                     : "MPI_Irecv from rank ") +
            std::to_string(raw->peer) + ": " + ErrorText(raw->error);
    if (raw->is_send)
      raw->done(raw->arg, code, code ? why.c_str() : nullptr);
    else
      landed_(listen_arg_, raw->token, code, code ? why.c_str() : nullptr);
  }

  static void NoDone(void*, int32_t, const char*) {}

  // Answers liveness checks, and takes the answers to this rank's.
  bool Pings() {
    bool any = false;
    for (int tag : {kPingTag, kPongTag}) {
      for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, tag, p2p_comm_, &flag, &st) !=
                MPI_SUCCESS || !flag)
          break;
        any = true;
        uint64_t id = 0;
        MPI_Recv(&id, 8, MPI_BYTE, st.MPI_SOURCE, tag, p2p_comm_,
                 MPI_STATUS_IGNORE);
        if (tag == kPingTag) {
          SendTiny(st.MPI_SOURCE, kPongTag, id);
        } else {
          std::lock_guard<std::mutex> lock(mu_);
          if (id == ping_id_ && st.MPI_SOURCE >= 0 && st.MPI_SOURCE < size_) {
            ping_answered_[static_cast<size_t>(st.MPI_SOURCE)] = 1;
            ping_cv_.notify_all();
          }
        }
      }
    }
    bool wanted = false;
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wanted = ping_wanted_;
      ping_wanted_ = false;
      id = ping_id_;
    }
    if (wanted)
      for (int r = 0; r < size_; ++r)
        if (r != rank_) SendTiny(r, kPingTag, id);
    return any || wanted;
  }

  // An 8-byte liveness message, tracked until sent.
  void SendTiny(int dest, int tag, uint64_t id) {
    auto f = std::make_unique<Flight>();
    f->is_send = true;
    f->done = NoDone;
    f->peer = dest;
    f->envelope.resize(sizeof id);
    std::memcpy(f->envelope.data(), &id, sizeof id);
    MPI_Request r;
    Flight* raw = f.get();
    flights_.push_back(std::move(f));
    if (MPI_Isend(raw->envelope.data(), 8, MPI_BYTE, dest, tag, p2p_comm_,
                  &r) == MPI_SUCCESS)
      Track(r, raw);
    if (raw->remaining == 0) Finish(raw);
  }

  // Takes every header that has arrived and posts its payload's receives.
  bool Arrivals() {
    bool any = false;
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kHeaderTag, p2p_comm_, &flag, &st) !=
              MPI_SUCCESS || !flag)
        return any;
      any = true;
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      std::vector<char> buf(static_cast<size_t>(count > 0 ? count : 0));
      const int source = st.MPI_SOURCE;
      MPI_Recv(buf.data(), count, MPI_BYTE, source, kHeaderTag, p2p_comm_,
               MPI_STATUS_IGNORE);
      Envelope env{};
      if (buf.size() < sizeof env) continue;  // not ours: nothing follows
      std::memcpy(&env, buf.data(), sizeof env);
      auto f = std::make_unique<Flight>();
      f->is_send = false;
      f->peer = source;
      const int64_t bytes = static_cast<int64_t>(env.payload_bytes);
      char* dst = static_cast<char*>(arrival_(
          listen_arg_, source, buf.data() + sizeof env,
          static_cast<int64_t>(buf.size() - sizeof env), bytes, &f->token));
      if (dst == nullptr && bytes > 0) {
        f->scratch.resize(static_cast<size_t>(bytes));
        dst = f->scratch.data();
      }
      Flight* raw = f.get();
      flights_.push_back(std::move(f));
      int64_t left = bytes;
      int tag = static_cast<int>(env.first_tag);
      while (left > 0) {
        const int c = static_cast<int>(left < kChunk ? left : kChunk);
        MPI_Request r;
        int rc = MPI_Irecv(dst, c, MPI_BYTE, source, tag++, p2p_comm_, &r);
        if (rc == MPI_SUCCESS) {
          Track(r, raw);
        } else {
          raw->error = rc;
          break;
        }
        dst += c;
        left -= c;
      }
      if (raw->remaining == 0) Finish(raw);
    }
  }

  bool Progress() {
    if (p2p_reqs_.empty()) return false;
    const int n = static_cast<int>(p2p_reqs_.size());
    std::vector<int> idx(static_cast<size_t>(n));
    std::vector<MPI_Status> sts(static_cast<size_t>(n));
    int outcount = 0;
    const int rc = MPI_Testsome(n, p2p_reqs_.data(), &outcount, idx.data(),
                                sts.data());
    if (outcount == MPI_UNDEFINED || outcount <= 0) return false;
    std::vector<Flight*> ended;
    for (int k = 0; k < outcount; ++k) {
      Flight* f = p2p_owner_[static_cast<size_t>(idx[k])];
      if (rc == MPI_ERR_IN_STATUS && sts[k].MPI_ERROR != MPI_SUCCESS)
        f->error = sts[k].MPI_ERROR;
      p2p_owner_[static_cast<size_t>(idx[k])] = nullptr;
      if (--f->remaining == 0) ended.push_back(f);
    }
    // Drop the completed requests (MPI made them MPI_REQUEST_NULL).
    size_t w = 0;
    for (size_t r = 0; r < p2p_reqs_.size(); ++r)
      if (p2p_owner_[r] != nullptr) {
        p2p_reqs_[w] = p2p_reqs_[r];
        p2p_owner_[w] = p2p_owner_[r];
        ++w;
      }
    p2p_reqs_.resize(w);
    p2p_owner_.resize(w);
    for (Flight* f : ended) Finish(f);
    return true;
  }

  void P2pWork() {
    using Clock = std::chrono::steady_clock;
    Clock::time_point last_busy = Clock::now();
    for (;;) {
      std::deque<Outgoing> out;
      bool listening = false;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (p2p_stopped_ ||
            (stopping_ && outbox_.empty() && flights_.empty()))
          return;
        // Idle: poll (yielding) for 2 ms after the last message, then
        // sleep in growing steps up to 2 ms (a header or liveness check
        // that arrives meanwhile waits at most the step; a local send or
        // check wakes the thread at once).  Never while messages are in flight: MPI moves a large
        // one only while someone calls into it.
        const auto quiet = Clock::now() - last_busy;
        if (quiet > std::chrono::milliseconds(2) && outbox_.empty() &&
            p2p_reqs_.empty()) {
          // Someone waits for a message: short steps whatever the quiet.
          const int us = expected_ > 0                           ? 50
                         : quiet > std::chrono::seconds(1)         ? 2000
                         : quiet > std::chrono::milliseconds(50) ? 500
                                                                 : 50;
          p2p_wake_.wait_for(lock, std::chrono::microseconds(us));
        }
        out.swap(outbox_);
        in_flight_ = flights_.size() + out.size();
        listening = listening_;
      }
      bool busy = !out.empty();
      for (Outgoing& o : out) Post(o);
      if (listening) busy |= Arrivals();
      busy |= Pings();
      busy |= Progress();
      if (busy || !p2p_reqs_.empty()) last_busy = Clock::now();
      if (!busy) std::this_thread::yield();
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
  // Point-to-point.
  int provided_ = MPI_THREAD_SINGLE;
  MPI_Comm p2p_comm_ = MPI_COMM_NULL;
  int tag_ub_ = 32767;
  std::vector<int> next_tag_;          // per destination, under mu_
  std::deque<Outgoing> outbox_;        // under mu_
  size_t in_flight_ = 0;               // under mu_
  bool listening_ = false;             // under mu_
  bool p2p_stopped_ = false;           // under mu_
  int64_t expected_ = 0;               // receivers waiting, under mu_
  // Liveness checks.
  std::mutex ping_mu_;
  std::condition_variable ping_cv_;
  uint64_t ping_id_ = 0;               // under mu_
  bool ping_wanted_ = false;           // under mu_
  std::vector<uint8_t> ping_answered_; // under mu_
  weft_mpi_arrival_fn arrival_ = nullptr;
  weft_mpi_landed_fn landed_ = nullptr;
  void* listen_arg_ = nullptr;
  std::condition_variable p2p_wake_;
  std::thread p2p_thread_;
  // The progress thread's own.
  std::vector<std::unique_ptr<Flight>> flights_;
  std::vector<MPI_Request> p2p_reqs_;
  std::vector<Flight*> p2p_owner_;
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

int32_t Send(int32_t dest, const void* header, int64_t header_bytes,
             const void* payload, int64_t payload_bytes, weft_mpi_done_fn done,
             void* arg, char* error, size_t n) {
  return Module::Get().Send(dest, header, header_bytes, payload,
                            payload_bytes, done, arg, error, n);
}

int32_t Listen(weft_mpi_arrival_fn arrival, weft_mpi_landed_fn landed,
               void* arg, char* error, size_t n) {
  return Module::Get().Listen(arrival, landed, arg, error, n);
}

int32_t Ping(int32_t timeout_ms, uint8_t* answered, char* error, size_t n) {
  return Module::Get().Ping(timeout_ms, answered, error, n);
}

void Expect(int32_t delta) { Module::Get().Expect(delta); }

void Abort(int32_t code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort returned (it should not)
}

const weft_mpi_table kTable = {
    sizeof(weft_mpi_table), Init, AllReduce, Broadcast, AllGather,
    LibraryVersion, Send, Listen, Ping, Expect, Abort,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const weft_mpi_table*
weft_mpi_module_table(void) {
  return &kTable;
}
