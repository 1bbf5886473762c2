// The process-wide registry of loaded plugins, their devices and kernels.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/device.h"
#include "graph/attr.h"
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
};

struct Refusal {
  std::string path;
  std::string reason;
};

class Registry {
 public:
  static Registry& Get();

  // Loads the search path once.
  weft_status* Discover();
  weft_status* Load(const std::string& path);

  std::vector<Device*> Devices();
  std::vector<const Plugin*> Plugins();
  std::vector<Refusal> Refusals();

  // The best kernel for op `op` on `device_type` that accepts a node with
  // attributes `attrs` (every type attribute a kernel constrains).
  const KernelReg* FindKernel(const std::string& op,
                              const std::string& device_type,
                              const AttrMap& attrs);
  // Every kernel registered for `op` (for `weft ops` and error messages).
  std::vector<const KernelReg*> KernelsFor(const std::string& op);

 private:
  weft_status* LoadLocked(const std::string& path);
  weft_status* Refuse(const std::string& path, weft_status* why);

  std::mutex mu_;
  bool discovered_ = false;
  std::deque<std::unique_ptr<Plugin>> plugins_;
  std::deque<std::unique_ptr<Device>> devices_;
  std::vector<Refusal> refusals_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<KernelReg>>>
      kernels_;  // by op
};

// The host's service table handed to every plugin.
const weft_host_api* HostApi();

// Collects kernels during a plugin's entry call.
struct KernelRegistrarImpl {
  std::vector<KernelReg> pending;
  // Gradient functions (host 1.1), installed when the plugin is accepted.
  struct Gradient {
    std::string op;
    weft_gradient_fn fn;
    void* arg;
  };
  std::vector<Gradient> gradients;
  std::string first_error;
};

}  // namespace weft

struct weft_kernel_registrar {
  weft::KernelRegistrarImpl impl;
};
