// The session C API: options, plan caching, feeds and fetches.
#include "session/session.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <strings.h>
#include <thread>

#include "base/hot.h"
#include "base/status.h"
#include "device/registry.h"
#include "distributed/transfer.h"
#include "session/device_set.h"
#include "session/executor.h"
#include "session/run_metadata.h"
#include "session/serve.h"
#include "weft/session.h"

namespace weft {

StreamPool::~StreamPool() {
  for (weft_plugin_stream* s : free_)
    device_->api->stream_destroy(device_->handle, s);
}

weft_status* StreamPool::Acquire(weft_plugin_stream** out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      return nullptr;
    }
  }
  return device_->api->stream_create(device_->handle, out);
}

void StreamPool::Release(weft_plugin_stream* s) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(s);
}

namespace {

int32_t DefaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  if (n == 0) return 1;
  return static_cast<int32_t>(
      std::min<unsigned>(n, WEFT_SESSION_MAX_THREADS));
}

weft_status* CheckThreadCount(int32_t count, const char* option) {
  if (count < 0 || count > WEFT_SESSION_MAX_THREADS)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "session option %s is %d; it must be 0..%d (0 picks the "
                  "core count)", option, count, WEFT_SESSION_MAX_THREADS);
  return nullptr;
}

weft_status* CheckOutput(const weft_session* s, weft_output o,
                         const char* what, int32_t i) {
  if (!s->graph->Owns(o.node))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s %d does not name a node of this session's graph", what,
                  i);
  int32_t n = static_cast<int32_t>(o.node->output_dtypes.size());
  if (o.index < 0 || o.index >= n)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s %d names output %d of '%s' (%s), which has %d output%s",
                  what, i, o.index, o.node->name.c_str(),
                  o.node->op_type.c_str(), n, n == 1 ? "" : "s");
  return nullptr;
}

weft_status* CheckFeed(weft_output o, const weft_tensor* t, int32_t i) {
  if (t == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "feed %d ('%s:%d') has no tensor", i,
                  o.node->name.c_str(), o.index);
  return CheckFeedValue(o, t->value);
}

}  // namespace

weft_status* CheckFeedValue(weft_output o, const TensorValue& v) {
  weft_dtype want = o.node->output_dtypes[o.index];
  if (v.dtype != want)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "feed for '%s:%d' is %s but the graph expects %s",
                  o.node->name.c_str(), o.index, weft_dtype_name(v.dtype),
                  weft_dtype_name(want));
  const ShapeInfo& s = o.node->output_shapes[o.index];
  const Dims& d = v.dims;
  bool ok = s.rank < 0 || s.rank == d.rank();
  for (int32_t k = 0; ok && k < s.rank; ++k)
    ok = s.dims[k] < 0 || s.dims[k] == d[k];
  if (!ok)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "feed for '%s:%d' has shape %s but the graph expects %s",
                  o.node->name.c_str(), o.index, d.ToString().c_str(),
                  s.ToString().c_str());
  return nullptr;
}

namespace {

// Turns a fetched value into a host tensor for the caller.  Values that are
// state (variables, constants) are copied so the caller can never write into
// them; everything else is handed over without a copy when it is in host
// memory (moved out of `v`).
weft_status* ToHostTensor(TensorValue& v, weft_tensor** out) {
  auto* t = new weft_tensor;
  std::unique_ptr<weft_tensor> guard(t);
  Device* d = v.device();
  if (d != nullptr && !d->host_memory()) {
    size_t bytes = v.byte_size();
    t->value.dtype = v.dtype;
    t->value.dims = v.dims;
    t->value.buffer = AllocateHostBuffer(bytes);
    if (bytes > 0 && !t->value.buffer)
      return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory for a fetch");
    if (bytes > 0)
      WEFT_RETURN_IF_ERROR(d->api->copy_device_to_host(
          d->handle, nullptr, v.buffer->handle, v.offset,
          t->value.buffer->handle, bytes));
  } else if (v.buffer && v.buffer->is_state) {
    WEFT_RETURN_IF_ERROR(CopyToNewHostValue(v, &t->value));
  } else {
    t->value = std::move(v);
  }
  *out = guard.release();
  return nullptr;
}

// An enum option: the session's value when set, else the environment
// variable's (by name), else the default (0).
weft_status* EnumOption(int32_t value, const char* option, const char* env,
                        const std::vector<const char*>& names,
                        int32_t* out) {
  if (value < 0 || value >= static_cast<int32_t>(names.size()))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "session option %s is %d; it must be 0..%zu", option, value,
                  names.size() - 1);
  *out = value;
  const char* e = getenv(env);
  if (value != 0 || e == nullptr || *e == '\0') return nullptr;
  std::string known;
  for (size_t i = 0; i < names.size(); ++i) {
    if (strcasecmp(e, names[i]) == 0) {
      *out = static_cast<int32_t>(i);
      return nullptr;
    }
    known += (known.empty() ? "" : ", ") + std::string(names[i]);
  }
  return Errorf(WEFT_INVALID_ARGUMENT, "%s is '%s'; it must be one of: %s",
                env, e, known.c_str());
}

}  // namespace

