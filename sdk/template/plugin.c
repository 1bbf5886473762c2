/* The entry point: version negotiation, kernel registration, and the table
 * of everything else the plugin provides. */
#include "template.h"

#include <stddef.h>

const weft_host_api* tpl_host = NULL;

/* The interface this file was written against.  Deliberately not
 * WEFT_PLUGIN_INTERFACE_MAJOR/MINOR: those move when the headers are
 * updated, and the code here does not move with them. */
#define TPL_IMPLEMENTED_VERSION WEFT_VERSION_PACK(1, 0)

/* The last host slot this plugin calls.  A shorter host table is from a
 * host too old to serve it. */
#define TPL_LAST_HOST_SLOT kernel_stream

static const weft_plugin_api tpl_api = {
    /* The size of the table as these headers define it: a newer host reads
     * only this much and treats its later slots as absent. */
    .struct_size = sizeof(weft_plugin_api),
#ifdef TPL_PLANTED_BUG
    /* A second build with a wrong kernel, for `weft conformance`'s test;
     * its own name and device type let it load beside the template. */
    .name = "weft-template-planted",
    .version = "0.1.0",
    .device_type = "PLANTED",
#else
    .name = "weft-template",
    .version = "0.1.0",
    .device_type = "TEMPLATE",
#endif

    .device_count = tpl_device_count,
    .device_open = tpl_device_open,
    .device_close = tpl_device_close,
    .device_properties = tpl_device_properties,

    .memory_allocate = tpl_memory_allocate,
    .memory_free = tpl_memory_free,

    .copy_host_to_device = tpl_copy_host_to_device,
    .copy_device_to_host = tpl_copy_device_to_host,
    .copy_device_to_device = tpl_copy_device_to_device,

    /* All or none: with stream_create set, the host requires every slot of
     * the group. */
    .stream_create = tpl_stream_create,
    .stream_destroy = tpl_stream_destroy,
    .stream_synchronize = tpl_stream_synchronize,
    .event_create = tpl_event_create,
    .event_destroy = tpl_event_destroy,
    .event_record = tpl_event_record,
    .event_synchronize = tpl_event_synchronize,
    .stream_wait_event = tpl_stream_wait_event,

    /* Nothing global to release: devices, streams, events and memory all
     * go back through their own slots. */
    .shutdown = NULL,
};

static weft_status* enter(weft_plugin_init_args* args) {
  const weft_host_api* host = args->host;
  if (!TPL_HAS_FIELD(host, weft_host_api, status_create) ||
      host->status_create == NULL)
    return NULL; /* not even a way to say why; the host finds no table */
  if (!TPL_HAS_FIELD(host, weft_host_api, TPL_LAST_HOST_SLOT))
    return host->status_create(WEFT_FAILED_PRECONDITION,
                               "weft-template: the host's service table is "
                               "shorter than plugin interface 1.0's");
  tpl_host = host;
  if (!TPL_HAS_FIELD(args, weft_plugin_init_args, plugin))
    return tpl_status(WEFT_FAILED_PRECONDITION,
                      "weft-template: the host's init args are shorter than "
                      "plugin interface 1.0's");

  /* Negotiation: any host speaking our major will do, and within a major
   * the lower minor is what both sides know.  From here on, code that
   * would use a slot added after 1.0 checks `chosen`, never the headers'
   * constants. */
  uint32_t ours = TPL_IMPLEMENTED_VERSION;
  uint32_t lo = args->host_min_version, hi = args->host_max_version;
  uint32_t major = WEFT_VERSION_MAJOR_OF(ours);
  if (WEFT_VERSION_MAJOR_OF(lo) > major || WEFT_VERSION_MAJOR_OF(hi) < major)
    return tpl_status(WEFT_FAILED_PRECONDITION,
                      "weft-template implements plugin interface %u.%u; the "
                      "host speaks %u.%u to %u.%u",
                      major, WEFT_VERSION_MINOR_OF(ours),
                      WEFT_VERSION_MAJOR_OF(lo), WEFT_VERSION_MINOR_OF(lo),
                      WEFT_VERSION_MAJOR_OF(hi), WEFT_VERSION_MINOR_OF(hi));
  uint32_t chosen =
      WEFT_VERSION_MAJOR_OF(hi) == major && hi < ours ? hi : ours;
  args->chosen_version = chosen;
  tpl_log(WEFT_LOG_DEBUG, "weft-template: speaking plugin interface %u.%u",
          WEFT_VERSION_MAJOR_OF(chosen), WEFT_VERSION_MINOR_OF(chosen));

  /* Registration is valid only during this call: the registrar goes away
   * when it returns. */
  weft_status* status = tpl_register_kernels(args->registrar);
  if (status != NULL) return status;
  args->plugin = &tpl_api;
  return NULL;
}

/* The one exported symbol (WEFT_PLUGIN_EXPORT under -fvisibility=hidden;
 * the version script hides anything a static dependency might export). */
WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(weft_plugin_init_args* args);

WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(
    weft_plugin_init_args* args) {
  if (args == NULL) return NULL;
  /* Written first, whatever happens next: the host names this version when
   * it refuses the plugin. */
  if (TPL_HAS_FIELD(args, weft_plugin_init_args, chosen_version))
    args->chosen_version = TPL_IMPLEMENTED_VERSION;
  if (!TPL_HAS_FIELD(args, weft_plugin_init_args, host) || args->host == NULL)
    return NULL;
  return enter(args);
}
