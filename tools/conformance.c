/* weft conformance — checks a binary plugin against the CPU plugin.
 *
 *   weft conformance PLUGIN.so [--op OP] [--json]
 *
 * For every op x dtype the plugin registers a kernel for, the same node is
 * built twice in one graph, once pinned to the plugin's device and once to
 * /device:CPU:0, fed the same seeded random inputs (shapes from a recipe per
 * op family: an ordinary one, empty ones, broadcasts, a large one), run in
 * one session with strict placement and no graph optimizations, and the
 * outputs compared with a tolerance per op and dtype.  An optimizer's
 * update, whose leading inputs are variables, gets variables of its own on
 * each side and runs several steps, the variables compared after each.
 * Ops the CPU has no kernel for (ops the plugin defines) are checked
 * without a reference: the shape function against the shapes the kernel
 * produced, and the gradient against central differences.  Then the
 * memory, stream and event contract: through sessions (copies both ways,
 * device to device, concurrent runs, errors surfacing when a run
 * synchronizes, refusals), and through the plugin's own table in a child
 * process that plays a minimal host (negotiation, copies at offsets,
 * events across streams, refusals of bad requests), so a crash there is
 * reported, not suffered.
 *
 * Exit status: 0 every check passed; 1 a check failed (or the plugin did
 * not load); 2 usage error; 77 the plugin has no device here, so nothing
 * could be run (neither a pass nor a failure).
 *
 * It uses the public API only, like any program linked against libweft.
 */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/conformance.h"
#include "tools/json.h"

static const char* const kUsage =
    "usage: weft conformance PLUGIN_FILE [--op OP] [--json]\n";

/* ---- Results ----------------------------------------------------------- */

const char* const kResultNames[R_COUNT] = {
    "pass", "FAIL", "not provided", "not covered", "no device", "not checked"};

row* add_row(row_list* list, const char* op, const char* dtype,
             result status, const char* format, ...) {
  if (list->count == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 64;
    row* grown = realloc(list->rows, capacity * sizeof *grown);
    if (grown == NULL) {
      fprintf(stderr, "weft conformance: out of memory\n");
      exit(EXIT_FAILED);
    }
    list->rows = grown;
    list->capacity = capacity;
  }
  row* r = &list->rows[list->count++];
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "%s", op);
  snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
  r->status = status;
  va_list args;
  va_start(args, format);
  vsnprintf(r->detail, sizeof r->detail, format, args);
  va_end(args);
  return r;
}

const char* status_text(weft_status* status, char* out, size_t size) {
  snprintf(out, size, "%s: %s", weft_code_name(weft_status_code(status)),
           weft_status_message(status));
  weft_status_destroy(status);
  return out;
}

/* ---- Output ----------------------------------------------------------------- */

static void count_results(const row_list* list, int* counts) {
  for (int k = 0; k < R_COUNT; ++k) counts[k] = 0;
  for (size_t i = 0; i < list->count; ++i) ++counts[list->rows[i].status];
}

static void summary_text(const int* counts, char* out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int k = 0; k < R_COUNT; ++k) {
    if (counts[k] == 0 && k != R_PASS && k != R_FAIL) continue;
    used += (size_t)snprintf(out + used, size - used, "%s%d %s",
                             used ? ", " : "", counts[k], kResultNames[k]);
    if (used >= size) break;
  }
}

static void print_json_rows(const row_list* list, const char* key,
                            int with_dtype) {
  printf("  ");
  weft_tool_json_string(key);
  printf(": [");
  for (size_t i = 0; i < list->count; ++i) {
    const row* r = &list->rows[i];
    printf("%s\n    {", i ? "," : "");
    printf(with_dtype ? "\"op\": " : "\"check\": ");
    weft_tool_json_string(r->op);
    if (with_dtype) {
      printf(", \"dtype\": ");
      weft_tool_json_string(r->dtype);
    }
    printf(", \"result\": ");
    weft_tool_json_string(kResultNames[r->status]);
    printf(", \"detail\": ");
    weft_tool_json_string(r->detail);
    if (r->has_error)
      printf(", \"max_abs_err\": %.17g, \"element\": %lld, \"tolerance\": %.17g",
             r->max_err, (long long)r->element, r->tolerance);
    printf("}");
  }
  printf("%s]", list->count ? "\n  " : "");
}