weft_status* ReadPlanOptions(const weft_session_options& o, PlanOptions* out) {
  WEFT_RETURN_IF_ERROR(EnumOption(o.placement, "placement", "WEFT_PLACEMENT",
                                  {"soft", "strict"}, &out->placement));
  WEFT_RETURN_IF_ERROR(EnumOption(
      o.transfer_precision, "transfer_precision", "WEFT_TRANSFER_PRECISION",
      {"exact", "bfloat16", "float16"}, &out->transfer_precision));
  out->optimizations = o.optimizations;
  WEFT_RETURN_IF_ERROR(EnumOption(o.recompute, "recompute", "WEFT_RECOMPUTE",
                                  {"off", "cheap"}, &out->recompute));
  return nullptr;
}

}  // namespace weft

weft::StreamPool* weft_session::StreamsFor(weft::Device* d) {
  std::lock_guard<std::mutex> lock(stream_mu);
  for (auto& p : stream_pools)
    if (p->device() == d) return p.get();
  stream_pools.push_back(std::make_unique<weft::StreamPool>(d));
  return stream_pools.back().get();
}

using weft::Error;
using weft::Errorf;

namespace weft {

namespace {

// A request's cache key: 1 + 4 + 4 raw bytes per (tag, id, index).
constexpr size_t kKeyEntry = 1 + 2 * sizeof(int32_t);

size_t KeyLength(int32_t client, int32_t num_feeds, int32_t num_fetches,
                 int32_t num_targets) {
  return kKeyEntry * (static_cast<size_t>(client >= 0) +
                      static_cast<size_t>(num_feeds) +
                      static_cast<size_t>(num_fetches) +
                      static_cast<size_t>(num_targets));
}

// Writes the key (KeyLength bytes) at `key`.
void WriteKey(int32_t client, const weft_output* feeds, int32_t num_feeds,
              const weft_output* fetches, int32_t num_fetches,
              weft_node* const* targets, int32_t num_targets, char* key) {
  auto put = [&key](char tag, int32_t id, int32_t index) {
    key[0] = tag;
    std::memcpy(key + 1, &id, sizeof id);
    std::memcpy(key + 1 + sizeof id, &index, sizeof index);
    key += kKeyEntry;
  };
  if (client >= 0) put('c', client, 0);
  for (int32_t i = 0; i < num_feeds; ++i)
    put('f', feeds[i].node->id, feeds[i].index);
  for (int32_t i = 0; i < num_fetches; ++i)
    put('o', fetches[i].node->id, fetches[i].index);
  for (int32_t i = 0; i < num_targets; ++i) put('t', targets[i]->id, 0);
}

// Whether `key` (WriteKey's bytes) is the key of this request: compared
// in place, without writing the request's key first.
bool KeyMatches(const std::string& key, int32_t client,
                const weft_output* feeds, int32_t num_feeds,
                const weft_output* fetches, int32_t num_fetches,
                weft_node* const* targets, int32_t num_targets) {
  if (key.size() != KeyLength(client, num_feeds, num_fetches, num_targets))
    return false;
  const char* at = key.data();
  auto same = [&at](char tag, int32_t id, int32_t index) {
    int32_t have_id, have_index;
    std::memcpy(&have_id, at + 1, sizeof have_id);
    std::memcpy(&have_index, at + 1 + sizeof have_id, sizeof have_index);
    const bool ok = at[0] == tag && have_id == id && have_index == index;
    at += kKeyEntry;
    return ok;
  };
  if (client >= 0 && !same('c', client, 0)) return false;
  for (int32_t i = 0; i < num_feeds; ++i)
    if (!same('f', feeds[i].node->id, feeds[i].index)) return false;
  for (int32_t i = 0; i < num_fetches; ++i)
    if (!same('o', fetches[i].node->id, fetches[i].index)) return false;
  for (int32_t i = 0; i < num_targets; ++i)
    if (!same('t', targets[i]->id, 0)) return false;
  return true;
}

}  // namespace

weft_status* FindPlan(weft_session* session, const weft_output* feeds,
                      int32_t num_feeds, const weft_output* fetches,
                      int32_t num_fetches, weft_node* const* targets,
                      int32_t num_targets, std::shared_ptr<Plan>* out,
                      int32_t client) {
  const PlanEntry* entry = nullptr;
  WEFT_RETURN_IF_ERROR(FindPlanEntry(session, feeds, num_feeds, fetches,
                                     num_fetches, targets, num_targets,
                                     client, &entry));
  *out = entry->second;
  return nullptr;
}

namespace {

// FindPlanEntry past the last run's plan: the request's key is written and
// looked up, and the plan built when there is none.
__attribute__((noinline)) weft_status* FindPlanEntrySlow(
    weft_session* session, const weft_output* feeds, int32_t num_feeds,
    const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets, int32_t client,
    const PlanEntry** out) {
  const distributed::Cluster* cluster = session->cluster.get();
  // The request's key, on the stack: a run that finds its plan allocates
  // nothing for it.
  char stack_key[32 * kKeyEntry];
  std::string heap_key;  // for requests too long for the stack
  const size_t length =
      KeyLength(client, num_feeds, num_fetches, num_targets);
  char* request = stack_key;
  if (length > sizeof stack_key) {
    heap_key.resize(length);
    request = heap_key.data();
  }
  WriteKey(client, feeds, num_feeds, fetches, num_fetches, targets,
           num_targets, request);
  {
    // Looked up in this thread's buffer: finding a cached plan allocates
    // nothing.
    thread_local std::string lookup;
    lookup.assign(request, length);
    std::lock_guard<std::mutex> lock(session->plan_mu);
    auto it = session->plans.find(lookup);
    if (it != session->plans.end()) {
      *out = &*it;
      session->last_plan.store(*out, std::memory_order_release);
      return nullptr;
    }
  }
  std::string key(request, length);
  std::vector<weft_output> fv(feeds, feeds + num_feeds);
  std::vector<weft_output> ov(fetches, fetches + num_fetches);
  std::vector<weft_node*> tv(targets, targets + num_targets);
  PlanRequest req{&fv, &ov, &tv, &session->devices, &session->variables,
                  &session->plan_options, session->costs.get(), nullptr,
                  std::string()};
  if (cluster != nullptr) {
    // Named alike on every rank: the session's place among the process's
    // cluster sessions and the plan's signature (node ids; in an
    // asynchronous cluster the running task's rank too).
    char name[48];
    std::snprintf(name, sizeof name, "s%d.%016llx", cluster->session,
                  static_cast<unsigned long long>(distributed::NameHash(key)));
    req.cluster = cluster;
    req.name = name;
    req.client = client;
  }
  std::shared_ptr<Plan> plan;
  WEFT_RETURN_IF_ERROR(BuildPlan(req, &plan));
  if (client >= 0)
    plan->request_names = RequestNamesHash(feeds, num_feeds, fetches,
                                           num_fetches, targets, num_targets);
  std::lock_guard<std::mutex> lock(session->plan_mu);
  auto inserted = session->plans.emplace(std::move(key), plan);
  *out = &*inserted.first;  // another thread may have won
  session->last_plan.store(*out, std::memory_order_release);
  return nullptr;
}

}  // namespace

WEFT_HOT weft_status* FindPlanEntry(weft_session* session, const weft_output* feeds,
                           int32_t num_feeds, const weft_output* fetches,
                           int32_t num_fetches, weft_node* const* targets,
                           int32_t num_targets, int32_t client,
                           const PlanEntry** out) {
  const distributed::Cluster* cluster = session->cluster.get();
  if (cluster != nullptr && cluster->async() && client < 0)
    client = cluster->local;
  // A run that asks what the last run asked takes no lock and writes no
  // key.
  if (const PlanEntry* last =
          session->last_plan.load(std::memory_order_acquire)) {
    if (KeyMatches(last->first, client, feeds, num_feeds, fetches,
                   num_fetches, targets, num_targets)) {
      *out = last;
      return nullptr;
    }
  }
  return FindPlanEntrySlow(session, feeds, num_feeds, fetches, num_fetches,
                           targets, num_targets, client, out);
}

WEFT_HOT weft_status* RunSession(weft_session* session, const RunControl& control,
                        const weft_output* feeds,
                        weft_tensor* const* feed_values, int32_t num_feeds,
                        const weft_output* fetches, int32_t num_fetches,
                        weft_node* const* targets, int32_t num_targets,
                        weft_tensor** out_values,
                        weft_run_metadata* metadata) {
  weft_status* result = weft::Guard([&]() -> weft_status* {
    for (int32_t i = 0; i < num_feeds; ++i) {
      WEFT_RETURN_IF_ERROR(weft::CheckOutput(session, feeds[i], "feed", i));
      WEFT_RETURN_IF_ERROR(weft::CheckFeed(feeds[i], feed_values[i], i));
    }
    for (int32_t i = 0; i < num_fetches; ++i)
      WEFT_RETURN_IF_ERROR(weft::CheckOutput(session, fetches[i], "fetch", i));
    for (int32_t i = 0; i < num_targets; ++i)
      if (!session->graph->Owns(targets[i]))
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "target %d is not a node of this session's graph", i);
    const PlanEntry* entry = nullptr;
    WEFT_RETURN_IF_ERROR(FindPlanEntry(session, feeds, num_feeds, fetches,
                                       num_fetches, targets, num_targets, -1,
                                       &entry));
    // The session keeps its plans until it ends.
    const weft::Plan* plan = entry->second.get();
    weft::ValueArray fetched(static_cast<size_t>(num_fetches));
    // Only a run asked for its metadata keeps statistics.  (Not a
    // std::optional: GCC clears its storage, 112 bytes, on every run.)
    std::unique_ptr<weft::RunStats> stats;
    if (metadata) stats = std::make_unique<weft::RunStats>();
    if (metadata) metadata->Describe(*plan);
    // A trace times execution alone: planning (the first run's) is not in.
    if (control.trace != nullptr) control.trace->Start();
    weft_status* st;
    if (session->async != nullptr && !plan->task_peers.empty()) {
      std::vector<weft::TensorValue> in(num_feeds);
      for (int32_t i = 0; i < num_feeds; ++i) in[i] = feed_values[i]->value;
      std::vector<weft::TensorValue> values;
      st = weft::ExecuteWithServers(
          session, *plan, feeds, num_feeds, fetches, num_fetches, targets,
          num_targets, std::move(in), &values,
          stats.get(), control);
      for (size_t i = 0; st == nullptr && i < values.size(); ++i)
        fetched[i] = std::move(values[i]);
    } else {
      weft::ValueArray in(static_cast<size_t>(num_feeds));
      for (int32_t i = 0; i < num_feeds; ++i) in[i] = feed_values[i]->value;
      st = weft::Execute(session, *plan, in.data(), in.size(), fetched.data(),
                         stats.get(), control);
    }
    // What ran before an error is traced too.
    if (metadata && control.trace != nullptr)
      metadata->SetTrace(*plan, *control.trace);
    WEFT_RETURN_IF_ERROR(st);
    if (metadata) metadata->SetPeaks(*plan, *stats);
    for (int32_t i = 0; i < num_fetches; ++i) {
      if (weft_status* st = weft::ToHostTensor(fetched[i], &out_values[i])) {
        for (int32_t j = 0; j < i; ++j) weft_tensor_destroy(out_values[j]);
        return st;
      }
    }
    return nullptr;
  });
  // A failed run returns no values (each fetch's is set on success, so
  // they are not cleared first: a memset call per run).
  if (result != nullptr)
    for (int32_t i = 0; i < num_fetches; ++i) out_values[i] = nullptr;
  return result;
}

}  // namespace weft

