/** @file
 * Weft — plugins and the devices they provide.
 *
 * Plugins are found on the search path — the directories listed in the
 * WEFT_PLUGIN_PATH environment variable (separated by ':'), then the
 * installation's plugin directory — the first time any function here or
 * weft_session_create() needs them.  More can be loaded by path at any time.
 * A plugin that cannot be used is refused, with the reason kept for
 * weft_plugin_refusal(); the others keep working.  Plugins stay loaded until
 * the process exits.
 *
 * Threads: every function here is thread-safe.
 */
#ifndef WEFT_DEVICE_H_
#define WEFT_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Device flags. */
#define WEFT_DEVICE_HOST_MEMORY 0x1u /* device memory is host-addressable */

/** A device as the runtime sees it.  The caller sets struct_size to the size
 * it knows; the library fills only the fields that size covers.  Strings are
 * borrowed and live until the process exits. */
typedef struct weft_device_description {
  size_t struct_size;      /**< sizeof(weft_device_description) as known */
  const char* name;        /**< "/device:CPU:0" */
  const char* type;        /**< "CPU", "OPENCL", "CUDA" */
  int32_t index;           /**< index among the devices of that type */
  const char* description; /**< hardware name, e.g. "pthread-AMD EPYC" */
  const char* vendor;      /**< hardware vendor, "" when unknown */
  const char* plugin;      /**< name of the plugin that provides it */
  uint64_t memory_bytes;   /**< 0 when unknown */
  double compute_gflops;   /**< the plugin's estimate; 0 when unknown */
  uint32_t flags;          /**< WEFT_DEVICE_* */
  /** 1.9: bit (1 << d) set for each weft_dtype d the device cannot run
   * although its plugin has kernels for it (an OpenCL device without
   * float64); the placer keeps such nodes off the device.  0: none. */
  uint64_t unsupported_dtypes;
} weft_device_description;

/** A loaded plugin. Same rules as weft_device_description. */
typedef struct weft_plugin_description {
  size_t struct_size;      /**< sizeof(weft_plugin_description) as known */
  const char* name;        /**< "weft-cpu" */
  const char* version;     /**< the plugin's own release */
  const char* path;        /**< the file it was loaded from */
  uint32_t interface_version; /**< negotiated, WEFT_VERSION_PACK'ed */
  const char* device_type; /**< the device type it provides, "CPU" */
  int32_t device_count;    /**< devices it found on this machine */
  /** Why device_count is 0 ("no CUDA driver: ..."); "" otherwise. */
  const char* no_device_reason;
} weft_plugin_description;

/** The processes of the program's job: this process's rank (0-based) and
 * how many there are.  A program started by an MPI launcher (mpirun) is
 * one rank of the launcher's job: the first call starts MPI (through
 * Weft's MPI module) and collective ops (AllReduce, Broadcast, AllGather)
 * then run across the ranks; any other program is rank 0 of 1, and
 * collectives are the identity.  Errors: UNAVAILABLE when started by a
 * launcher but this Weft has no MPI module or MPI does not start (every
 * later call, and every collective, gives the same error).  User API 1.10. */
WEFT_API WEFT_MUST_USE weft_status* weft_cluster_world(int32_t* out_rank,
                                                      int32_t* out_size);

/** Ends every process of the program's MPI job at once, with exit status
 * `code` (MPI_Abort): for a job that cannot end cleanly, because a rank
 * died and finishing MPI would wait for it forever (weft_session_serve's
 * UNAVAILABLE says so).  Does not return under a launcher; a process alone
 * gets FAILED_PRECONDITION (there is no job to end), as does one whose
 * MPI did not start (that error).  User API 1.12. */
WEFT_API WEFT_MUST_USE weft_status* weft_cluster_abort(int32_t code);

/** Loads the plugins on the search path if not done yet.  Refusals are not
 * errors here (see weft_plugin_refusal); the call fails only on internal
 * errors.  Calling it again does nothing. */
WEFT_API WEFT_MUST_USE weft_status* weft_plugins_discover(void);

/** Loads one plugin file.  Errors: NOT_FOUND (no such file), INVALID_ARGUMENT
 * (not a shared object, or no entry symbol), FAILED_PRECONDITION (an
 * interface version this host does not speak; the message names both),
 * ALREADY_EXISTS (its name or device type is taken), or the error the
 * plugin's entry returned.  A refusal is also recorded for
 * weft_plugin_refusal(), except for a copy of a plugin already loaded from
 * another file, which is recorded for weft_plugin_shadowed().  Loading the
 * same file twice is a no-op. */
WEFT_API WEFT_MUST_USE weft_status* weft_plugin_load(const char* path);

/** How many plugins are loaded (those found on the search path, plus those
 * loaded with weft_plugin_load()). */
WEFT_API int32_t weft_plugin_count(void);
/** Describes loaded plugin `index`.  INVALID_ARGUMENT when out of range. */
WEFT_API WEFT_MUST_USE weft_status* weft_plugin_describe(
    int32_t index, weft_plugin_description* out);

/** How many plugin files were refused. */
WEFT_API int32_t weft_plugin_refusal_count(void);
/** Plugin file `index` that was refused, with the reason.  Strings borrowed
 * until process exit.  INVALID_ARGUMENT when out of range. */
WEFT_API WEFT_MUST_USE weft_status* weft_plugin_refusal(
    int32_t index, const char** out_path, const char** out_reason);

/** How many plugin files were shadowed: not loaded because the same plugin
 * (the same name and device type) was loaded first from another file, as
 * an installed plugin is when a build tree's copy comes first on
 * WEFT_PLUGIN_PATH.  Nothing is wrong with them, so they are not refusals
 * (before 1.13 they were).  A plugin of another name claiming a device
 * type already taken is still refused.  User API 1.13. */
WEFT_API int32_t weft_plugin_shadowed_count(void);
/** Shadowed plugin file `index`: its path and the path of the loaded
 * plugin that shadows it (see weft_plugin_describe for that plugin's
 * version).  Strings borrowed until process exit.  INVALID_ARGUMENT when
 * out of range.  User API 1.13. */
WEFT_API WEFT_MUST_USE weft_status* weft_plugin_shadowed(
    int32_t index, const char** out_path, const char** out_shadowed_by);

/** How many devices all loaded plugins provide together. */
WEFT_API int32_t weft_device_count(void);
/** Describes device `index` (0 to weft_device_count() - 1) into `out`, whose
 * struct_size the caller sets.  INVALID_ARGUMENT when out of range. */
WEFT_API WEFT_MUST_USE weft_status* weft_device_describe(
    int32_t index, weft_device_description* out);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DEVICE_H_ */
