#include "session/serve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>

#include "base/status.h"
#include "distributed/cluster.h"
#include "distributed/transfer.h"
#include "session/session.h"

namespace weft {

using Clock = std::chrono::steady_clock;

// ---- Requests --------------------------------------------------------------

namespace {

constexpr int64_t kMagic = 0x5746'5252;  // "WFRR"
constexpr size_t kMaxEntries = size_t{1} << 20;

std::string Key(const char* what, int32_t session, uint64_t n) {
  return std::string("~") + what + "/s" + std::to_string(session) + "/" +
         std::to_string(n);
}

}  // namespace

std::vector<int64_t> EncodeRunRequest(const RunRequest& r) {
  std::vector<int64_t> w = {kMagic,
                            r.kind,
                            r.run,
                            r.timeout_ms,
                            static_cast<int64_t>(r.names),
                            static_cast<int64_t>(r.feeds.size()),
                            static_cast<int64_t>(r.fetches.size()),
                            static_cast<int64_t>(r.targets.size())};
  for (const auto* list : {&r.feeds, &r.fetches})
    for (const auto& [id, index] : *list) {
      w.push_back(id);
      w.push_back(index);
    }
  for (int32_t id : r.targets) w.push_back(id);
  return w;
}

bool DecodeRunRequest(const int64_t* w, size_t count, RunRequest* out,
                      std::string* why) {
  *out = RunRequest();
  if (count < 8 || w[0] != kMagic) {
    *why = "not a run request";
    return false;
  }
  out->kind = w[1];
  out->run = w[2];
  out->timeout_ms = w[3];
  out->names = static_cast<uint64_t>(w[4]);
  if (out->kind != RunRequest::kRun && out->kind != RunRequest::kEnd) {
    *why = "an unknown request kind " + std::to_string(out->kind);
    return false;
  }
  if (out->run < 0 || out->timeout_ms < 0) {
    *why = "a negative run number or timeout";
    return false;
  }
  for (int k = 5; k < 8; ++k)
    if (w[k] < 0 || static_cast<uint64_t>(w[k]) > kMaxEntries) {
      *why = "a count out of range";
      return false;
    }
  const size_t nf = static_cast<size_t>(w[5]), no = static_cast<size_t>(w[6]),
               nt = static_cast<size_t>(w[7]);
  if (count != 8 + 2 * nf + 2 * no + nt) {
    *why = "a length that does not match its counts";
    return false;
  }
  auto id_ok = [](int64_t v) { return v >= 0 && v <= INT32_MAX; };
  size_t at = 8;
  for (auto* list : {&out->feeds, &out->fetches}) {
    const size_t n = list == &out->feeds ? nf : no;
    for (size_t i = 0; i < n; ++i, at += 2) {
      if (!id_ok(w[at]) || !id_ok(w[at + 1])) {
        *why = "a node id or output index out of range";
        return false;
      }
      list->emplace_back(static_cast<int32_t>(w[at]),
                         static_cast<int32_t>(w[at + 1]));
    }
  }
  for (size_t i = 0; i < nt; ++i, ++at) {
    if (!id_ok(w[at])) {
      *why = "a node id out of range";
      return false;
    }
    out->targets.push_back(static_cast<int32_t>(w[at]));
  }
  return true;
}

uint64_t RequestNamesHash(const weft_output* feeds, int32_t num_feeds,
                          const weft_output* fetches, int32_t num_fetches,
                          weft_node* const* targets, int32_t num_targets) {
  std::string all;
  for (int32_t i = 0; i < num_feeds; ++i) all += feeds[i].node->name + '\n';
  all += '|';
  for (int32_t i = 0; i < num_fetches; ++i)
    all += fetches[i].node->name + '\n';
  all += '|';
  for (int32_t i = 0; i < num_targets; ++i) all += targets[i]->name + '\n';
  return distributed::NameHash(all);
}

namespace {

TensorValue Int64Value(const std::vector<int64_t>& words) {
  TensorValue v;
  v.dtype = WEFT_INT64;
  const int64_t n = static_cast<int64_t>(words.size());
  v.dims.assign(&n, 1);
  v.buffer = AllocateHostBuffer(words.size() * sizeof(int64_t), false);
  if (v.buffer)
    std::memcpy(v.host_data(), words.data(), words.size() * sizeof(int64_t));
  return v;
}

// A status as a message: code (4 bytes), then the text.
TensorValue StatusValue(const weft_status* st) {
  const int32_t code = st ? weft_status_code(st) : 0;
  const std::string text = st ? weft_status_message(st) : "";
  TensorValue v;
  v.dtype = WEFT_UINT8;
  const int64_t n = static_cast<int64_t>(sizeof code + text.size());
  v.dims.assign(&n, 1);
  v.buffer = AllocateHostBuffer(static_cast<size_t>(n), false);
  if (v.buffer) {
    auto* p = static_cast<char*>(v.host_data());
    std::memcpy(p, &code, sizeof code);
    std::memcpy(p + sizeof code, text.data(), text.size());
  }
  return v;
}

// The status a reply or an abort carries; `name_sender` prefixes the
// sender's task (a server's own message names it already).
weft_status* StatusOf(const TensorValue& v, const std::string& from,
                      bool name_sender) {
  const size_t n = v.byte_size();
  if (v.dtype != WEFT_UINT8 || n < sizeof(int32_t))
    return Errorf(WEFT_DATA_LOSS, "a malformed reply from task %s",
                  from.c_str());
  int32_t code = 0;
  const auto* p = static_cast<const char*>(v.host_data());
  std::memcpy(&code, p, sizeof code);
  if (code == 0) return nullptr;
  if (code < 0 || code > WEFT_UNAUTHENTICATED) code = WEFT_UNKNOWN;
  const std::string text(p + sizeof code, n - sizeof code);
  if (!name_sender) return Errorf(static_cast<weft_code>(code), "%s",
                                  text.c_str());
  return Errorf(static_cast<weft_code>(code), "task %s: %s", from.c_str(),
                text.c_str());
}

// A message nobody waits for the outcome of.
void Post(int32_t dest, const std::string& key, TensorValue value) {
  weft_status_destroy(
      distributed::SendMessage(dest, key, std::move(value), nullptr));
}

// The replies a client's run waits for.
struct Replies {
  std::mutex mu;
  std::condition_variable cv;
  int32_t pending = 0;
  weft_status* error = nullptr;  // the first server's failure
  RunCanceller local;            // ends the local part on that failure
  ~Replies() { weft_status_destroy(error); }
};

}  // namespace

// ---- The client's side -----------------------------------------------------

weft_status* ExecuteWithServers(weft_session* session, const Plan& plan,
                                const weft_output* feeds, int32_t num_feeds,
                                const weft_output* fetches,
                                int32_t num_fetches,
                                weft_node* const* targets,
                                int32_t num_targets,
                                std::vector<TensorValue> in,
                                std::vector<TensorValue>* fetched,
                                RunStats* stats, const RunControl& control) {
  const distributed::Cluster& c = *session->cluster;
  AsyncClient& me = *session->async;
  RunRequest req;
  req.names = plan.request_names;
  for (int32_t i = 0; i < num_feeds; ++i)
    req.feeds.emplace_back(feeds[i].node->id, feeds[i].index);
  for (int32_t i = 0; i < num_fetches; ++i)
    req.fetches.emplace_back(fetches[i].node->id, fetches[i].index);
  for (int32_t i = 0; i < num_targets; ++i)
    req.targets.push_back(targets[i]->id);
  if (control.has_deadline)
    req.timeout_ms = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(
               control.deadline - Clock::now())
               .count());
  auto replies = std::make_shared<Replies>();
  {
    std::lock_guard<std::mutex> lock(me.mu);
    req.run = static_cast<int64_t>(me.next_run++);
  }
  replies->pending = static_cast<int32_t>(plan.task_peers.size());
  std::vector<std::pair<int32_t, uint64_t>> waits;
  for (int32_t server : plan.task_peers) {
    const std::string from = c.TaskName(server);
    uint64_t id = 0;
    weft_status* st = distributed::ReceiveMessage(
        server, Key("reply", c.session, static_cast<uint64_t>(req.run)),
        true,
        [replies, from](weft_status* st, TensorValue v) {
          if (st == nullptr) st = StatusOf(v, from, false);
          std::lock_guard<std::mutex> lock(replies->mu);
          if (st != nullptr && replies->error == nullptr) {
            replies->error = Errorf(weft_status_code(st), "%s",
                                    weft_status_message(st));
            // The local part would wait for values that never come.
            replies->local.Cancel(st);
          }
          weft_status_destroy(st);
          replies->pending--;
          replies->cv.notify_all();
        },
        &id);
    if (st != nullptr) return st;
    waits.emplace_back(server, id);
  }
  {
    // Requests to one server are numbered in the order sent.
    std::lock_guard<std::mutex> lock(me.mu);
    const TensorValue words = Int64Value(EncodeRunRequest(req));
    if (!words.buffer)
      return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory for a run request");
    for (int32_t server : plan.task_peers) {
      const uint64_t n = me.sent[static_cast<size_t>(server)]++;
      WEFT_RETURN_IF_ERROR(
          distributed::SendMessage(server, Key("run", c.session, n), words,
                                   nullptr));
    }
  }
  RunControl local = control;
  local.canceller = &replies->local;
  local.task_run = req.run;
  weft_status* st = Execute(session, plan, std::move(in), fetched, stats,
                            local);
  std::unique_lock<std::mutex> lock(replies->mu);
  if (st != nullptr) {
    // A server's failure cancelled this run: say what failed there.
    if (replies->error != nullptr) {
      weft_status_destroy(st);
      return Errorf(weft_status_code(replies->error), "%s",
                    weft_status_message(replies->error));
    }
    lock.unlock();
    // The servers' parts would wait for this part's values.
    for (int32_t server : plan.task_peers)
      Post(server, Key("abort", c.session, static_cast<uint64_t>(req.run)),
           StatusValue(st));
    return st;
  }
  auto all_in = [&] { return replies->pending == 0; };
  if (control.has_deadline) {
    if (!replies->cv.wait_until(lock, control.deadline, all_in)) {
      lock.unlock();
      std::string late;
      for (const auto& [server, id] : waits)
        if (distributed::CancelMessage(
                server, Key("reply", c.session, static_cast<uint64_t>(req.run)),
                id))
          late += (late.empty() ? "" : ", ") + c.TaskName(server);
      const std::string alive = distributed::Liveness(1000, -1);
      return Errorf(WEFT_UNAVAILABLE,
                    "the run's deadline passed before serving task(s) %s "
                    "said how their part of it went%s%s",
                    late.empty() ? "(all answered at the deadline)"
                                 : late.c_str(),
                    alive.empty() ? "" : ": ", alive.c_str());
    }
  } else {
    replies->cv.wait(lock, all_in);
  }
  if (replies->error != nullptr)
    return Errorf(weft_status_code(replies->error), "%s",
                  weft_status_message(replies->error));
  return nullptr;
}

