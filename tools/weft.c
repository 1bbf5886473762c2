/* weft — the command-line tool.
 *
 * Every subcommand is one entry of `commands` below, written against the
 * public API only, so the tool shows exactly what a program linked against
 * libweft would see.  New subcommands (ops, train, place, ...) add an entry
 * and a function; nothing else changes.
 */
/* gethostname (POSIX), hidden by strict -std=c11. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"
#include "tools/help.h"
#include "tools/json.h"
#include "weft/weft.h"

/* Exit codes: 2 is the usual "you called me wrong" of command-line tools, so
 * scripts can tell misuse apart from a runtime failure. */
enum { EXIT_USAGE = 2 };

typedef int (*command_fn)(int argc, char** argv);

/* A command's usage, summary and flags live in tools/help.c. */
typedef struct command {
  const char* name;
  command_fn run;
} command;

static int command_version(int argc, char** argv);
static int command_devices(int argc, char** argv);
static int command_ops(int argc, char** argv);

static const command commands[] = {
    {"version", command_version},
    {"devices", command_devices},
    {"ops", command_ops},
    {"export", weft_command_export},
    {"inspect", weft_command_inspect},
    {"run", weft_command_run},
    {"place", weft_command_place},
    {"train", weft_command_train},
    {"tfrecord", weft_command_tfrecord},
    {"conformance", weft_command_conformance},
};
static const size_t command_count = sizeof commands / sizeof commands[0];

static void print_usage(FILE* out) {
  fprintf(out,
          "usage: weft <command> [arguments]\n"
          "       weft <command> --help\n"
          "       weft help <command>\n"
          "       weft --version\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < command_count; ++i) {
    fprintf(out, "  %-12s %s\n", commands[i].name,
            help_find(commands[i].name)->summary);
  }
  fprintf(out,
          "\n"
          "environment:\n"
          "  WEFT_PLUGIN_PATH  directories searched for plugins first "
          "(':'-separated)\n"
          "  WEFT_DEVICES      devices sessions may use, e.g. "
          "\"/device:CPU:0\" or \"OPENCL\"\n"
          "  WEFT_DEVICE_GFLOPS  compute estimates for the placer, e.g. "
          "\"OPENCL=500,CPU=50\"\n"
          "  WEFT_PLACEMENT    soft (default) or strict: what a constraint "
          "without a kernel does\n"
          "  WEFT_TRANSFER_PRECISION  exact (default), bfloat16 or float16 "
          "for float32 crossing devices\n"
          "  WEFT_CPU_ISA      baseline or x86-64-v3: the CPU plugin's build "
          "(default: the widest this CPU runs)\n"
          "  WEFT_OPENCL_GEMM  clblast or builtin: OpenCL MatMul's GEMM "
          "(default: CLBlast on GPUs, the plugin's kernel on CPU devices)\n"
          "  WEFT_OPENCL_CACHE directory of compiled OpenCL programs (\"\": "
          "none; default ~/.cache/weft/opencl, none on PoCL)\n");
}

static void print_command_usage(FILE* out, const command* cmd) {
  help_print(out, help_find(cmd->name));
}

