/* weft conformance: what its three files share (tools/conformance.c: the
 * command, results and report; conformance_ops.c: each op x dtype against
 * the CPU, in the cases of conformance_recipes.c, which has a header of its
 * own; conformance_contract.c: the memory, stream and event contract).
 * Internal to the tool. */
#ifndef WEFT_TOOLS_CONFORMANCE_H_
#define WEFT_TOOLS_CONFORMANCE_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/plugin.h"
#include "weft/weft.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_NO_DEVICE = 77 };

/* ---- Results ----------------------------------------------------------- */

typedef enum result {
  R_PASS,
  R_FAIL,
  R_NOT_PROVIDED,
  R_NOT_COVERED,
  R_NO_DEVICE,
  R_NOT_CHECKED,
  R_COUNT
} result;

extern const char* const kResultNames[R_COUNT];

typedef struct row {
  char op[96];
  char dtype[40];
  result status;
  char detail[400];
  int has_error; /* max_err, element, tolerance hold a measured error */
  double max_err, tolerance;
  int64_t element;
} row;

typedef struct row_list {
  row* rows;
  size_t count, capacity;
} row_list;

/* Appends a row (exits on out of memory). */
row* add_row(row_list* list, const char* op, const char* dtype,
             result status, const char* format, ...)
    __attribute__((format(printf, 5, 6)));

/* Takes a status, returns its "CODE: message" in `out`, releases it. */
const char* status_text(weft_status* status, char* out, size_t size);

/* ---- The plugin under test --------------------------------------------- */

typedef struct target {
  const char* path;
  weft_plugin_description plugin;
  char device[96];       /* "/device:TEMPLATE:0", "" for a plugin of ops */
  char second_device[96]; /* "/device:TEMPLATE:1" when there is one */
} target;

/* ---- From conformance_ops.c, for the contract checks ---------------------- */

/* An element of any dtype as a double, and back. */
void store(weft_dtype t, void* data, int64_t i, double v);
double load(weft_dtype t, const void* data, int64_t i);
void format_dims(const weft_tensor* t, char* out, size_t size);
/* A session over `graph` on the target's devices and the CPU. */
weft_status* open_session(weft_graph* graph, const target* t,
                          weft_session** out);

/* The plugin's kernels for an op, and the CPU's. */
typedef struct op_kernels {
  weft_kernel_description tested[8];
  int num_tested;
  weft_kernel_description reference[8];
  int num_reference;
} op_kernels;
int kernel_accepts(const weft_kernel_description* kd, const char* attr,
                   weft_dtype dtype);
int collect_kernels(const char* op, const char* plugin, op_kernels* k);

/* The rows of one op: each op x dtype against the CPU, or without a
 * reference, or "no device". */
void check_op(const target* t, const weft_op_description* d, int no_device,
              row_list* rows);

/* ---- From conformance_contract.c ------------------------------------------ */

void check_contract_sessions(const target* t, const row_list* rows,
                             row_list* checks);
/* The plugin's table driven by a minimal host in a child process (the
 * hidden --table-child option runs table_child there). */
void check_contract_table(const char* path, row_list* checks);
int table_child(const char* path);

#endif /* WEFT_TOOLS_CONFORMANCE_H_ */