void EndClient(weft_session* session) {
  const distributed::Cluster* c = session->cluster.get();
  if (c == nullptr || !c->async() || c->Serves(c->local) || !session->async)
    return;
  RunRequest end;
  end.kind = RunRequest::kEnd;
  const TensorValue words = Int64Value(EncodeRunRequest(end));
  if (!words.buffer) return;
  // Waits (a little) for the messages to leave: the program may exit next.
  struct Sent {
    std::mutex mu;
    std::condition_variable cv;
    int32_t left = 0;
  };
  auto sent = std::make_shared<Sent>();
  std::lock_guard<std::mutex> lock(session->async->mu);
  for (int32_t r = 0; r < c->size(); ++r) {
    if (!c->Serves(r)) continue;
    const uint64_t n = session->async->sent[static_cast<size_t>(r)]++;
    {
      std::lock_guard<std::mutex> l(sent->mu);
      sent->left++;
    }
    weft_status* st = distributed::SendMessage(
        r, Key("run", c->session, n), words, [sent](weft_status* st) {
          weft_status_destroy(st);
          std::lock_guard<std::mutex> l(sent->mu);
          sent->left--;
          sent->cv.notify_all();
        });
    if (st != nullptr) {
      std::fprintf(stderr,
                   "weft: could not tell serving task %s that task %s ended "
                   "its session: %s\n",
                   c->TaskName(r).c_str(), c->TaskName(c->local).c_str(),
                   weft_status_message(st));
      weft_status_destroy(st);
      std::lock_guard<std::mutex> l(sent->mu);
      sent->left--;
    }
  }
  std::unique_lock<std::mutex> l(sent->mu);
  sent->cv.wait_for(l, std::chrono::seconds(10),
                    [&] { return sent->left == 0; });
}