static int is_help_flag(const char* arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

static const command* find_command(const char* name) {
  for (size_t i = 0; i < command_count; ++i)
    if (strcmp(name, commands[i].name) == 0) return &commands[i];
  return NULL;
}

/* An option the command does not know is a usage error (exit 2), never an
 * operand: `weft devices --jsn` must not try to load a plugin file named
 * "--jsn". */
static int unknown_option(const char* command_name, const char* arg) {
  fprintf(stderr, "weft %s: unknown option '%s'\n\n", command_name, arg);
  print_command_usage(stderr, find_command(command_name));
  return EXIT_USAGE;
}

/* Reports a failed call and releases its status; returns 1 so callers can
 * `return report(...)`. */
static int report(const char* what, weft_status* status) {
  fprintf(stderr, "weft: %s: %s: %s\n", what,
          weft_code_name(weft_status_code(status)),
          weft_status_message(status));
  weft_status_destroy(status);
  return 1;
}

static void print_packed_version(uint32_t packed) {
  printf("%u.%u", (unsigned)WEFT_VERSION_MAJOR_OF(packed),
         (unsigned)WEFT_VERSION_MINOR_OF(packed));
}

/* ---- weft version -------------------------------------------------------- */

static int command_version(int argc, char** argv) {
  if (argc > 1) {
    if (argv[1][0] == '-') return unknown_option(argv[0], argv[1]);
    fprintf(stderr, "weft version: unexpected argument '%s'\n", argv[1]);
    return EXIT_USAGE;
  }
  uint32_t library_abi = weft_abi_version();
  uint32_t plugin_min = 0;
  uint32_t plugin_max = 0;
  weft_plugin_interface_range(&plugin_min, &plugin_max);

  printf("weft %s\n", weft_version_string());
  printf("user API: ");
  print_packed_version(library_abi);
  /* The tool may run against a newer libweft than it was built with; showing
   * both makes a mismatched installation visible. */
  printf(" (library), %d.%d (headers weft was built with)\n",
         WEFT_ABI_VERSION_MAJOR, WEFT_ABI_VERSION_MINOR);
  printf("plugin interface: ");
  print_packed_version(plugin_min);
  if (plugin_min != plugin_max) {
    printf(" to ");
    print_packed_version(plugin_max);
  }
  printf("\n");
  return 0;
}

/* ---- weft devices -------------------------------------------------------- */

/* `weft devices` prints either text for people or, with --json, one JSON
 * document for scripts; both come from the same walk over plugins,
 * refusals and devices, through the printer of tools/json.h. */
static void json_version(printer* p, const char* key, uint32_t packed) {
  char text[32];
  snprintf(text, sizeof text, "%u.%u",
           (unsigned)WEFT_VERSION_MAJOR_OF(packed),
           (unsigned)WEFT_VERSION_MINOR_OF(packed));
  json_text(p, key, text);
}

static void print_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = (double)bytes;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    ++unit;
  }
  printf("%.1f %s", value, units[unit]);
}

static const char* or_dash(const char* text) {
  return text != NULL && text[0] != '\0' ? text : "-";
}

static int print_plugins(printer* p) {
  int32_t count = weft_plugin_count();
  if (p->json) {
    printf("  \"plugins\": [");
  } else {
    printf("plugins (%d):\n", count);
  }
  for (int32_t i = 0; i < count; ++i) {
    weft_plugin_description plugin;
    memset(&plugin, 0, sizeof plugin);
    plugin.struct_size = sizeof plugin;
    weft_status* status = weft_plugin_describe(i, &plugin);
    if (status != NULL) return report("describing a plugin", status);
    if (p->json) {
      json_begin_object(p, i);
      json_text(p, "name", plugin.name);
      json_text(p, "version", plugin.version);
      json_text(p, "path", plugin.path);
      json_version(p, "interface_version", plugin.interface_version);
      json_text(p, "device_type", plugin.device_type);
      json_number(p, "device_count", plugin.device_count);
      json_text(p, "no_device_reason", plugin.no_device_reason);
      printf("}");
      continue;
    }
    printf("  %s %s, interface ", or_dash(plugin.name),
           or_dash(plugin.version));
    print_packed_version(plugin.interface_version);
    printf(", %d %s device%s", plugin.device_count, or_dash(plugin.device_type),
           plugin.device_count == 1 ? "" : "s");
    if (plugin.device_count == 0 && plugin.no_device_reason != NULL &&
        plugin.no_device_reason[0] != '\0') {
      printf(": %s", plugin.no_device_reason);
    }
    printf("\n    %s\n", or_dash(plugin.path));
  }
  if (p->json) printf("%s],\n", count ? "\n  " : "");
  return 0;
}

/* The plugin files not loaded: refused ones, or copies of a loaded plugin
 * found later on the search path (an installed plugin behind a build
 * tree's), which are shadowed and have nothing wrong with them.  Each is a
 * path and one more text: `second_key` in JSON, after `text_prefix` in
 * text. */
typedef weft_status* (*path_pair_fn)(int32_t index, const char** path,
                                     const char** second);

static int print_unloaded(printer* p, const char* title, int32_t count,
                          path_pair_fn entry, const char* second_key,
                          const char* text_prefix) {
  if (p->json) {
    printf("  \"%s\": [", title);
  } else if (count > 0) {
    printf("%s (%d):\n", title, count);
  }
  for (int32_t i = 0; i < count; ++i) {
    const char* path = NULL;
    const char* second = NULL;
    weft_status* status = entry(i, &path, &second);
    if (status != NULL) {
      char what[64];
      snprintf(what, sizeof what, "reading the %s plugins", title);
      return report(what, status);
    }
    if (p->json) {
      json_begin_object(p, i);
      json_text(p, "path", path);
      json_text(p, second_key, second);
      printf("}");
    } else {
      printf("  %s\n    %s%s\n", or_dash(path), text_prefix,
             or_dash(second));
    }
  }
  if (p->json) printf("%s],\n", count ? "\n  " : "");
  return 0;
}

