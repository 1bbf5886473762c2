/* A plugin of ops only that misbehaves as WEFT_TEST_BAD_OPS says (a build
 * per way), each of which the host must refuse whole, naming the fault:
 *   1  an op schema that does not parse ("x: U", U declared nowhere)
 *   2  a kernel for a runtime op (Relu) on another plugin's device type
 *   3  a kernel for its own op without a device type (it has none) */
#include <string.h>

#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

static weft_status* nothing(void* arg, weft_kernel_context* ctx) {
  (void)arg;
  (void)ctx;
  return NULL;
}

static const weft_plugin_api table = {
    .struct_size = sizeof(weft_plugin_api),
    .name = "weft-test-bad-ops",
    .version = "0",
};

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  args->chosen_version = WEFT_VERSION_PACK(1, 4);
  const weft_host_api* host = args->host;
  static const char* const good_in[] = {"x: float32"};
  static const char* const bad_in[] = {"x: U"};
  static const char* const out[] = {"y: float32"};
  weft_op_def op;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.name = "BadOps>Op";
  op.inputs = WEFT_TEST_BAD_OPS == 1 ? bad_in : good_in;
  op.num_inputs = 1;
  op.outputs = out;
  op.num_outputs = 1;
  /* The plugin ignores the status, as a careless plugin would: the host
   * must still refuse it. */
  host->status_destroy(host->register_op(args->registrar, &op));
  weft_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = WEFT_TEST_BAD_OPS == 2 ? "Relu" : "BadOps>Op";
  k.compute = nothing;
  k.device_type = WEFT_TEST_BAD_OPS == 3 ? NULL : "CPU";
  host->status_destroy(host->register_kernel(args->registrar, &k));
  args->plugin = &table;
  return NULL;
}
