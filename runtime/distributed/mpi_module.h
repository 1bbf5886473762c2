// The interface between libweft and weft-mpi.so, the module that carries
// Weft's collectives over MPI (Open MPI from Debian).  libweft dlopens the
// module on first use (cluster.cc), so neither libweft nor a program that
// never runs a collective loads libmpi; the module links it.  Both sides
// are built from one tree: the table is checked by size only.
//
// Plain C types: the module exports one function, weft_mpi_module_table.
#ifndef WEFT_RUNTIME_DISTRIBUTED_MPI_MODULE_H_
#define WEFT_RUNTIME_DISTRIBUTED_MPI_MODULE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Called once when an operation ends, on the module's progress thread:
// `code` a weft_code (0: done), `message` what went wrong (NULL on
// success), valid during the call.
typedef void (*weft_mpi_done_fn)(void* arg, int32_t code, const char* message);

enum {
  WEFT_MPI_SUM = 0,
};

typedef struct weft_mpi_table {
  size_t struct_size;
  // Initializes MPI once per process (MPI_Init_thread, asking for
  // MPI_THREAD_MULTIPLE; MPI calls are serialized by the module either
  // way) and starts the progress thread; MPI is finalized at exit.
  // Returns 0 with *rank and *size set, or a weft_code with `error` filled.
  int32_t (*init)(int32_t* rank, int32_t* size, char* error,
                  size_t error_size);
  // Non-blocking collectives on the module's duplicate of MPI_COMM_WORLD,
  // started in the order the caller calls them (which must be the same on
  // every rank).  `data` / `out` stay valid until `done` is called.
  // Returns 0, or a weft_code with `error` filled (nothing started, `done`
  // never called).
  // Element-wise reduction of `count` elements of weft_dtype `dtype` over
  // every rank, in place.
  int32_t (*allreduce)(void* data, int64_t count, int32_t dtype, int32_t op,
                       weft_mpi_done_fn done, void* arg, char* error,
                       size_t error_size);
  // `bytes` bytes from rank `root` into every rank's `data`.
  int32_t (*broadcast)(void* data, int64_t bytes, int32_t root,
                       weft_mpi_done_fn done, void* arg, char* error,
                       size_t error_size);
  // Every rank's `bytes` bytes of `in`, in rank order, into `out` (size *
  // bytes).
  int32_t (*allgather)(const void* in, int64_t bytes, void* out,
                       weft_mpi_done_fn done, void* arg, char* error,
                       size_t error_size);
  // The MPI library's own version string ("Open MPI v4.1.4, ...").
  const char* (*library_version)(void);
} weft_mpi_table;

typedef const weft_mpi_table* (*weft_mpi_module_table_fn)(void);

#ifdef __cplusplus
}
#endif

#endif  // WEFT_RUNTIME_DISTRIBUTED_MPI_MODULE_H_
