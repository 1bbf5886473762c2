// The process-wide registry of loaded plugins, their devices and kernels.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/device.h"
#include "graph/attr.h"
#include "ops/registry.h"
#include "weft/plugin.h"
#include "weft/train.h"

namespace weft {

// A kernel's constraint on one type attribute of the nodes it runs.
struct TypeConstraint {
  std::string attr;
  std::vector<int32_t> dtypes;
};

struct KernelReg {
  std::string op;
  std::string device_type;
  std::string plugin;             // its plugin's name
  std::string dtype_attr;         // empty: no constraint
  std::vector<int32_t> dtypes;
  // Constraints on further type attributes (weft_kernel_def 1.2), and the
  // same as C structs for weft_kernel_describe, pointing into them: made by
  // DescribeConstraints once the KernelReg has its final address.
  std::vector<TypeConstraint> type_constraints;
  std::vector<weft_kernel_type_constraint> described_constraints;
  int32_t priority = 0;
  int32_t load_order = 0;         // of the plugin
  weft_kernel_compute_fn compute = nullptr;
  // Asynchronous kernels (weft_kernel_def 1.5): called instead of compute.
  weft_kernel_compute_fn compute_async = nullptr;
  // Calls with every tensor described by the host (weft_kernel_def 1.8),
  // for nodes whose outputs are known at plan time (PlanNode::described),
  // and the inputs output 0 may overwrite there.
  weft_kernel_described_fn compute_described = nullptr;
  uint32_t output_overwrites = 0;
  void* arg = nullptr;

  // Whether every constrained type attribute of a node with `attrs` holds
  // an accepted dtype; an attribute the node lacks is not accepted.
  bool Accepts(const AttrMap& attrs) const;
  void DescribeConstraints();
};

struct Plugin {
  std::string path;
  std::string name;
  std::string version;
  std::string device_type;
  uint32_t interface_version = 0;
  void* dl = nullptr;
  weft_plugin_api api{};  // zero-extended copy of the plugin's table
  std::string no_device_reason;
  std::vector<Device*> devices;
  int32_t load_order = 0;
  // Devices are opened when first needed (Registry::EnsureDevices), not
  // when the plugin loads: a process that never asks for this plugin's
  // device type never runs its device discovery (an OpenCL platform's
  // compiler, a GPU driver).  devices and no_device_reason are written once,
  // before devices_opened is set.
  std::once_flag open_devices;
  std::atomic<bool> devices_opened{false};
};

struct Refusal {
  std::string path;
  std::string reason;
};

// A plugin file not loaded because the same plugin (same name and device
// type) was loaded first from another file: a build tree's on
// WEFT_PLUGIN_PATH ahead of the installed one.  Nothing is wrong with it.
struct Shadowed {
  std::string path;
  std::string shadowed_by;  // the loaded plugin's file
};

// Copies a string a plugin handed over, reading at most
// WEFT_PLUGIN_MAX_STRING bytes of it: false when no NUL ends it within
// that, so a missing terminator cannot send the host through its memory.
bool ReadPluginString(const char* s, std::string* out);
// The same for text where a cut is harmless (status messages, log lines):
// at most WEFT_PLUGIN_MAX_STRING - 1 bytes of it; NULL reads as "".
std::string PluginText(const char* s);

class Registry {
 public:
  // The process's registry.  Other instances exist only for the fuzzer.
  static Registry& Get();
  Registry() = default;
  ~Registry();

  // Loads the search path once; a second caller waits for the first.  The
  // plugins found open their devices when first needed (Devices()).
  weft_status* Discover();
  // Opens the shared object at `path` and loads it as a plugin.  The
  // registry's lock is never held across a call that may block (dlopen, the
  // plugin's own functions): the plugin is prepared unlocked and published
  // under the lock.  Concurrent loads of one file wait for each other.
  // With `devices_now` (weft_plugin_load) the plugin opens its devices
  // before it is accepted, and a device count out of range refuses it;
  // otherwise that count leaves it without devices, the reason recorded.
  weft_status* Load(const std::string& path, bool devices_now = true);
  // The part of Load after dlsym: negotiation, table checks, devices,
  // kernels.  `dl` (may be NULL) is closed when the plugin is refused.
  weft_status* LoadEntry(const std::string& path, void* dl,
                         weft_plugin_entry_fn entry, bool devices_now = true);

