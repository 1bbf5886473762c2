#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "distributed/cluster.h"
#include "graph/graph.h"
#include "ops/runtime_op.h"
#include "session/plan.h"
#include "session/thread_pool.h"
#include "session/variables.h"

namespace weft {
namespace exec {
class Run;
}
struct AsyncClient;

// Streams of one async device, reused across runs: each run takes one.
class StreamPool {
 public:
  explicit StreamPool(Device* d) : device_(d) {}
  ~StreamPool();
  weft_status* Acquire(weft_plugin_stream** out);
  void Release(weft_plugin_stream* s);
  Device* device() const { return device_; }

 private:
  Device* device_;
  std::mutex mu_;
  std::vector<weft_plugin_stream*> free_;
};

struct TensorValue;

// Whether `v` may be fed to output `o`: its dtype, and a shape the graph
// allows there.
weft_status* CheckFeedValue(weft_output o, const TensorValue& v);

// A session's cached plan under its request's key (see FindPlan).  Never
// erased: an entry lives as long as its session.
using PlanEntry = std::pair<const std::string, std::shared_ptr<Plan>>;

// The session's plan for these feeds, fetches and targets, from its cache
// or built now.  The caller has checked that they are outputs and nodes of
// the session's graph.  `client`: in an asynchronous cluster, the task
// whose run it is (-1: this one).
weft_status* FindPlan(weft_session* session, const weft_output* feeds,
                      int32_t num_feeds, const weft_output* fetches,
                      int32_t num_fetches, weft_node* const* targets,
                      int32_t num_targets, std::shared_ptr<Plan>* out,
                      int32_t client = -1);
// The same, as the cache's entry: a caller done with the plan before the
// session ends (RunSession) takes no reference.
weft_status* FindPlanEntry(weft_session* session, const weft_output* feeds,
                           int32_t num_feeds, const weft_output* fetches,
                           int32_t num_fetches, weft_node* const* targets,
                           int32_t num_targets, int32_t client,
                           const PlanEntry** out);

}  // namespace weft

struct weft_session {
  std::shared_ptr<weft::Graph> graph;
  std::vector<weft::Device*> devices;
  int32_t inter_op_threads = 1;
  int32_t intra_op_threads = 1;
  // intra_op_threads was left to the runtime: each plan's runs choose up to
  // intra_op_threads by timing (thread_tuner.h).
  bool intra_op_auto = false;
  std::unique_ptr<weft::ThreadPool> pool;  // null when single-threaded
  weft::VariableStore variables;
  weft::PlanOptions plan_options;
  std::unique_ptr<weft::CostModel> costs;
  // A cluster session's tasks (weft_session_options.cluster); null for a
  // session of this process alone.
  std::unique_ptr<weft::distributed::Cluster> cluster;
  // An asynchronous cluster's bookkeeping (session/serve.h); null
  // otherwise.
  std::unique_ptr<weft::AsyncClient> async;

  std::mutex plan_mu;
  std::unordered_map<std::string, std::shared_ptr<weft::Plan>> plans;
  // The entry of `plans` found last: a program that runs the same request
  // over and over finds it with a compare, without plan_mu.
  std::atomic<const weft::PlanEntry*> last_plan{nullptr};

  std::mutex stream_mu;
  std::vector<std::unique_ptr<weft::StreamPool>> stream_pools;
  weft::StreamPool* StreamsFor(weft::Device* d);

  // Queues and other state of runtime ops that outlives a run.
  weft::SessionResources resources;
  // Runs in flight, for weft_session_cancel.  A run takes a free entry of
  // run_slots with one compare-and-swap and clears it with another; a
  // canceller holds an entry (swaps in weft::kRunHeld) while it reaches
  // the run there, so the run cannot leave under it.  Runs beyond
  // kRunSlots at once are listed in `runs`.
  static constexpr int kRunSlots = 16;
  std::atomic<weft::exec::Run*> run_slots[kRunSlots] = {};
  std::mutex runs_mu;  // cancellers, and `runs`
  std::vector<weft::exec::Run*> runs;
};