static void print_report(const target* t, const row_list* rows,
                         const row_list* checks, int json, int exit_status,
                         const char* contract_note) {
  int counts[R_COUNT], contract_counts[R_COUNT];
  count_results(rows, counts);
  count_results(checks, contract_counts);
  char ops_summary[256], contract_summary[256];
  summary_text(counts, ops_summary, sizeof ops_summary);
  summary_text(contract_counts, contract_summary, sizeof contract_summary);
  const weft_plugin_description* p = &t->plugin;
  if (json) {
    printf("{\n  \"plugin\": {\"name\": ");
    weft_tool_json_string(p->name);
    printf(", \"version\": ");
    weft_tool_json_string(p->version);
    printf(", \"path\": ");
    weft_tool_json_string(p->path);
    printf(", \"device_type\": ");
    weft_tool_json_string(p->device_type);
    printf(", \"device_count\": %d, \"no_device_reason\": ", p->device_count);
    weft_tool_json_string(p->no_device_reason);
    printf("},\n  \"reference\": \"/device:CPU:0\",\n");
    print_json_rows(rows, "ops", 1);
    printf(",\n");
    print_json_rows(checks, "contract", 0);
    printf(",\n  \"contract_note\": ");
    weft_tool_json_string(contract_note);
    printf(",\n  \"summary\": {");
    for (int k = 0; k < R_COUNT; ++k) {
      printf("%s", k ? ", " : "");
      weft_tool_json_string(kResultNames[k]);
      printf(": %d", counts[k]);
    }
    printf("},\n  \"contract_summary\": {");
    for (int k = 0; k < R_COUNT; ++k) {
      printf("%s", k ? ", " : "");
      weft_tool_json_string(kResultNames[k]);
      printf(": %d", contract_counts[k]);
    }
    printf("},\n  \"exit_status\": %d\n}\n", exit_status);
    return;
  }
  printf("weft conformance: %s %s (%s)\n", p->name, p->version, p->path);
  if (p->device_type == NULL || p->device_type[0] == '\0')
    printf("a plugin of ops only; its kernels run on the devices they name\n");
  else if (p->device_count == 0)
    printf("device type %s: no device: %s\n", p->device_type,
           p->no_device_reason[0] ? p->no_device_reason : "device_count is 0");
  else
    printf("device type %s, %d device%s; reference /device:CPU:0\n",
           p->device_type, p->device_count, p->device_count == 1 ? "" : "s");
  int width = 2;
  for (size_t i = 0; i < rows->count; ++i)
    if ((int)strlen(rows->rows[i].op) > width) width = (int)strlen(rows->rows[i].op);
  printf("\n%-*s  %-17s  RESULT\n", width, "OP", "DTYPE");
  for (size_t i = 0; i < rows->count; ++i) {
    const row* r = &rows->rows[i];
    printf("%-*s  %-17s  ", width, r->op, r->dtype);
    if (r->status == R_FAIL)
      printf("FAIL (%s)\n", r->detail);
    else if (r->status == R_PASS)
      printf("pass%s%s%s\n", r->detail[0] ? " (" : "", r->detail,
             r->detail[0] ? ")" : "");
    else if (r->status == R_NO_DEVICE)
      printf("no device\n");
    else
      printf("%s (%s)\n", kResultNames[r->status], r->detail);
  }
  if (rows->count == 0) printf("(no kernels registered by this plugin)\n");
  printf("\nMemory, streams and events%s%s:\n", contract_note[0] ? " " : "",
         contract_note);
  for (size_t i = 0; i < checks->count; ++i) {
    const row* r = &checks->rows[i];
    printf("  %-44s %s%s%s%s\n", r->op, kResultNames[r->status],
           r->detail[0] ? " (" : "", r->detail, r->detail[0] ? ")" : "");
  }
  printf("\nsummary: ops: %s; contract: %s\n", ops_summary, contract_summary);
  if (exit_status == EXIT_NO_DEVICE)
    printf("no device: nothing ran, so nothing passed or failed (exit %d)\n",
           EXIT_NO_DEVICE);
}

/* ---- The command ------------------------------------------------------------ */

static int usage_error(const char* format, const char* arg) {
  fprintf(stderr, "weft conformance: ");
  fprintf(stderr, format, arg);
  fprintf(stderr, "\n\n%s\nChecks a plugin's kernels against the CPU's, and "
                  "its memory, stream and event contract.\n", kUsage);
  return EXIT_USAGE;
}