static int print_devices(printer* p) {
  int32_t count = weft_device_count();
  if (p->json) {
    printf("  \"devices\": [");
  } else {
    printf("devices (%d):\n", count);
  }
  for (int32_t i = 0; i < count; ++i) {
    weft_device_description device;
    memset(&device, 0, sizeof device);
    device.struct_size = sizeof device;
    weft_status* status = weft_device_describe(i, &device);
    if (status != NULL) return report("describing a device", status);
    if (p->json) {
      /* Unknown memory and compute are 0 here, as in the C API. */
      json_begin_object(p, i);
      json_text(p, "name", device.name);
      json_text(p, "type", device.type);
      json_number(p, "index", device.index);
      json_text(p, "description", device.description);
      json_text(p, "vendor", device.vendor);
      json_text(p, "plugin", device.plugin);
      json_number(p, "memory_bytes", (double)device.memory_bytes);
      json_number(p, "compute_gflops", device.compute_gflops);
      json_key(p, "host_memory");
      printf("%s", (device.flags & WEFT_DEVICE_HOST_MEMORY) ? "true"
                                                            : "false");
      json_key(p, "unsupported_dtypes");
      printf("[");
      for (int d = 0, n = 0; d < 64; ++d)
        if ((device.unsupported_dtypes >> d) & 1)
          printf("%s\"%s\"", n++ ? ", " : "",
                 weft_dtype_name((weft_dtype)d));
      printf("]}");
      continue;
    }
    printf("  %s\n", or_dash(device.name));
    printf("    type:        %s (index %d)\n", or_dash(device.type),
           device.index);
    printf("    hardware:    %s\n", or_dash(device.description));
    printf("    vendor:      %s\n", or_dash(device.vendor));
    printf("    plugin:      %s\n", or_dash(device.plugin));
    printf("    memory:      ");
    if (device.memory_bytes > 0) {
      print_bytes(device.memory_bytes);
    } else {
      printf("unknown");
    }
    printf("\n    compute:     ");
    if (device.compute_gflops > 0) {
      printf("%.1f GFLOP/s (plugin's estimate)", device.compute_gflops);
    } else {
      printf("unknown");
    }
    printf("\n    host memory: %s\n",
           (device.flags & WEFT_DEVICE_HOST_MEMORY) ? "yes" : "no");
    if (device.unsupported_dtypes != 0) {
      printf("    cannot run:  ");
      for (int d = 0, n = 0; d < 64; ++d)
        if ((device.unsupported_dtypes >> d) & 1)
          printf("%s%s", n++ ? ", " : "", weft_dtype_name((weft_dtype)d));
      printf(" (the plugin has kernels; the device lacks them)\n");
    }
  }
  if (p->json) printf("%s]\n", count ? "\n  " : "");
  return 0;
}

/* The directories in WEFT_PLUGIN_PATH, then the installation's plugin
 * directory, which the runtime looks for beside libweft's own file (so a
 * moved installation finds its own plugins) before the configured one. */
static void print_search_path(printer* p) {
  const char* env = getenv("WEFT_PLUGIN_PATH");
  if (env == NULL) env = "";
  if (!p->json) {
    printf("search path: %s%sweft/plugins beside libweft, else %s\n\n", env,
           env[0] ? ", then " : "", WEFT_INSTALLED_PLUGIN_DIR);
    return;
  }
  printf("  \"search_path\": [");
  int first = 1;
  for (const char* dir = env; *dir;) {
    size_t length = strcspn(dir, ":");
    if (length > 0) {
      char entry[4096];
      snprintf(entry, sizeof entry, "%.*s", (int)length, dir);
      printf("%s", first ? "" : ", ");
      weft_tool_json_string(entry);
      first = 0;
    }
    dir += length + (dir[length] == ':');
  }
  printf("],\n  \"configured_plugin_dir\": ");
  weft_tool_json_string(WEFT_INSTALLED_PLUGIN_DIR);
  printf(",\n");
}

/* `weft devices --cluster`: every task's devices, gathered to rank 0 by
 * the collective op AllGather (each rank's text in a fixed-size block, so
 * that every rank sends the same bytes); the other ranks print nothing. */
enum { CLUSTER_BLOCK = 8192 };