// ---- The server's side -----------------------------------------------------

namespace {

// One client's requests, taken in order.  Shared with the wait for the
// next request, which may outlive serving (a client that never ends).
class Lane : public std::enable_shared_from_this<Lane> {
 public:
  Lane(weft_session* s, int32_t client) : s_(s), client_(client) {}
  ~Lane() {
    for (auto& message : inbox_) weft_status_destroy(message.first);
  }

  void Start() {
    Listen();
    thread_ = std::thread([this] { Loop(); });
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  int32_t client() const { return client_; }
  bool ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }
  // The client is gone: end its run in flight and stop waiting for it.
  void Drop(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    dropped_ = why;
    weft_status* st = Error(WEFT_UNAVAILABLE, why);
    if (current_) current_->Cancel(st);
    weft_status_destroy(st);
    cv_.notify_all();
  }
  std::string dropped() {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }

 private:
  const distributed::Cluster& cluster() const { return *s_->cluster; }

  void Listen() {
    uint64_t id = 0;
    const uint64_t n = next_;
    weft_status* st = distributed::ReceiveMessage(
        client_, Key("run", cluster().session, n), false,
        [self = shared_from_this()](weft_status* st, TensorValue v) {
          std::lock_guard<std::mutex> lock(self->mu_);
          self->inbox_.emplace_back(st, std::move(v));
          self->cv_.notify_all();
        },
        &id);
    if (st != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      inbox_.emplace_back(st, TensorValue());
    }
  }

