/* weft inspect — what a model file holds: its format, each signature's
 * inputs and outputs (key, graph output, dtype, static shape), the ops it
 * uses, and how many parameters it has.
 *
 * Parameters are counted twice over, because models keep weights in two
 * places: the elements of Variable nodes (Weft models, trainable), and
 * those of Const nodes (ONNX initializers and frozen GraphDefs become
 * constants).  A Const read only by Assign nodes is a variable's initial
 * value, counted with the variables already, so it is left out of the
 * constants and reported apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/json.h"
#include "tools/model_open.h"
#include "weft/weft.h"

typedef struct op_count {
  const char* op;
  int64_t nodes;
} op_count;

typedef struct parameter_count {
  int64_t variable_elements, variable_nodes;
  int64_t constant_elements, constant_nodes;
  int64_t initializer_elements, initializer_nodes;
} parameter_count;

/* A node and whether anything but an Assign reads it. */
typedef struct node_use {
  const weft_node* node;
  int read_elsewhere;
} node_use;

static int compare_node_use(const void* a, const void* b) {
  const weft_node* x = ((const node_use*)a)->node;
  const weft_node* y = ((const node_use*)b)->node;
  return x < y ? -1 : x > y;
}

static int compare_op(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

/* Elements of output 0's static shape; -1 when not fully known. */
static int64_t element_count(weft_node* node) {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* status =
      weft_output_shape((weft_output){node, 0}, dims, WEFT_MAX_RANK, &rank);
  if (status != NULL || rank < 0) {
    weft_status_destroy(status);
    return -1;
  }
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return -1;
    count *= dims[i];
  }
  return count;
}

/* Fills counts (one per op type, sorted by op; room for one per node) and
 * params.  Returns 0, or -1 when memory runs out. */
static int count_graph(weft_graph* g, op_count* counts, int32_t* num_ops,
                       parameter_count* params) {
  int32_t n = weft_graph_node_count(g);
  const char** ops = malloc(sizeof *ops * (size_t)(n > 0 ? n : 1));
  node_use* uses = malloc(sizeof *uses * (size_t)(n > 0 ? n : 1));
  if (ops == NULL || uses == NULL) {
    free(ops);
    free(uses);
    return -1;
  }
  for (int32_t i = 0; i < n; ++i) {
    weft_node* node = weft_graph_node_at(g, i);
    ops[i] = weft_node_op_type(node);
    uses[i] = (node_use){node, 0};
  }
  qsort(uses, (size_t)n, sizeof *uses, compare_node_use);
  for (int32_t i = 0; i < n; ++i) {
    weft_node* node = weft_graph_node_at(g, i);
    if (strcmp(weft_node_op_type(node), "Assign") == 0) continue;
    for (int32_t k = 0; k < weft_node_num_inputs(node); ++k) {
      node_use key = {weft_node_input(node, k).node, 0};
      node_use* found = bsearch(&key, uses, (size_t)n, sizeof *uses,
                                compare_node_use);
      if (found != NULL) found->read_elsewhere = 1;
    }
  }
  memset(params, 0, sizeof *params);
  for (int32_t i = 0; i < n; ++i) {
    const char* op = weft_node_op_type(uses[i].node);
    int64_t elements = element_count((weft_node*)uses[i].node);
    if (elements < 0) continue;
    if (strcmp(op, "Variable") == 0) {
      params->variable_elements += elements;
      params->variable_nodes += 1;
    } else if (strcmp(op, "Const") == 0 && uses[i].read_elsewhere) {
      params->constant_elements += elements;
      params->constant_nodes += 1;
    } else if (strcmp(op, "Const") == 0) {
      params->initializer_elements += elements;
      params->initializer_nodes += 1;
    }
  }
  qsort(ops, (size_t)n, sizeof *ops, compare_op);
  *num_ops = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (*num_ops > 0 && strcmp(counts[*num_ops - 1].op, ops[i]) == 0) {
      counts[*num_ops - 1].nodes += 1;
    } else {
      counts[(*num_ops)++] = (op_count){ops[i], 1};
    }
  }
  free(ops);
  free(uses);
  return 0;
}

static void print_shape_json(weft_output output) {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* status = weft_output_shape(output, dims, WEFT_MAX_RANK, &rank);
  if (status != NULL || rank < 0) {
    weft_status_destroy(status);
    printf("null");
    return;
  }
  printf("[");
  for (int32_t i = 0; i < rank; ++i)
    printf("%s%lld", i ? ", " : "", (long long)dims[i]);
  printf("]");
}

