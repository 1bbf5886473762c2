// The plugin's device and memory slots, gathered into the table by plugin.cc.
#ifndef WEFT_PLUGINS_CPU_CPU_DEVICE_H_
#define WEFT_PLUGINS_CPU_CPU_DEVICE_H_

#include "weft/plugin.h"

namespace weft_cpu {

#if defined(__x86_64__)
// Whether the CPU and the OS run x86-64-v3 code (device.cc): the choice of
// the plugin's build, and of its compute estimate.
bool HasX86_64V3();
#endif

weft_status* DeviceCount(int32_t* out_count);
weft_status* DeviceOpen(int32_t index, weft_plugin_device** out);
void DeviceClose(weft_plugin_device* device);
weft_status* DeviceProperties(weft_plugin_device* device,
                              weft_device_properties* out);

weft_status* MemoryAllocate(weft_plugin_device* device, uint64_t bytes,
                            void** out_handle);
void MemoryFree(weft_plugin_device* device, void* handle);
weft_status* CopyHostToDevice(weft_plugin_device* device,
                              weft_plugin_stream* stream, const void* host_src,
                              void* dst, uint64_t dst_offset, uint64_t bytes);
weft_status* CopyDeviceToHost(weft_plugin_device* device,
                              weft_plugin_stream* stream, const void* src,
                              uint64_t src_offset, void* host_dst,
                              uint64_t bytes);
weft_status* CopyDeviceToDevice(weft_plugin_device* device,
                                weft_plugin_stream* stream, const void* src,
                                uint64_t src_offset, void* dst,
                                uint64_t dst_offset, uint64_t bytes);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_CPU_DEVICE_H_
