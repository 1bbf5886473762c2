/* The device: one of them, with memory the host cannot address. */
#include "template.h"

#include <stdlib.h>

/* A real plugin asks its driver here, and answers an error whose message
 * says why there is no device ("no driver", "firmware too old"): the host
 * keeps the plugin loaded with zero devices and shows that reason. */
weft_status* tpl_device_count(int32_t* out_count) {
  if (out_count == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT, "weft-template: out_count is NULL");
  *out_count = 1;
  return NULL;
}

static long delay_from_environment(void) {
  const char* text = getenv("WEFT_TEMPLATE_DELAY_US");
  if (text == NULL || *text == '\0') return 0;
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1000000) {
    tpl_log(WEFT_LOG_WARNING,
            "weft-template: ignoring WEFT_TEMPLATE_DELAY_US='%s' (want "
            "microseconds from 0 to 1000000)", text);
    return 0;
  }
  return value;
}

#if WEFT_PLUGIN_INTERFACE_MINOR >= 6
/* WEFT_TEMPLATE_UNSUPPORTED_DTYPES: a bit mask of weft_dtype codes (bit
 * 1 << WEFT_INT32 poses as a device that cannot run int32). */
static uint64_t unsupported_from_environment(void) {
  const char* text = getenv("WEFT_TEMPLATE_UNSUPPORTED_DTYPES");
  if (text == NULL || *text == '\0') return 0;
  char* end = NULL;
  unsigned long long value = strtoull(text, &end, 0);
  if (*end != '\0') {
    tpl_log(WEFT_LOG_WARNING,
            "weft-template: ignoring WEFT_TEMPLATE_UNSUPPORTED_DTYPES='%s' "
            "(want a bit mask of dtype codes)", text);
    return 0;
  }
  return (uint64_t)value;
}
#endif

weft_status* tpl_device_open(int32_t index, weft_plugin_device** out) {
  if (out == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT, "weft-template: out is NULL");
  *out = NULL;
  if (index != 0)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: no device %d (there is 1)", index);
  weft_plugin_device* device = calloc(1, sizeof *device);
  if (device == NULL)
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of memory opening device %d", index);
  device->index = index;
  atomic_init(&device->bytes_in_use, 0);
  device->delay_us = delay_from_environment();
  *out = device;
  return NULL;
}

void tpl_device_close(weft_plugin_device* device) {
  if (device == NULL) return;
  uint64_t leaked = atomic_load(&device->bytes_in_use);
  if (leaked != 0)
    tpl_log(WEFT_LOG_WARNING,
            "weft-template: device %d closed with %llu bytes still allocated",
            device->index, (unsigned long long)leaked);
  free(device);
}

weft_status* tpl_device_properties(weft_plugin_device* device,
                                   weft_device_properties* out) {
  if (device == NULL || out == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: device_properties: NULL argument");
  /* The host may be older or newer than these headers: write only what its
   * struct_size covers. */
  if (TPL_HAS_FIELD(out, weft_device_properties, description))
    out->description = "Weft template device (host threads posing as an "
                       "accelerator)";
  if (TPL_HAS_FIELD(out, weft_device_properties, vendor))
    out->vendor = "Weft SDK";
  if (TPL_HAS_FIELD(out, weft_device_properties, memory_bytes))
    out->memory_bytes = TPL_DEVICE_MEMORY_BYTES;
  if (TPL_HAS_FIELD(out, weft_device_properties, compute_gflops))
    out->compute_gflops = 1.0;
  /* No WEFT_DEVICE_HOST_MEMORY: handles are not host pointers. */
  if (TPL_HAS_FIELD(out, weft_device_properties, flags)) out->flags = 0;
#if WEFT_PLUGIN_INTERFACE_MINOR >= 6
  /* Interface 1.6: dtypes this device cannot run although the plugin has
   * kernels for them (hardware without float64, say); the host keeps such
   * nodes off it.  The template runs all it registers; the environment
   * variable lets tests pose as a device that does not. */
  if (TPL_HAS_FIELD(out, weft_device_properties, unsupported_dtypes))
    out->unsupported_dtypes = unsupported_from_environment();
#endif
  return NULL;
}