static int print_cluster(void) {
  int32_t rank = 0, size = 1;
  weft_status* status = weft_cluster_world(&rank, &size);
  if (status != NULL) return report("joining the MPI job", status);
  char host[256] = "";
  if (gethostname(host, sizeof host) != 0) strcpy(host, "?");
  host[sizeof host - 1] = '\0';
  uint8_t mine[CLUSTER_BLOCK];
  memset(mine, 0, sizeof mine);
  size_t used = (size_t)snprintf((char*)mine, sizeof mine,
                                 "/job:worker/task:%d on %s (pid %ld)\n",
                                 rank, host, (long)getpid());
  for (int32_t i = 0; i < weft_device_count() && used < sizeof mine; ++i) {
    weft_device_description d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    status = weft_device_describe(i, &d);
    if (status != NULL) return report("describing a device", status);
    used += (size_t)snprintf((char*)mine + used, sizeof mine - used,
                             "  /job:worker/task:%d%s  %s (%s)\n", rank,
                             or_dash(d.name), or_dash(d.description),
                             or_dash(d.plugin));
  }
  mine[sizeof mine - 1] = '\0';
  weft_graph* g = NULL;
  weft_session* s = NULL;
  weft_tensor *block = NULL, *all = NULL;
  weft_output in, out;
  weft_node* gather = NULL;
  const int64_t dims[1] = {CLUSTER_BLOCK};
  weft_op_builder* b = NULL;
  if ((status = weft_graph_create(&g)) == NULL &&
      (status = weft_tensor_create_copy(WEFT_UINT8, dims, 1, mine,
                                        sizeof mine, &block)) == NULL &&
      (status = weft_graph_constant(g, "mine", block, &in)) == NULL) {
    b = weft_op_begin(g, "AllGather", "every_task");
    weft_op_add_input(b, in);
    if ((status = weft_op_finish(b, &gather)) == NULL) {
      out = (weft_output){gather, 0};
      weft_session_options o;
      weft_session_options_init(&o);
      o.devices = "CPU";
      if ((status = weft_session_create(g, &o, &s)) == NULL)
        status = weft_session_run(s, NULL, NULL, 0, &out, 1, NULL, 0, &all);
    }
  }
  int rc = 0;
  if (status != NULL) {
    rc = report("gathering the tasks' devices", status);
  } else if (rank == 0) {
    printf("cluster: %d task%s (job worker%s)\n", size, size == 1 ? "" : "s",
           size == 1 ? "; not started by an MPI launcher" : ", over MPI");
    const char* text = weft_tensor_data(all);
    for (int32_t t = 0; t < size; ++t)
      fputs(text + (size_t)t * CLUSTER_BLOCK, stdout);
  }
  weft_tensor_destroy(all);
  weft_tensor_destroy(block);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  return rc;
}

static int command_devices(int argc, char** argv) {
  printer p = {0, 0};
  int cluster = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) {
      p.json = 1;
    } else if (strcmp(argv[i], "--cluster") == 0) {
      cluster = 1;
    } else if (argv[i][0] == '-') {
      return unknown_option(argv[0], argv[i]);
    }
  }
  if (cluster && p.json) {
    fprintf(stderr, "weft devices: --cluster has no JSON form yet\n");
    return 2;
  }
  weft_status* status = weft_plugins_discover();
  if (status != NULL) return report("discovering plugins", status);
  if (cluster) return print_cluster();

  /* Explicit files are for plugin authors trying a build that is not on the
   * search path; a file that fails to load is shown among the refusals too,
   * but the exit status must still say it failed. */
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    status = weft_plugin_load(argv[i]);
    if (status != NULL) {
      char what[512];
      snprintf(what, sizeof what, "loading %s", argv[i]);
      failed = report(what, status);
    }
  }

  if (p.json) printf("{\n");
  print_search_path(&p);
  if (print_plugins(&p) != 0) return 1;
  if (print_unloaded(&p, "refused", weft_plugin_refusal_count(),
                     weft_plugin_refusal, "reason", "") != 0 ||
      print_unloaded(&p, "shadowed", weft_plugin_shadowed_count(),
                     weft_plugin_shadowed, "shadowed_by",
                     "by the same plugin loaded first from ") != 0)
    return 1;
  if (!p.json) printf("\n");
  if (print_devices(&p) != 0) return 1;
  if (p.json) printf("}\n");
  return failed;
}

/* ---- dispatch ------------------------------------------------------------ */