extern "C" {

void weft_session_options_init_sized(weft_session_options* options,
                                     size_t size) {
  if (options == nullptr || size < sizeof options->struct_size) return;
  weft_session_options full;
  std::memset(&full, 0, sizeof full);
  full.optimizations = WEFT_OPTIMIZE_ALL;
  full.struct_size = std::min(size, sizeof full);
  std::memcpy(options, &full, full.struct_size);
}

// The exported symbol behind the header's macro, for binaries built against
// earlier headers: it may write no more than 1.0's struct held (through
// intra_op_threads).  Parenthesized so that the macro does not expand here.
void(weft_session_options_init)(weft_session_options* options) {
  weft_session_options_init_sized(
      options, offsetof(weft_session_options, intra_op_threads) +
                   sizeof options->intra_op_threads);
}

weft_status* weft_session_create(weft_graph* graph,
                                 const weft_session_options* options,
                                 weft_session** out_session) {
  if (out_session == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = nullptr;
  if (graph == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  weft_session_options opts;
  weft_session_options_init(&opts);
  if (options != nullptr) {
    if (options->struct_size < offsetof(weft_session_options, devices) +
                                   sizeof(const char*))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "session options struct_size %zu is too small (set it to "
                    "sizeof(weft_session_options))", options->struct_size);
    std::memcpy(&opts, options, std::min(options->struct_size, sizeof opts));
  }
  WEFT_RETURN_IF_ERROR(
      weft::CheckThreadCount(opts.inter_op_threads, "inter_op_threads"));
  WEFT_RETURN_IF_ERROR(
      weft::CheckThreadCount(opts.intra_op_threads, "intra_op_threads"));
  return weft::Guard([&]() -> weft_status* {
    WEFT_RETURN_IF_ERROR(weft::Registry::Get().Discover());
    std::string filter = opts.devices ? opts.devices : "";
    if (filter.empty())
      if (const char* env = getenv("WEFT_DEVICES")) filter = env;
    auto s = std::make_unique<weft_session>();
    s->graph = graph->impl;
    // Only the plugins whose device type the filter can name open their
    // devices: a "CPU" session never starts an OpenCL platform.
    if (weft_status* none = weft::SelectDevices(
            weft::Registry::Get().Devices([&](const std::string& type) {
              return weft::FilterMayName(filter, type);
            }),
            filter, &s->devices)) {
      // Worded against every device there is.
      weft_status_destroy(none);
      WEFT_RETURN_IF_ERROR(weft::SelectDevices(weft::Registry::Get().Devices(),
                                               filter, &s->devices));
    }
    if (s->devices.empty())
      return Error(WEFT_NOT_FOUND,
                   "no device is available: no plugin was found on "
                   "WEFT_PLUGIN_PATH or in the install directory (see `weft "
                   "devices`)");
    s->intra_op_threads = opts.intra_op_threads
                              ? opts.intra_op_threads
                              : weft::DefaultThreads();
    // Left to the runtime, inter-op threads are the cores when kernels run
    // on one thread, and one when kernels may split over several: OpenMP
    // (oneDNN's, and the CPU plugin's loops) gives each thread that starts
    // a parallel region a team of its own, so n inter-op threads running
    // kernels of m threads put n * m threads on the cores, each team
    // waiting at its joins for workers the others hold.  Measured on a
    // 2-core AMD EPYC, idle, 2 intra-op threads (bench/train_cnn): the CNN
    // step at 72-77 steps/s with 2 inter-op threads, 95-96 with 1 (1 thread
    // in all: 51-53); under load both 42-44.
    s->inter_op_threads = opts.inter_op_threads ? opts.inter_op_threads
                          : s->intra_op_threads > 1 ? 1
                                                    : weft::DefaultThreads();
    s->intra_op_auto = opts.intra_op_threads == 0;
    // The calling thread always works too, so n inter-op threads means
    // n - 1 pool workers.
    if (s->inter_op_threads > 1)
      WEFT_RETURN_IF_ERROR(weft::ThreadPool::Create(
          s->inter_op_threads - 1, "session option inter_op_threads",
          &s->pool));
    WEFT_RETURN_IF_ERROR(weft::ReadPlanOptions(opts, &s->plan_options));
    std::string gflops = opts.device_gflops ? opts.device_gflops : "";
    const bool own = !gflops.empty();
    if (!own)
      if (const char* env = getenv("WEFT_DEVICE_GFLOPS")) gflops = env;
    WEFT_RETURN_IF_ERROR(weft::Annotate(
        weft::CostModel::Create(gflops, s->devices, own, &s->costs),
        own ? "session option device_gflops" : "WEFT_DEVICE_GFLOPS"));
    const std::string cluster = opts.cluster ? opts.cluster : "";
    if (!cluster.empty()) {
      const weft::distributed::World* world = nullptr;
      WEFT_RETURN_IF_ERROR(weft::Annotate(weft::distributed::GetWorld(&world),
                                          "session option cluster"));
      s->cluster = std::make_unique<weft::distributed::Cluster>();
      const std::vector<int32_t> apps = weft::distributed::AppContextSizes();
      WEFT_RETURN_IF_ERROR(weft::distributed::ParseCluster(
          cluster, world->size, world->rank, s->cluster.get(),
          apps.empty() ? nullptr : &apps));
      static std::atomic<int32_t> sessions{0};
      s->cluster->session = sessions++;
      const std::string serving = opts.serving_jobs ? opts.serving_jobs : "";
      if (!serving.empty()) {
        WEFT_RETURN_IF_ERROR(
            weft::distributed::ParseServing(serving, s->cluster.get()));
        s->async = std::make_unique<weft::AsyncClient>();
        s->async->sent.assign(static_cast<size_t>(s->cluster->size()), 0);
      }
    } else if (opts.serving_jobs != nullptr && *opts.serving_jobs != '\0') {
      return Error(WEFT_INVALID_ARGUMENT,
                   "session option serving_jobs needs a cluster (session "
                   "option cluster)");
    }
    *out_session = s.release();
    return nullptr;
  });
}

void weft_session_destroy(weft_session* session) {
  if (session == nullptr) return;
  if (session->async != nullptr) weft::EndClient(session);
  delete session;
}

weft_status* weft_session_serve(weft_session* session) {
  if (session == nullptr) return Error(WEFT_INVALID_ARGUMENT, "session is NULL");
  return weft::Guard([&] { return weft::Serve(session); });
}

namespace {

// The counts and arrays of a run's request (the nodes are checked against
// the session's graph in RunSession).
weft_status* CheckRunArrays(const weft_output* feeds,
                            weft_tensor* const* feed_values,
                            int32_t num_feeds, const weft_output* fetches,
                            int32_t num_fetches, weft_node* const* targets,
                            int32_t num_targets, weft_tensor** out_values) {
  if (num_feeds < 0 || num_fetches < 0 || num_targets < 0)
    return Error(WEFT_INVALID_ARGUMENT, "negative count");
  if ((num_feeds > 0 && (feeds == nullptr || feed_values == nullptr)) ||
      (num_fetches > 0 && (fetches == nullptr || out_values == nullptr)) ||
      (num_targets > 0 && targets == nullptr))
    return Error(WEFT_INVALID_ARGUMENT, "an array argument is NULL");
  return nullptr;
}

}  // namespace

// The plain run goes to RunSession directly: no options to read.
WEFT_HOT weft_status* weft_session_run(
    weft_session* session, const weft_output* feeds,
    weft_tensor* const* feed_values, int32_t num_feeds,
    const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets,
    weft_tensor** out_values) {
  if (session == nullptr) return Error(WEFT_INVALID_ARGUMENT, "session is NULL");
  if (weft_status* st =
          CheckRunArrays(feeds, feed_values, num_feeds, fetches, num_fetches,
                         targets, num_targets, out_values))
    return st;
  return weft::RunSession(session, weft::RunControl(), feeds, feed_values,
                          num_feeds, fetches, num_fetches, targets,
                          num_targets, out_values, nullptr);
}

weft_status* weft_session_run_with_metadata(
    weft_session* session, const weft_output* feeds,
    weft_tensor* const* feed_values, int32_t num_feeds,
    const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets,
    weft_tensor** out_values, weft_run_metadata* metadata) {
  return weft_session_run_with_options(session, nullptr, feeds, feed_values,
                                       num_feeds, fetches, num_fetches,
                                       targets, num_targets, out_values,
                                       metadata);
}

void weft_run_options_init_sized(weft_run_options* options, size_t size) {
  if (options == nullptr || size < sizeof options->struct_size) return;
  weft_run_options full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = std::min(size, sizeof full);
  std::memcpy(options, &full, full.struct_size);
}

int32_t weft_session_cancel(weft_session* session) {
  if (session == nullptr) return 0;
  weft_status* why = Error(WEFT_CANCELLED,
                           "the run was cancelled (weft_session_cancel)");
  int32_t n = weft::CancelRuns(session, why);
  weft_status_destroy(why);
  return n;
}

WEFT_HOT weft_status* weft_session_run_with_options(
    weft_session* session, const weft_run_options* options,
    const weft_output* feeds, weft_tensor* const* feed_values,
    int32_t num_feeds, const weft_output* fetches, int32_t num_fetches,
    weft_node* const* targets, int32_t num_targets,
    weft_tensor** out_values, weft_run_metadata* metadata) {
  if (metadata) metadata->Clear();
  if (session == nullptr) return Error(WEFT_INVALID_ARGUMENT, "session is NULL");
  // The defaults (weft_run_options_init's), without its calls.
  weft_run_options opts{};
  opts.struct_size = sizeof opts;
  if (options != nullptr) {
    if (options->struct_size < sizeof options->struct_size + sizeof(int64_t))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "run options struct_size %zu is too small (set it with "
                    "weft_run_options_init)", options->struct_size);
    std::memcpy(&opts, options, std::min(options->struct_size, sizeof opts));
  }
  if (opts.timeout_ms < 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "run option timeout_ms is %lld: give 0 for none or a "
                  "positive number of milliseconds",
                  static_cast<long long>(opts.timeout_ms));
  if (opts.trace_level != WEFT_TRACE_NONE &&
      opts.trace_level != WEFT_TRACE_FULL)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "run option trace_level is %d: give WEFT_TRACE_NONE (0) or "
                  "WEFT_TRACE_FULL (1)", opts.trace_level);
  if (opts.trace_level != WEFT_TRACE_NONE && metadata == nullptr)
    return Error(WEFT_INVALID_ARGUMENT,
                 "run option trace_level asks for a trace, which goes into "
                 "the run's metadata: pass a weft_run_metadata");
  weft::RunControl control;
  // Only for a traced run (see RunSession's stats).
  std::unique_ptr<weft::TraceCollector> trace;
  if (opts.trace_level != WEFT_TRACE_NONE) {
    trace = std::make_unique<weft::TraceCollector>();
    control.trace = trace.get();
  }
  if (opts.timeout_ms > 0) {
    control.has_deadline = true;
    // Far deadlines saturate instead of overflowing the clock.
    const int64_t max_ms = int64_t{1} << 40;  // ~35 years
    control.deadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(
                           std::min(opts.timeout_ms, max_ms));
  }
  if (weft_status* st =
          CheckRunArrays(feeds, feed_values, num_feeds, fetches, num_fetches,
                         targets, num_targets, out_values))
    return st;
  return weft::RunSession(session, control, feeds, feed_values, num_feeds,
                          fetches, num_fetches, targets, num_targets,
                          out_values, metadata);
}

}  // extern "C"