  void Loop() {
    for (;;) {
      std::pair<weft_status*, TensorValue> msg;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !inbox_.empty() || !dropped_.empty(); });
        if (!dropped_.empty()) return;
        msg = std::move(inbox_.front());
        inbox_.pop_front();
      }
      next_++;
      RunRequest req;
      std::string why;
      weft_status* st = msg.first;
      if (st == nullptr &&
          (msg.second.dtype != WEFT_INT64 ||
           !DecodeRunRequest(
               static_cast<const int64_t*>(msg.second.host_data()),
               static_cast<size_t>(msg.second.elements()), &req, &why)))
        st = Errorf(WEFT_DATA_LOSS, "a malformed run request (%s)",
                    why.empty() ? "not int64 words" : why.c_str());
      if (st == nullptr && req.kind == RunRequest::kEnd) {
        std::lock_guard<std::mutex> lock(mu_);
        ended_ = true;
        return;
      }
      Listen();  // the next request may land while this one runs
      if (st != nullptr) {
        // Nobody can be told (no run number): say it here, go on.
        std::fprintf(stderr,
                     "weft: serving task %s dropped request %llu of task "
                     "%s: %s\n",
                     cluster().TaskName(cluster().local).c_str(),
                     static_cast<unsigned long long>(next_ - 1),
                     cluster().TaskName(client_).c_str(),
                     weft_status_message(st));
        weft_status_destroy(st);
        continue;
      }
      st = Run(req);
      Post(client_, Key("reply", cluster().session,
                        static_cast<uint64_t>(req.run)),
           StatusValue(st));
      weft_status_destroy(st);
    }
  }

  weft_status* Node(int32_t id, const char* what, weft_node** out) {
    *out = s_->graph->At(id);
    if (*out == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "its %s names node %d, which this task's graph does not "
                    "have (the tasks run different programs)", what, id);
    return nullptr;
  }

  weft_status* Output(const std::pair<int32_t, int32_t>& o, const char* what,
                      weft_output* out) {
    WEFT_RETURN_IF_ERROR(Node(o.first, what, &out->node));
    out->index = o.second;
    if (o.second >= static_cast<int32_t>(out->node->output_dtypes.size()))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "its %s names output %d of '%s', which has %zu (the "
                    "tasks run different programs)", what, o.second,
                    out->node->name.c_str(), out->node->output_dtypes.size());
    return nullptr;
  }

  weft_status* Run(const RunRequest& req) {
    const std::string where = "serving task " +
                              cluster().TaskName(cluster().local) +
                              ", run " + std::to_string(req.run) + " of " +
                              cluster().TaskName(client_);
    return Annotate(Guard([&]() -> weft_status* {
                      return RunChecked(req);
                    }),
                    where);
  }

  weft_status* RunChecked(const RunRequest& req) {
    std::vector<weft_output> feeds(req.feeds.size()),
        fetches(req.fetches.size());
    std::vector<weft_node*> targets(req.targets.size());
    for (size_t i = 0; i < feeds.size(); ++i)
      WEFT_RETURN_IF_ERROR(Output(req.feeds[i], "feeds", &feeds[i]));
    for (size_t i = 0; i < fetches.size(); ++i)
      WEFT_RETURN_IF_ERROR(Output(req.fetches[i], "fetches", &fetches[i]));
    for (size_t i = 0; i < targets.size(); ++i)
      WEFT_RETURN_IF_ERROR(Node(req.targets[i], "targets", &targets[i]));
    const int32_t nf = static_cast<int32_t>(feeds.size()),
                  no = static_cast<int32_t>(fetches.size()),
                  nt = static_cast<int32_t>(targets.size());
    std::shared_ptr<Plan> plan;
    WEFT_RETURN_IF_ERROR(FindPlan(s_, feeds.data(), nf, fetches.data(), no,
                                  targets.data(), nt, &plan, client_));
    if (plan->request_names != req.names)
      return Error(WEFT_INVALID_ARGUMENT,
                   "its nodes' names differ from this task's nodes of the "
                   "same ids (the tasks run different programs)");
    RunControl control;
    if (req.timeout_ms > 0) {
      control.has_deadline = true;
      control.deadline = Clock::now() + std::chrono::milliseconds(
                                            std::min<int64_t>(
                                                req.timeout_ms,
                                                int64_t{1} << 40));
    }
    control.task_run = req.run;
    // The client's own failure ends this part too, even when its abort
    // arrives before this part starts.
    auto canceller = std::make_shared<RunCanceller>();
    control.canceller = canceller.get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dropped_.empty()) return Error(WEFT_UNAVAILABLE, dropped_);
      current_ = canceller;
    }
    const std::string abort_key = Key("abort", cluster().session,
                                      static_cast<uint64_t>(req.run));
    uint64_t abort_id = 0;
    weft_status* st = distributed::ReceiveMessage(
        client_, abort_key, false,
        [canceller, from = cluster().TaskName(client_)](weft_status* st,
                                                        TensorValue v) {
          if (st == nullptr) st = StatusOf(v, from, true);
          weft_status* why = Errorf(
              WEFT_CANCELLED, "the running task's part failed%s%s",
              st ? ": " : "", st ? weft_status_message(st) : "");
          canceller->Cancel(why);
          weft_status_destroy(why);
          weft_status_destroy(st);
        },
        &abort_id);
    if (st == nullptr) {
      std::vector<TensorValue> in(plan->feed_slots.size());
      std::vector<TensorValue> fetched;
      st = Execute(s_, *plan, std::move(in), &fetched, nullptr, control);
      distributed::CancelMessage(client_, abort_key, abort_id);
    }
    std::lock_guard<std::mutex> lock(mu_);
    current_.reset();
    return st;
  }

  weft_session* s_;
  const int32_t client_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<weft_status*, TensorValue>> inbox_;
  uint64_t next_ = 0;  // the request Listen waits for next
  bool ended_ = false;
  std::shared_ptr<RunCanceller> current_;  // of the run in flight
  std::string dropped_;
};

}  // namespace

