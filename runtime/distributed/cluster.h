// The processes a program runs in: its rank and the number of ranks, from
// MPI when the program was started by an MPI launcher (mpirun), else one
// process alone.  Collective ops (ops/collective.cc) run over it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distributed/mpi_module.h"
#include "weft/status.h"

namespace weft {
namespace distributed {

struct World {
  int32_t rank = 0;
  int32_t size = 1;
  // The MPI module's table; null for a process alone (no launcher), where
  // every collective is the identity.
  const weft_mpi_table* mpi = nullptr;
  std::string transport;  // "none (one process)" or the MPI library's name
};

// The world, set up on first call (MPI initialized then, not before): a
// launcher's environment (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE) means
// MPI, through weft-mpi.so (WEFT_MPI_MODULE, else beside libweft, else the
// installation's); without one the process is alone.  Errors (UNAVAILABLE:
// launched by MPI but the module is missing or MPI fails to start) are
// returned by every call.
weft_status* GetWorld(const World** out);

// Why ranks did not come, for errors after a deadline: asks every rank to
// answer a liveness check (waiting up to `timeout_ms`) and says which did
// not ("rank 1 did not answer a liveness check within 1000 ms: dead or
// stopped"), or that all did (alive, so late or running a different
// program).  `peer` >= 0 asks about that rank only.  Empty when the job has
// no MPI or the check cannot run.
std::string Liveness(int32_t timeout_ms, int32_t peer);
// The same check's answers, by rank (1: answered); false when the job has
// no MPI or the check cannot run.
bool Answering(int32_t timeout_ms, std::vector<uint8_t>* answered);

// The tasks of a cluster session: jobs declared by the program ("ps:1,
// worker:3"; a job without a count takes the ranks left, so "worker" alone
// is every rank), one task per MPI rank in declaration order (ps:0 is rank
// 0, worker:0 rank 1, ...).
struct Cluster {
  std::string spec;                                  // as given
  std::vector<std::pair<std::string, int32_t>> jobs;  // name, tasks
  std::vector<std::pair<int32_t, int32_t>> tasks;    // by rank: job, index
  int32_t local = 0;                                 // this process's rank
  int32_t session = 0;  // the process's count of cluster sessions so far
  // Asynchronous clusters (weft_session_options.serving_jobs): by rank,
  // whether that task serves (weft_session_serve) instead of running;
  // empty for a synchronous cluster, where every rank makes every run.
  std::vector<bool> serving;

  bool async() const { return !serving.empty(); }
  bool Serves(int32_t rank) const {
    return async() && serving[static_cast<size_t>(rank)];
  }

  int32_t size() const { return static_cast<int32_t>(tasks.size()); }
  // "/job:ps/task:0"
  std::string TaskName(int32_t rank) const;
  // The ranks a device constraint's job and task parts allow ("/job:ps",
  // "/job:worker/task:1", "/job:worker/task:*", "/task:2"; none of them:
  // every rank).  INVALID_ARGUMENT for a job or task this cluster lacks.
  weft_status* RanksOf(const std::string& constraint,
                       std::vector<int32_t>* out) const;
};

// Reads `spec` for a job of `world_size` ranks.  A spec whose every job
// leaves its count out ("ps,worker") takes the counts from `app_sizes`, the
// ranks of each of mpirun's app contexts in order (mpirun -np 1 A : -np 3
// B), one job each.
weft_status* ParseCluster(const std::string& spec, int32_t world_size,
                          int32_t rank, Cluster* out,
                          const std::vector<int32_t>* app_sizes = nullptr);

// The ranks of each app context of this MPI job, from the launcher's
// environment (Open MPI's OMPI_APP_CTX_NUM_PROCS); empty when it gives none.
std::vector<int32_t> AppContextSizes();

// Marks the tasks of the jobs `jobs` names ("ps", or "ps,cache") as
// serving: INVALID_ARGUMENT for a job the cluster lacks, or when every
// task would serve (no task would run).
weft_status* ParseServing(const std::string& jobs, Cluster* c);

// Splits "/job:ps/task:0/device:CPU:0" into its job ("ps", or "" when
// absent), task ("0", "*", or "") and the rest ("/device:CPU:0").
void SplitTaskPrefix(const std::string& constraint, std::string* job,
                     std::string* task, std::string* rest);

}  // namespace distributed
}  // namespace weft
