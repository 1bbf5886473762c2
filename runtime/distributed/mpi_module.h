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

#define WEFT_MPI_MAX_HEADER 4096

// A message's header has arrived from rank `source`: returns where its
// `payload_bytes` go (NULL: discard them) and sets *token for `landed`.
typedef void* (*weft_mpi_arrival_fn)(void* arg, int32_t source,
                                     const void* header, int64_t header_bytes,
                                     int64_t payload_bytes, void** token);
// The payload of the message `token` names is in place (code 0) or failed
// (a weft_code, `message` says why).
typedef void (*weft_mpi_landed_fn)(void* arg, void* token, int32_t code,
                                   const char* message);

typedef struct weft_mpi_table {
  size_t struct_size;
  // Initializes MPI once per process (MPI_Init_thread, asking for
  // MPI_THREAD_MULTIPLE) and starts the collective thread and, with
  // MPI_THREAD_MULTIPLE, the progress thread; MPI is finalized at exit.
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

  // ---- Point-to-point (transfers between the tasks of a cluster session,
  // and liveness checks).
  // On a duplicate communicator of their own, driven by the module's
  // progress thread with non-blocking calls; they need MPI_THREAD_MULTIPLE
  // (the collective thread blocks in MPI meanwhile).  A message is a header
  // (`header_bytes` opaque bytes, at most WEFT_MPI_MAX_HEADER) and a payload
  // sent from `payload` in place, both kept valid by the caller until
  // `done`.  Messages from one rank to another arrive in the order sent.
  int32_t (*send)(int32_t dest, const void* header, int64_t header_bytes,
                  const void* payload, int64_t payload_bytes,
                  weft_mpi_done_fn done, void* arg, char* error,
                  size_t error_size);
  // Starts receiving (once per process; later calls return 0 and change
  // nothing).  For each message: `arrival` on the progress thread with its
  // header, returning where its payload goes (host memory of
  // `payload_bytes`, or NULL to discard it) and a token; then `landed`
  // with that token once the payload is there (code 0) or failed.
  int32_t (*listen)(weft_mpi_arrival_fn arrival, weft_mpi_landed_fn landed,
                    void* arg, char* error, size_t error_size);
  // Which ranks are alive: asks every other rank's progress thread (which
  // runs in every process of the job from initialization on) to answer,
  // and waits up to `timeout_ms`.  answered[r] (size entries) is 1 for a
  // rank that answered (this one included), 0 for one that did not: dead,
  // stopped, or without the thread.  Returns 0, or a weft_code with
  // `error` filled.
  int32_t (*ping)(int32_t timeout_ms, uint8_t* answered, char* error,
                  size_t error_size);
  // A receiver starts (+1) or stops (-1) waiting for a message: while one
  // waits, the idle progress thread polls every 50 us instead of sleeping
  // up to 2 ms (a header then waits at most that long).
  void (*expect)(int32_t delta);
  // Ends every process of the job (MPI_Abort with `code`); does not
  // return.
  void (*abort)(int32_t code);
} weft_mpi_table;

typedef const weft_mpi_table* (*weft_mpi_module_table_fn)(void);

#ifdef __cplusplus
}
#endif

#endif  // WEFT_RUNTIME_DISTRIBUTED_MPI_MODULE_H_