/* One signature's inputs or outputs, as text or JSON. */
static int print_entries(weft_model* model, const char* signature,
                         int32_t is_output, int json) {
  int32_t count = weft_model_signature_size(model, signature, is_output);
  if (json) printf("\"%s\": [", is_output ? "outputs" : "inputs");
  else printf("  %s:\n", is_output ? "outputs" : "inputs");
  for (int32_t i = 0; i < count; ++i) {
    const char* key = NULL;
    weft_output output = {NULL, 0};
    weft_status* status = weft_model_signature_entry(
        model, signature, is_output, i, &key, &output);
    if (status != NULL) {
      fprintf(stderr, "weft inspect: %s\n", weft_status_message(status));
      weft_status_destroy(status);
      return 1;
    }
    char where[512];
    snprintf(where, sizeof where, "%s:%d", weft_node_name(output.node),
             output.index);
    const char* dtype = weft_dtype_name(weft_output_dtype(output));
    if (json) {
      printf("%s{\"key\": ", i ? ", " : "");
      weft_tool_json_string(key);
      printf(", \"output\": ");
      weft_tool_json_string(where);
      printf(", \"dtype\": \"%s\", \"shape\": ", dtype);
      print_shape_json(output);
      printf("}");
    } else {
      char shape[WEFT_MAX_RANK * 22 + 16];
      model_open_shape_text(output, shape, sizeof shape);
      printf("    %-16s %-24s %-8s %s\n", key, where, dtype, shape);
    }
  }
  if (json) printf("]");
  return 0;
}

static void print_usage_error(void) {
  fprintf(stderr, "usage: weft inspect MODEL [--json] [--format "
          "weft|onnx|graphdef] [--graphdef-output NODE ...]\n");
}

int weft_command_inspect(int argc, char** argv) {
  model_open m;
  memset(&m, 0, sizeof m);
  int json = 0;
  for (int i = 1; i < argc; ++i) {
    int taken = model_open_option(&m, "inspect", argc, argv, &i);
    if (taken < 0) return 2;
    if (taken) continue;
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "weft inspect: unknown option '%s'\n", argv[i]);
      print_usage_error();
      return 2;
    } else if (m.path != NULL) {
      fprintf(stderr, "weft inspect: one model at a time ('%s', then "
              "'%s')\n", m.path, argv[i]);
      return 2;
    } else {
      m.path = argv[i];
    }
  }
  if (m.path == NULL) {
    print_usage_error();
    return 2;
  }
  if (m.signature != NULL) {
    fprintf(stderr, "weft inspect: --signature: every signature is shown\n");
    return 2;
  }
  weft_model* model = NULL;
  weft_status* status = model_open_load(&m, NULL, &model);
  if (status != NULL) {
    fprintf(stderr, "weft inspect: %s\n", weft_status_message(status));
    weft_status_destroy(status);
    return 1;
  }
  weft_graph* g = weft_model_graph(model);
  int32_t n = weft_graph_node_count(g);
  op_count* counts = malloc(sizeof *counts * (size_t)(n > 0 ? n : 1));
  int32_t num_ops = 0;
  parameter_count params;
  if (counts == NULL || count_graph(g, counts, &num_ops, &params) != 0) {
    fprintf(stderr, "weft inspect: out of memory\n");
    free(counts);
    weft_model_destroy(model);
    return 1;
  }
  const char* format = model_open_format(&m);
  int rc = 0;
  if (json) {
    printf("{\"path\": ");
    weft_tool_json_string(m.path);
    printf(", \"format\": \"%s\",\n \"signatures\": [", format);
  } else {
    printf("model: %s\nformat: %s\n", m.path, format);
  }
  int32_t num_signatures = weft_model_num_signatures(model);
  for (int32_t s = 0; s < num_signatures && rc == 0; ++s) {
    const char* name = weft_model_signature_name(model, s);
    if (json) {
      printf("%s\n  {\"name\": ", s ? "," : "");
      weft_tool_json_string(name);
      printf(", ");
      rc = print_entries(model, name, 0, 1);
      printf(", ");
      if (rc == 0) rc = print_entries(model, name, 1, 1);
      printf("}");
    } else {
      printf("signature '%s':\n", name);
      rc = print_entries(model, name, 0, 0);
      if (rc == 0) rc = print_entries(model, name, 1, 0);
    }
  }
  if (json) {
    printf("],\n \"nodes\": %d,\n \"ops\": {", n);
    for (int32_t i = 0; i < num_ops; ++i) {
      printf("%s", i ? ", " : "");
      weft_tool_json_string(counts[i].op);
      printf(": %lld", (long long)counts[i].nodes);
    }
    printf("},\n \"parameters\": {\"variables\": %lld, \"variable_nodes\": "
           "%lld, \"constants\": %lld, \"constant_nodes\": %lld, "
           "\"initial_values\": %lld, \"initial_value_nodes\": %lld}}\n",
           (long long)params.variable_elements,
           (long long)params.variable_nodes,
           (long long)params.constant_elements,
           (long long)params.constant_nodes,
           (long long)params.initializer_elements,
           (long long)params.initializer_nodes);
  } else {
    printf("nodes: %d\nops:\n", n);
    for (int32_t i = 0; i < num_ops; ++i)
      printf("  %-24s %lld\n", counts[i].op, (long long)counts[i].nodes);
    printf("parameters:\n");
    printf("  variables: %lld elements in %lld Variable node%s\n",
           (long long)params.variable_elements,
           (long long)params.variable_nodes,
           params.variable_nodes == 1 ? "" : "s");
    printf("  constants: %lld elements in %lld Const node%s",
           (long long)params.constant_elements,
           (long long)params.constant_nodes,
           params.constant_nodes == 1 ? "" : "s");
    if (params.initializer_nodes > 0)
      printf(" (and %lld in %lld holding variables' initial values)",
             (long long)params.initializer_elements,
             (long long)params.initializer_nodes);
    printf("\n");
  }
  free(counts);
  weft_model_destroy(model);
  return rc;
}
