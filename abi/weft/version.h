/** @file
 * Weft — versions of the library and of its two ABI faces.
 *
 * The user API (what programs call) and the plugin interface (what device
 * plugins implement) are versioned apart.  Within a major version, fields
 * and functions are only ever appended, so a program or plugin built against
 * 1.x keeps working with every 1.y host where y >= x.
 */
#ifndef WEFT_VERSION_H_
#define WEFT_VERSION_H_

#include <stdint.h>

#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the user API these headers describe.  Changes, one line per
 * minor version:
 *  1.1  weft_session_options: the fields after intra_op_threads.
 *  1.2  weft_kernel_description: type_constraints.
 *  1.3  weft_session_options.recompute; weft_run_metadata_num_recomputed,
 *       _recomputed, _num_in_place, _in_place, _intra_op_threads; for
 *       plugins, weft_host_api.kernel_forward_input_or_allocate.
 *  1.4  weft_session_options_init_sized (weft_session_options_init is a
 *       macro over it; the function fills only 1.0's fields, the size a
 *       program built against 1.0 headers passes).
 *  1.5  ops defined by programs and plugins: weft_op_register,
 *       weft_kernel_register, weft_kernel_host, the weft_shape_* calls,
 *       weft_kernel_register_host, weft_kernel_attr, weft_node_attr;
 *       weft_op_description.origin.
 *  1.6  model files (weft/model.h): weft_model_create, _save, _load,
 *       _run, _export_onnx, signatures; ONNX and GraphDef import.
 *  1.7  weft_run_options (timeout_ms), weft_run_options_init_sized,
 *       weft_session_run_with_options, weft_session_cancel;
 *       weft_queue_runner_start, _error, _stop; datasets
 *       (weft/dataset.h).
 *  1.8  weft_dataset_fixed_length_records, weft_dataset_interleave,
 *       weft_dataset_component_shape;
 *       asynchronous kernels through weft_kernel_register (plugin
 *       interface 1.5).
 *  1.9  weft_device_description.unsupported_dtypes (plugin interface
 *       1.6).
 *  1.10 weft_cluster_world; the collective ops AllReduce, Broadcast,
 *       AllGather (over MPI under an MPI launcher);
 *       weft_optimizer_options.data_parallel,
 *       weft_optimizer_options_init_sized, weft_broadcast_variables.
 *  1.11 weft_session_options.cluster: sessions whose graphs run across
 *       the tasks of an MPI job; weft_graph_set_device;
 *       weft_optimizer_options.bucket_bytes.
 *  1.12 weft_session_options.serving_jobs, weft_session_serve:
 *       asynchronous clusters of parameter servers; weft_cluster_abort.
 *  1.13 TensorBoard output (weft/summary.h); execution traces
 *       (weft_run_options.trace_level, weft_run_metadata_*trace*);
 *       weft_plugin_shadowed_count, weft_plugin_shadowed.
 *  1.14 weft_kernel_register reads weft_kernel_def.compute_described and
 *       output_overwrites (plugin interface 1.8). */
#define WEFT_ABI_VERSION_MAJOR 1
/** The user API's minor version: see the list above. */
#define WEFT_ABI_VERSION_MINOR 14

/** Packs a (major, minor) pair into one comparable integer. */
#define WEFT_VERSION_PACK(major, minor) \
  ((uint32_t)(((uint32_t)(major) << 16) | ((uint32_t)(minor) & 0xffffu)))
/** The major version of a WEFT_VERSION_PACK'ed value. */
#define WEFT_VERSION_MAJOR_OF(packed) ((uint32_t)(packed) >> 16)
/** The minor version of a WEFT_VERSION_PACK'ed value. */
#define WEFT_VERSION_MINOR_OF(packed) ((uint32_t)(packed) & 0xffffu)

/** The library's release, e.g. "0.1.0".  Static storage.  Thread-safe. */
WEFT_API const char* weft_version_string(void);

/** The user-API version the loaded library implements, packed with
 * WEFT_VERSION_PACK.  A program can compare it with the
 * WEFT_ABI_VERSION_MAJOR/MINOR it was compiled against: the same major and a
 * library minor >= the header minor means every function it uses exists.
 * Thread-safe. */
WEFT_API uint32_t weft_abi_version(void);

/** The range of plugin-interface versions this library can host, packed with
 * WEFT_VERSION_PACK.  Either pointer may be NULL.  Thread-safe. */
WEFT_API void weft_plugin_interface_range(uint32_t* out_min, uint32_t* out_max);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_VERSION_H_ */