/* ", T: float32, float64": the dtypes a kernel accepts for one attribute. */
static void print_constraint(const char* attr, const int32_t* dtypes,
                             int32_t count) {
  printf(", %s:", attr);
  for (int32_t i = 0; i < count; ++i)
    printf("%s %s", i ? "," : "", weft_dtype_name((weft_dtype)dtypes[i]));
}

/* The dtypes of each plugin's kernels for one op, one line per kernel. */
static int print_kernels(const char* op) {
  int32_t n = weft_kernel_count(op);
  for (int32_t k = 0; k < n; ++k) {
    weft_kernel_description kd;
    memset(&kd, 0, sizeof kd);
    kd.struct_size = sizeof kd;
    weft_status* status = weft_kernel_describe(op, k, &kd);
    if (status != NULL) return report("describing a kernel", status);
    printf("    kernel: %s (%s)", kd.device_type, kd.plugin);
    if ((kd.num_dtypes == 0 || kd.dtype_attr[0] == '\0') &&
        kd.num_type_constraints == 0) {
      printf(": any dtype");
    } else if (kd.num_dtypes > 0 && kd.dtype_attr[0] != '\0') {
      print_constraint(kd.dtype_attr, kd.dtypes, kd.num_dtypes);
    }
    for (int32_t c = 0; c < kd.num_type_constraints; ++c)
      print_constraint(kd.type_constraints[c].attr,
                       kd.type_constraints[c].dtypes,
                       kd.type_constraints[c].num_dtypes);
    if (kd.priority != 0) printf(" (priority %d)", kd.priority);
    printf("\n");
  }
  return 0;
}

static int print_op(int32_t index) {
  weft_op_description d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  weft_status* status = weft_op_describe(index, &d);
  if (status != NULL) return report("describing an op", status);
  printf("%s(%s) -> %s%s\n", d.name, d.inputs, d.outputs,
         d.stateful ? "   [stateful]" : "");
  /* Ops of the runtime say nothing; the others say who defined them. */
  if (d.origin != NULL && strcmp(d.origin, "runtime") != 0)
    printf("    defined by: %s\n", d.origin);
  if (d.summary[0]) printf("    %s\n", d.summary);
  if (d.attributes[0]) printf("    attributes: %s\n", d.attributes);
  if (d.runs_in_runtime) {
    printf("    kernel: none needed (the runtime runs it on every device)\n");
    return 0;
  }
  if (weft_kernel_count(d.name) == 0)
    printf("    kernel: none in the loaded plugins\n");
  return print_kernels(d.name);
}

/* {"T": ["float32", ...]}: the dtypes a kernel accepts for one attribute,
 * as a field of the kernel's object. */
static void json_constraint(printer* p, const char* attr,
                            const int32_t* dtypes, int32_t count) {
  json_key(p, attr);
  printf("[");
  for (int32_t i = 0; i < count; ++i) {
    printf("%s", i ? ", " : "");
    weft_tool_json_string(weft_dtype_name((weft_dtype)dtypes[i]));
  }
  printf("]");
}

/* One op as a JSON object; its kernels as the field "kernels", each with
 * "dtypes" mapping type attributes to what the kernel accepts ({}: any). */
static int print_op_json(printer* p, int32_t index, int first) {
  weft_op_description d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  weft_status* status = weft_op_describe(index, &d);
  if (status != NULL) return report("describing an op", status);
  json_begin_object(p, !first);
  json_text(p, "name", d.name);
  json_text(p, "inputs", d.inputs);
  json_text(p, "outputs", d.outputs);
  json_text(p, "attributes", d.attributes);
  json_text(p, "summary", d.summary);
  json_text(p, "origin", d.origin);
  json_number(p, "num_inputs", d.num_inputs);
  json_bool(p, "variadic", d.variadic);
  json_bool(p, "stateful", d.stateful);
  json_bool(p, "runs_in_runtime", d.runs_in_runtime);
  json_key(p, "kernels");
  printf("[");
  int32_t n = weft_kernel_count(d.name);
  for (int32_t k = 0; k < n; ++k) {
    weft_kernel_description kd;
    memset(&kd, 0, sizeof kd);
    kd.struct_size = sizeof kd;
    status = weft_kernel_describe(d.name, k, &kd);
    if (status != NULL) return report("describing a kernel", status);
    int outer = json_begin_nested(p, k);
    json_text(p, "plugin", kd.plugin);
    json_text(p, "device_type", kd.device_type);
    json_number(p, "priority", kd.priority);
    json_key(p, "dtypes");
    int kernel = json_begin_nested(p, 0);
    if (kd.num_dtypes > 0 && kd.dtype_attr[0] != '\0')
      json_constraint(p, kd.dtype_attr, kd.dtypes, kd.num_dtypes);
    for (int32_t c = 0; c < kd.num_type_constraints; ++c)
      json_constraint(p, kd.type_constraints[c].attr,
                      kd.type_constraints[c].dtypes,
                      kd.type_constraints[c].num_dtypes);
    json_end_nested(p, kernel);
    json_end_nested(p, outer);
  }
  printf("]}");
  return 0;
}

