// The processes a program runs in: its rank and the number of ranks, from
// MPI when the program was started by an MPI launcher (mpirun), else one
// process alone.  Collective ops (ops/collective.cc) run over it.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace distributed
}  // namespace weft