weft_status* Serve(weft_session* session) {
  const distributed::Cluster* c = session->cluster.get();
  if (c == nullptr || !c->async())
    return Error(WEFT_FAILED_PRECONDITION,
                 "weft_session_serve: this session is not an asynchronous "
                 "cluster session (set the session options cluster and "
                 "serving_jobs)");
  if (!c->Serves(c->local))
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "weft_session_serve: task %s does not serve (it is not in "
                  "a serving job): its runs go on their own, with "
                  "weft_session_run",
                  c->TaskName(c->local).c_str());
  {
    std::lock_guard<std::mutex> lock(session->async->mu);
    if (session->async->serving)
      return Error(WEFT_FAILED_PRECONDITION,
                   "weft_session_serve: the session is serving already");
    session->async->serving = true;
  }
  std::vector<std::shared_ptr<Lane>> lanes;
  for (int32_t r = 0; r < c->size(); ++r)
    if (!c->Serves(r)) lanes.push_back(std::make_shared<Lane>(session, r));
  for (auto& lane : lanes) lane->Start();
  // Clients that end their process without ending their session (a crash,
  // a kill, a stop) stop answering liveness checks: two checks missed in a
  // row drop the lane, ending its run in flight (which would wait for the
  // client's values until its deadline).
  std::vector<int32_t> missed(lanes.size(), 0);
  Clock::time_point last_check = Clock::now();
  for (;;) {
    bool all_ended = true;
    for (size_t i = 0; i < lanes.size(); ++i)
      all_ended &= lanes[i]->ended() || !lanes[i]->dropped().empty();
    if (all_ended) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (Clock::now() - last_check < std::chrono::seconds(2)) continue;
    last_check = Clock::now();
    std::vector<uint8_t> answered;
    if (!distributed::Answering(1000, &answered)) continue;
    for (size_t i = 0; i < lanes.size(); ++i) {
      Lane& lane = *lanes[i];
      if (lane.ended() || !lane.dropped().empty()) continue;
      if (answered[static_cast<size_t>(lane.client())]) {
        missed[i] = 0;
        continue;
      }
      if (++missed[i] >= 2)
        lane.Drop("task " + c->TaskName(lane.client()) + " (rank " +
                  std::to_string(lane.client()) +
                  ") stopped answering liveness checks without ending its "
                  "session: dead or stopped");
    }
  }
  std::string dead;
  for (auto& lane : lanes) {
    lane->Join();
    const std::string why = lane->dropped();
    if (!why.empty()) dead += (dead.empty() ? "" : "; ") + why;
  }
  {
    std::lock_guard<std::mutex> lock(session->async->mu);
    session->async->serving = false;
  }
  if (!dead.empty())
    return Errorf(WEFT_UNAVAILABLE, "weft_session_serve: %s", dead.c_str());
  return nullptr;
}

}  // namespace weft
