/* A plugin that speaks only interface 2.0, which a 1.x host must refuse
 * before it reads anything else the plugin answered. */
#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

/* Whatever a v2 table looks like, a v1 host must not read it: this one is
 * deliberately too small to be a v1 table. */
static const size_t not_a_v1_table[2] = {sizeof not_a_v1_table, 0};

weft_status* weft_plugin_entry(weft_plugin_init_args* args) {
  args->chosen_version = WEFT_VERSION_PACK(2, 0);
  args->plugin = (const weft_plugin_api*)(const void*)not_a_v1_table;
  return NULL;
}