/* Finds the loaded plugin whose file is `path`. */
static int find_plugin(const char* path, weft_plugin_description* out) {
  char wanted[PATH_MAX], have[PATH_MAX];
  if (realpath(path, wanted) == NULL) return 0;
  for (int32_t i = 0; i < weft_plugin_count(); ++i) {
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    weft_status* status = weft_plugin_describe(i, out);
    if (status != NULL) {
      weft_status_destroy(status);
      continue;
    }
    if (out->path && realpath(out->path, have) && strcmp(have, wanted) == 0)
      return 1;
  }
  return 0;
}

int weft_command_conformance(int argc, char** argv) {
  const char* path = NULL;
  const char* only_op = NULL;
  int json = 0;
  if (argc == 3 && strcmp(argv[1], "--table-child") == 0)
    return table_child(argv[2]);
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--op") == 0) {
      if (i + 1 == argc) return usage_error("%s wants an op name", "--op");
      only_op = argv[++i];
    } else if (argv[i][0] == '-') {
      return usage_error("unknown option '%s'", argv[i]);
    } else if (path != NULL) {
      return usage_error("one plugin file at a time, not also '%s'", argv[i]);
    } else {
      path = argv[i];
    }
  }
  if (path == NULL) return usage_error("%s", "no plugin file given");

  char text[600];
  weft_status* status = weft_plugins_discover();
  if (status != NULL) {
    fprintf(stderr, "weft conformance: discovering plugins: %s\n",
            status_text(status, text, sizeof text));
    return EXIT_FAILED;
  }
  status = weft_plugin_load(path);
  target t;
  memset(&t, 0, sizeof t);
  t.path = path;
  if (!find_plugin(path, &t.plugin)) {
    fprintf(stderr, "weft conformance: %s did not load: %s\n", path,
            status ? status_text(status, text, sizeof text)
                   : "not among the loaded plugins");
    return EXIT_FAILED;
  }
  weft_status_destroy(status);
  /* Every comparison runs the same node on the CPU plugin's device. */
  int has_reference = 0;
  for (int32_t i = 0; i < weft_device_count() && !has_reference; ++i) {
    weft_device_description dd;
    memset(&dd, 0, sizeof dd);
    dd.struct_size = sizeof dd;
    status = weft_device_describe(i, &dd);
    has_reference = status == NULL && strcmp(dd.name, "/device:CPU:0") == 0;
    weft_status_destroy(status);
  }
  if (!has_reference) {
    fprintf(stderr, "weft conformance: the reference, /device:CPU:0, is not "
                    "there: the CPU plugin (weft-cpu.so) must be on the "
                    "plugin search path (WEFT_PLUGIN_PATH, or an installed "
                    "Weft)\n");
    return EXIT_FAILED;
  }
  int has_device_type = t.plugin.device_type && t.plugin.device_type[0];
  int no_device = has_device_type && t.plugin.device_count == 0;
  if (has_device_type && !no_device) {
    snprintf(t.device, sizeof t.device, "/device:%s:0", t.plugin.device_type);
    if (t.plugin.device_count > 1)
      snprintf(t.second_device, sizeof t.second_device, "/device:%s:1",
               t.plugin.device_type);
  }

  row_list rows = {0}, checks = {0};
  int found_op = only_op == NULL;
  for (int32_t i = 0; i < weft_op_count(); ++i) {
    weft_op_description d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    status = weft_op_describe(i, &d);
    if (status != NULL) {
      weft_status_destroy(status);
      continue;
    }
    if (only_op != NULL && strcmp(d.name, only_op) != 0) continue;
    found_op = 1;
    check_op(&t, &d, no_device, &rows);
  }
  if (!found_op) {
    fprintf(stderr, "weft conformance: no op named '%s'\n", only_op);
    free(rows.rows);
    return EXIT_USAGE;
  }

  const char* contract_note = "";
  if (only_op != NULL) {
    contract_note = "(not checked: --op restricts the run to one op)";
  } else if (!has_device_type) {
    contract_note = "(not applicable: a plugin of ops only has no memory, "
                    "streams or events of its own)";
  } else if (no_device) {
    contract_note = "(not checked: no device)";
  } else {
    check_contract_table(path, &checks);
    check_contract_sessions(&t, &rows, &checks);
  }

  int counts[R_COUNT], contract_counts[R_COUNT];
  count_results(&rows, counts);
  count_results(&checks, contract_counts);
  int exit_status = counts[R_FAIL] || contract_counts[R_FAIL] ? EXIT_FAILED
                    : no_device                               ? EXIT_NO_DEVICE
                                                              : 0;
  print_report(&t, &rows, &checks, json, exit_status, contract_note);
  free(rows.rows);
  free(checks.rows);
  return exit_status;
}
