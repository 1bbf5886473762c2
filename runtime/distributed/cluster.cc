#include "distributed/cluster.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/modules.h"
#include "base/status.h"

namespace weft {
namespace distributed {
namespace {

bool Launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                        "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

weft_status* Setup(World* world) {
  world->transport = "none (one process)";
  if (!Launched()) return nullptr;
  void* handle = nullptr;
  std::string path;
  if (weft_status* st = OpenModule("WEFT_MPI_MODULE", "weft-mpi.so", &handle,
                                   &path)) {
    // Not found: built without Open MPI, or a partial installation.
    const bool missing = weft_status_code(st) == WEFT_NOT_FOUND;
    std::string why = weft_status_message(st);
    weft_status_destroy(st);
    return Errorf(WEFT_UNAVAILABLE, "started by an MPI launcher, but %s%s",
                  missing ? "this Weft has no MPI module: " : "", why.c_str());
  }
  auto fn = reinterpret_cast<weft_mpi_module_table_fn>(
      dlsym(handle, "weft_mpi_module_table"));
  const weft_mpi_table* table = fn != nullptr ? fn() : nullptr;
  if (table == nullptr || table->struct_size < sizeof(weft_mpi_table))
    return Errorf(WEFT_UNAVAILABLE,
                  "the MPI module %s is not this Weft's (no table, or an "
                  "older one)", path.c_str());
  char error[512] = {};
  int32_t code = table->init(&world->rank, &world->size, error, sizeof error);
  if (code != 0)
    return Errorf(static_cast<weft_code>(code), "MPI: %s", error);
  world->mpi = table;
  world->transport = table->library_version();
  return nullptr;
}

}  // namespace

weft_status* GetWorld(const World** out) {
  static World world;
  static LoadOnce setup;
  WEFT_RETURN_IF_ERROR(setup.Run([] { return Setup(&world); }));
  *out = &world;
  return nullptr;
}

bool Answering(int32_t timeout_ms, std::vector<uint8_t>* answered) {
  const World* world = nullptr;
  if (weft_status* st = GetWorld(&world)) {
    weft_status_destroy(st);
    return false;
  }
  if (world->mpi == nullptr) return false;
  // Every op that waited hears of one deadline at once: one check serves
  // them all (a second within 2 s reuses the first's answers).
  static std::mutex mu;
  static std::vector<uint8_t> last;
  static std::chrono::steady_clock::time_point when;
  answered->assign(static_cast<size_t>(world->size), 0);
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (last.size() == answered->size() && now - when < std::chrono::seconds(2)) {
    *answered = last;
    return true;
  }
  char error[256] = {};
  if (world->mpi->ping(timeout_ms, answered->data(), error, sizeof error) !=
      0)
    return false;
  last = *answered;
  when = std::chrono::steady_clock::now();
  return true;
}

std::string Liveness(int32_t timeout_ms, int32_t peer) {
  std::vector<uint8_t> answered;  // by rank
  if (!Answering(timeout_ms, &answered)) return std::string();
  const int32_t size = static_cast<int32_t>(answered.size());
  const std::string within = " within " + std::to_string(timeout_ms) + " ms";
  if (peer >= 0 && peer < size)
    return "rank " + std::to_string(peer) +
           (answered[static_cast<size_t>(peer)]
                ? " answers a liveness check: it is alive but did not come "
                  "(late, or running a different program)"
                : " did not answer a liveness check" + within +
                      ": dead or stopped");
  std::string missing;
  for (int32_t r = 0; r < size; ++r)
    if (!answered[static_cast<size_t>(r)])
      missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(r);
  if (missing.empty())
    return "every rank answers a liveness check: all are alive, so one is "
           "late or runs a different program";
  return missing + " did not answer a liveness check" + within +
         ": dead or stopped";
}

void SplitTaskPrefix(const std::string& c, std::string* job, std::string* task,
                     std::string* rest) {
  job->clear();
  task->clear();
  std::string t = c;
  auto take = [&t](const char* prefix, std::string* out) {
    const size_t n = std::strlen(prefix);
    if (t.compare(0, n, prefix) != 0) return;
    size_t end = t.find('/', n);
    if (end == std::string::npos) end = t.size();
    *out = t.substr(n, end - n);
    t = t.substr(end);
  };
  take("/job:", job);
  take("/task:", task);
  *rest = t;
}

std::string Cluster::TaskName(int32_t rank) const {
  const auto& [job, index] = tasks[static_cast<size_t>(rank)];
  return "/job:" + jobs[static_cast<size_t>(job)].first +
         "/task:" + std::to_string(index);
}

weft_status* Cluster::RanksOf(const std::string& constraint,
                              std::vector<int32_t>* out) const {
  out->clear();
  std::string job, task, rest;
  SplitTaskPrefix(constraint, &job, &task, &rest);
  // "localhost" is what single-process names carry: any task.
  const bool any_job = job.empty() || job == "*" || job == "localhost";
  int32_t job_index = -1;
  if (!any_job) {
    for (size_t j = 0; j < jobs.size(); ++j)
      if (jobs[j].first == job) job_index = static_cast<int32_t>(j);
    if (job_index < 0)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "device '%s' names job '%s', which cluster '%s' does not "
                    "have", constraint.c_str(), job.c_str(), spec.c_str());
  }
  int64_t task_index = -1;
  if (!task.empty() && task != "*") {
    char* end = nullptr;
    task_index = std::strtoll(task.c_str(), &end, 10);
    if (end == task.c_str() || *end != '\0' || task_index < 0)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "device '%s': task '%s' is not a number or '*'",
                    constraint.c_str(), task.c_str());
  }
  for (int32_t r = 0; r < size(); ++r) {
    const auto& [j, i] = tasks[static_cast<size_t>(r)];
    if ((any_job || j == job_index) && (task_index < 0 || i == task_index))
      out->push_back(r);
  }
  if (out->empty())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "device '%s' names a task that cluster '%s' does not have",
                  constraint.c_str(), spec.c_str());
  return nullptr;
}