  // The devices of the plugins whose device type `wanted` accepts (null:
  // every plugin), opening them first where no one has yet, and those of
  // plugins opened before: in plugin load order.
  std::vector<Device*> Devices(
      const std::function<bool(const std::string& type)>& wanted = nullptr);
  // Every plugin, each with its devices opened.
  std::vector<const Plugin*> Plugins();
  std::vector<Refusal> Refusals();
  std::vector<Shadowed> ShadowedPlugins();

  // The best kernel for op `op` on `device_type` that accepts a node with
  // attributes `attrs` (every type attribute a kernel constrains).  A
  // device type belongs to one plugin (LoadEntry refuses a second), so the
  // kernels found are always those of the plugin that owns the device.
  const KernelReg* FindKernel(const std::string& op,
                              const std::string& device_type,
                              const AttrMap& attrs);
  // The first dtype among the type attributes `attrs` that `device` cannot
  // run, or -1 when it runs them all.
  static int32_t UnsupportedDtype(const Device* device, const AttrMap& attrs);
  // The same for one device: none where the node's type attributes name a
  // dtype the device cannot run (Device::unsupported_dtypes).
  const KernelReg* FindKernel(const std::string& op, const Device* device,
                              const AttrMap& attrs);
  // Every kernel registered for `op` (for `weft ops` and error messages).
  std::vector<const KernelReg*> KernelsFor(const std::string& op);
  // A kernel the program registered (weft_kernel_register): its device
  // type's plugin may load before or after; plugin name "program".
  void AddProgramKernel(KernelReg kernel);

 private:
  void EnsureDevices(
      const std::function<bool(const std::string& type)>& wanted);
  weft_status* OpenDevices(Plugin* plugin,
                           std::vector<std::unique_ptr<Device>>* devices);
  // Numbers and publishes `devices` (emptied).  Called under mu_.
  void PublishDevicesLocked(Plugin* plugin,
                            std::vector<std::unique_ptr<Device>>* devices);
  // Records the refusal (takes the lock) and returns `why`.
  weft_status* Refuse(const std::string& path, weft_status* why);
  // Why `candidate` may not join the loaded plugins (a name or device type
  // already taken), or NULL.  When a plugin of the same name and device
  // type holds them, the candidate is that plugin again, shadowed by it:
  // *shadowed_by is set to its file.  Called under mu_.
  weft_status* ConflictLocked(const Plugin& candidate,
                              std::string* shadowed_by);
  // Files `k` under its op, best first.  Called under mu_.
  void AddKernelLocked(KernelReg k);

  std::mutex mu_;
  std::condition_variable changed_;  // discovery_ or loading_ changed
  enum class Discovery { kNotStarted, kRunning, kDone };
  Discovery discovery_ = Discovery::kNotStarted;
  std::set<std::string> loading_;  // real paths being loaded now
  // Every registrar handed out, kept so that a plugin calling one after its
  // entry returned reaches a closed registrar, not freed memory.
  std::deque<std::unique_ptr<weft_kernel_registrar>> registrars_;
  std::deque<std::unique_ptr<Plugin>> plugins_;
  std::deque<std::unique_ptr<Device>> devices_;
  std::vector<Refusal> refusals_;
  std::vector<Shadowed> shadowed_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<KernelReg>>>
      kernels_;  // by op
};

// The host's service table handed to every plugin.
const weft_host_api* HostApi();

// Collects kernels during a plugin's entry call, and refuses them after.
struct KernelRegistrarImpl {
  std::mutex mu;       // a plugin may call from any thread, at any time
  bool open = true;    // until the entry returns
  std::vector<KernelReg> pending;
  // Gradient functions (host 1.1), installed when the plugin is accepted.
  struct Gradient {
    std::string op;
    weft_gradient_fn fn;
    void* arg;
  };
  std::vector<Gradient> gradients;
  // Ops the plugin defines (host 1.4), added to the library when the
  // plugin is accepted, all or none.
  std::vector<OpDef> ops;
  std::string first_error;
};

// Reads a kernel definition (every string bounded).  An op `known` refuses
// sets *ignored (out->op says which) instead of failing: a kernel for an
// op of a newer library.
weft_status* KernelFromDef(const weft_kernel_def* def,
                           const std::function<bool(const std::string&)>& known,
                           KernelReg* out, bool* ignored);

}  // namespace weft

struct weft_kernel_registrar {
  weft::KernelRegistrarImpl impl;
};
