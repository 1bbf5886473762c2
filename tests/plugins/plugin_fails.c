/* A plugin whose entry point reports an error: the host must refuse it and
 * pass the plugin's own message on. */
#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  args->chosen_version = WEFT_VERSION_PACK(1, 0);
  args->plugin = NULL;
  return args->host->status_create(
      WEFT_UNAVAILABLE, "weft-test-fails: this plugin refuses on purpose");
}