namespace {

// The comma-separated terms of `list`, trimmed of spaces, empty ones left
// out.
std::vector<std::string> Terms(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string term = list.substr(start, end - start);
    start = end + 1;
    while (!term.empty() && term.front() == ' ') term.erase(0, 1);
    while (!term.empty() && term.back() == ' ') term.pop_back();
    if (!term.empty()) out.push_back(std::move(term));
  }
  return out;
}

}  // namespace

std::vector<int32_t> AppContextSizes() {
  std::vector<int32_t> sizes;
  const char* env = std::getenv("OMPI_APP_CTX_NUM_PROCS");
  if (env == nullptr) return sizes;
  const char* p = env;
  while (*p != '\0') {
    char* end = nullptr;
    const long n = std::strtol(p, &end, 10);
    if (end == p || n < 1 || n > (1 << 20)) return {};
    sizes.push_back(static_cast<int32_t>(n));
    p = end;
    while (*p == ' ' || *p == ',') ++p;
  }
  return sizes;
}

weft_status* ParseCluster(const std::string& spec, int32_t world_size,
                          int32_t rank, Cluster* out,
                          const std::vector<int32_t>* app_sizes) {
  out->spec = spec;
  out->jobs.clear();
  out->tasks.clear();
  out->local = rank;
  int32_t fixed = 0, open = -1, open_jobs = 0;
  for (const std::string& term : Terms(spec)) {
    const size_t colon = term.find(':');
    std::string name = term.substr(0, colon);
    int64_t count = -1;
    if (colon != std::string::npos) {
      const std::string n = term.substr(colon + 1);
      char* e = nullptr;
      count = std::strtoll(n.c_str(), &e, 10);
      if (n.empty() || *e != '\0' || count < 1 || count > (1 << 20))
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "cluster '%s': '%s' wants a job name and a task count "
                      "of at least 1 (\"worker:3\")", spec.c_str(),
                      term.c_str());
    }
    bool name_ok = !name.empty();
    for (char c : name)
      name_ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                 c == '-';
    if (!name_ok)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "cluster '%s': job name '%s' wants letters, digits, '_' "
                    "or '-'", spec.c_str(), name.c_str());
    for (const auto& j : out->jobs)
      if (j.first == name)
        return Errorf(WEFT_INVALID_ARGUMENT, "cluster '%s': job '%s' twice",
                      spec.c_str(), name.c_str());
    if (count < 0) {
      if (open < 0) open = static_cast<int32_t>(out->jobs.size());
      ++open_jobs;
    } else {
      fixed += static_cast<int32_t>(count);
    }
    out->jobs.emplace_back(name, static_cast<int32_t>(count));
  }
  if (out->jobs.empty())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "cluster '%s' declares no job (want e.g. \"ps:1,worker:3\" "
                  "or \"worker\")", spec.c_str());
  if (open_jobs > 1) {
    // Every job's count from mpirun's app contexts, in order.
    const int32_t contexts =
        app_sizes ? static_cast<int32_t>(app_sizes->size()) : 1;
    if (fixed != 0 || app_sizes == nullptr ||
        contexts != static_cast<int32_t>(out->jobs.size()))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "cluster '%s': %d jobs leave their task count out, which "
                    "takes every job's count from mpirun's app contexts, one "
                    "job each (mpirun -np 1 PROGRAM : -np 3 PROGRAM), but "
                    "%s; or give every job but one its count "
                    "(\"ps:1,worker\")", spec.c_str(), open_jobs,
                    fixed != 0 ? "some jobs give theirs"
                               : ("this job has " + std::to_string(contexts) +
                                  " app context(s)").c_str());
    for (size_t j = 0; j < out->jobs.size(); ++j) {
      out->jobs[j].second = (*app_sizes)[j];
      fixed += (*app_sizes)[j];
    }
    open = -1;
  }
  if (open >= 0) {
    if (world_size - fixed < 1)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "cluster '%s' leaves no rank for job '%s': the job has %d "
                    "process(es)", spec.c_str(),
                    out->jobs[static_cast<size_t>(open)].first.c_str(),
                    world_size);
    out->jobs[static_cast<size_t>(open)].second = world_size - fixed;
    fixed = world_size;
  }
  if (fixed != world_size)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "cluster '%s' has %d task(s) but this job has %d "
                  "process(es)%s", spec.c_str(), fixed, world_size,
                  world_size == 1 ? " (start it with mpirun -np N)" : "");
  for (size_t j = 0; j < out->jobs.size(); ++j)
    for (int32_t i = 0; i < out->jobs[j].second; ++i)
      out->tasks.emplace_back(static_cast<int32_t>(j), i);
  return nullptr;
}

weft_status* ParseServing(const std::string& jobs, Cluster* c) {
  c->serving.assign(c->tasks.size(), false);
  bool any = false;
  for (const std::string& name : Terms(jobs)) {
    int32_t job = -1;
    for (size_t j = 0; j < c->jobs.size(); ++j)
      if (c->jobs[j].first == name) job = static_cast<int32_t>(j);
    if (job < 0) {
      c->serving.clear();  // refused: the cluster stays synchronous
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "serving_jobs '%s' names job '%s', which cluster '%s' "
                    "does not have", jobs.c_str(), name.c_str(),
                    c->spec.c_str());
    }
    for (size_t r = 0; r < c->tasks.size(); ++r)
      if (c->tasks[r].first == job) c->serving[r] = any = true;
  }
  if (!any) {
    c->serving.clear();
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "serving_jobs '%s' names no job", jobs.c_str());
  }
  if (std::find(c->serving.begin(), c->serving.end(), false) ==
      c->serving.end()) {
    c->serving.clear();
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "serving_jobs '%s' covers every task of cluster '%s': "
                  "leave at least one task to run", jobs.c_str(),
                  c->spec.c_str());
  }
  return nullptr;
}

}  // namespace distributed
}  // namespace weft
