// Asynchronous clusters (weft_session_options.serving_jobs): the tasks of
// the serving jobs (parameter servers) execute their part of the runs the
// other tasks make, each of those at its own pace.
//
// A run of task C whose plan has nodes on serving tasks sends each of them
// a run request (the feeds', fetches' and targets' node ids, C's number for
// the run, its deadline) as a message of the rendezvous keyed
//
//   ~run/s<session>/<n>      n counts C's requests to that server
//
// The server keeps one lane per client: it takes the client's requests in
// the order they were sent, plans each as C does (the same graph, the same
// ids, C as the running task: both ends cut the same edges), executes it
// with C's run number in its transfer keys, and answers
//
//   ~reply/s<session>/<run>  the run's status (code, message)
//
// Different clients' lanes run at once: their updates of a server's
// variables interleave, which is asynchronous training.  A client whose
// own part fails sends ~abort/s<session>/<run> so the server's part ends
// too; a server's failure cancels the client's run.  A client's session,
// destroyed, sends its lanes an end request; serving returns when every
// lane has ended, or found its client dead (liveness checks while idle).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "session/executor.h"

namespace weft {

// A run request as it travels (int64 words).
struct RunRequest {
  static constexpr int64_t kRun = 0;
  static constexpr int64_t kEnd = 1;
  int64_t kind = kRun;
  int64_t run = 0;         // the client's number for the run
  int64_t timeout_ms = 0;  // 0: no deadline
  uint64_t names = 0;      // hash of the named nodes' names
  std::vector<std::pair<int32_t, int32_t>> feeds, fetches;  // id, index
  std::vector<int32_t> targets;
};
std::vector<int64_t> EncodeRunRequest(const RunRequest& r);
// False, with `why`, for words that are not a request (they come from
// another process).
bool DecodeRunRequest(const int64_t* words, size_t count, RunRequest* out,
                      std::string* why);

// What both ends of a request hash (kept in the plan): the names of the
// nodes it names, so that a server whose graph differs says so instead of
// waiting for transfers that never come.
uint64_t RequestNamesHash(const weft_output* feeds, int32_t num_feeds,
                          const weft_output* fetches, int32_t num_fetches,
                          weft_node* const* targets, int32_t num_targets);

// A client's state in an asynchronous cluster session.
struct AsyncClient {
  std::mutex mu;
  std::vector<uint64_t> sent;  // by server rank: requests sent so far
  uint64_t next_run = 0;
  bool serving = false;  // weft_session_serve is running (servers)
};

// Executes `plan` (a run of this task whose nodes reach serving tasks),
// with the servers' parts: RunSession's Execute in an asynchronous
// cluster.
weft_status* ExecuteWithServers(weft_session* session, const Plan& plan,
                                const weft_output* feeds, int32_t num_feeds,
                                const weft_output* fetches,
                                int32_t num_fetches,
                                weft_node* const* targets,
                                int32_t num_targets,
                                std::vector<TensorValue> in,
                                std::vector<TensorValue>* fetched,
                                RunStats* stats, const RunControl& control);

// weft_session_serve.
weft_status* Serve(weft_session* session);

// At weft_session_destroy of a client: tells every server its lane ends.
void EndClient(weft_session* session);

}  // namespace weft