/* An argument naming a file ("./acme.so", "lib/x.so") rather than an op. */
static int names_a_file(const char* arg) {
  size_t n = strlen(arg);
  return strchr(arg, '/') != NULL || (n > 3 && strcmp(arg + n - 3, ".so") == 0);
}

/* The index of the op called `name`, or -1. */
static int32_t find_op(const char* name) {
  int32_t count = weft_op_count();
  for (int32_t i = 0; i < count; ++i) {
    weft_op_description d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    weft_status* status = weft_op_describe(i, &d);
    if (status != NULL) {
      weft_status_destroy(status);
      continue;
    }
    if (strcmp(d.name, name) == 0) return i;
  }
  return -1;
}

static int command_ops(int argc, char** argv) {
  /* argv[0] is the command's own name. */
  printer p = {0, 0};
  for (int a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--json") == 0) {
      p.json = 1;
    } else if (argv[a][0] == '-') {
      return unknown_option(argv[0], argv[a]);
    }
  }
  /* Plugins define ops too: the search path's, and any file named. */
  weft_status* discovered = weft_plugins_discover();
  if (discovered != NULL) return report("loading the plugin search path",
                                        discovered);
  int ops_named = 0;
  for (int a = 1; a < argc; ++a) {
    if (argv[a][0] == '-') continue;
    if (!names_a_file(argv[a])) {
      ++ops_named;
      continue;
    }
    weft_status* loaded = weft_plugin_load(argv[a]);
    if (loaded != NULL) return report(argv[a], loaded);
  }
  int32_t count = weft_op_count();
  if (p.json) printf("{\n  \"ops\": [");
  if (ops_named == 0 && !p.json) printf("%d ops\n\n", count);
  int status = 0, printed = 0;
  for (int32_t i = 0, a = 1; ops_named == 0 ? i < count : a < argc; ++i) {
    int32_t index = i;
    if (ops_named > 0) {
      const char* arg = argv[a++];
      if (arg[0] == '-' || names_a_file(arg)) continue;
      index = find_op(arg);
      if (index < 0) {
        fprintf(stderr, "weft ops: no op named '%s'\n", arg);
        status = 1;
        continue;
      }
    }
    if (p.json) {
      if (print_op_json(&p, index, printed == 0)) return 1;
    } else {
      /* The whole list has a blank line between ops. */
      if (ops_named == 0 && printed > 0) printf("\n");
      if (print_op(index)) return 1;
    }
    ++printed;
  }
  if (p.json) printf("%s]\n}\n", printed ? "\n  " : "");
  return status;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return EXIT_USAGE;
  }
  const char* name = argv[1];
  if (is_help_flag(name)) {
    print_usage(stdout);
    return 0;
  }
  /* `weft help` lists the commands; `weft help CMD` is `weft CMD --help`. */
  if (strcmp(name, "help") == 0) {
    if (argc == 2) {
      print_usage(stdout);
      return 0;
    }
    const command* about = find_command(argv[2]);
    if (about == NULL || argc > 3) {
      fprintf(stderr, "weft help: %s '%s'\n\n",
              about == NULL ? "unknown command"
                            : "one command at a time, not also",
              argv[about == NULL ? 2 : 3]);
      print_usage(stderr);
      return EXIT_USAGE;
    }
    print_command_usage(stdout, about);
    return 0;
  }
  /* `weft --version` is `weft version`, as programs' --version is. */
  if (strcmp(name, "--version") == 0) name = "version";
  const command* cmd = find_command(name);
  if (cmd != NULL) {
    /* Each command sees its own name as argv[0], like a program of its own. */
    int command_argc = argc - 1;
    char** command_argv = argv + 1;
    for (int a = 1; a < command_argc; ++a) {
      if (is_help_flag(command_argv[a])) {
        print_command_usage(stdout, cmd);
        return 0;
      }
    }
    return cmd->run(command_argc, command_argv);
  }
  fprintf(stderr, "weft: unknown command '%s'\n\n", name);
  print_usage(stderr);
  return EXIT_USAGE;
}
