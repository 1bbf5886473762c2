// The entry point: version negotiation, kernel registration and the
// plugin's table; and, in the baseline build, the choice of the build for
// this machine's vector instructions.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) && !defined(WEFT_CPU_ISA_VARIANT)
#include <dlfcn.h>
#include <unistd.h>
#endif

#include "cpu_device.h"
#include "kernel.h"
#include "plugin_kit.h"
#include "weft/plugin.h"

namespace weft_cpu {
namespace {

constexpr uint32_t kImplementedVersion = WEFT_VERSION_PACK(1, 0);

void Shutdown() {
  try {
    ShutdownThreadPools();
  } catch (...) {
    // Nothing can be reported from here, and nothing may escape.
  }
}

constexpr weft_plugin_api MakeApi() {
  weft_plugin_api api{};
  api.struct_size = sizeof api;
  api.name = "weft-cpu";
#ifdef WEFT_CPU_ISA_VARIANT
  api.version = "0.1.0 (" WEFT_CPU_ISA_VARIANT ")";
#else
  api.version = "0.1.0 (baseline)";
#endif
  api.device_type = "CPU";
  api.device_count = DeviceCount;
  api.device_open = DeviceOpen;
  api.device_close = DeviceClose;
  api.device_properties = DeviceProperties;
  api.memory_allocate = MemoryAllocate;
  api.memory_free = MemoryFree;
  api.copy_host_to_device = CopyHostToDevice;
  api.copy_device_to_host = CopyDeviceToHost;
  api.copy_device_to_device = CopyDeviceToDevice;
  // No streams: kernels and copies finish before they return, which is both
  // what the CPU does anyway and the cheapest path for tiny nodes.
  api.shutdown = Shutdown;
  return api;
}

constexpr weft_plugin_api kApi = MakeApi();

// True when `args` (sized by the host) has room for `field`.
#define WEFT_CPU_ARGS_HAVE(args, field)                                \
  ((args)->struct_size >= offsetof(weft_plugin_init_args, field) +     \
                              sizeof((args)->field))

weft_status* RegisterAll(const Registrar& registrar) {
  using RegisterFn = weft_status* (*)(const Registrar&);
  static constexpr RegisterFn kFamilies[] = {
      RegisterBinaryKernels, RegisterUnaryKernels, RegisterSoftmaxKernels,
      RegisterReduceKernels, RegisterCastKernels,  RegisterMatMulKernels,
      RegisterCompareKernels, RegisterArrayKernels, RegisterRandomKernels,
      RegisterNnKernels,     RegisterLinalgKernels, RegisterGradKernelsA,
      RegisterGradKernelsB,  RegisterTrainKernels,  RegisterDecodeKernels,
  };
  for (RegisterFn family : kFamilies) {
    if (weft_status* s = family(registrar)) return s;
  }
  return nullptr;
}

weft_status* Enter(weft_plugin_init_args* args) {
  if (WEFT_CPU_ARGS_HAVE(args, chosen_version)) {
    args->chosen_version = kImplementedVersion;
  }
  // Without a host table there is no way to build an error status.
  if (!WEFT_CPU_ARGS_HAVE(args, host) || args->host == nullptr) return nullptr;
  const weft_host_api* host = args->host;
  if (host->struct_size < offsetof(weft_host_api, kernel_intra_op_threads) +
                              sizeof(host->kernel_intra_op_threads)) {
    return host->status_create(
        WEFT_FAILED_PRECONDITION,
        "weft-cpu: the host's service table is shorter than interface 1.0's");
  }
  g_host = host;
  // Eigen's GEMM keeps cache-size statics; settle them before the host's
  // threads race to first use.
  Eigen::initParallel();
  if (!WEFT_CPU_ARGS_HAVE(args, plugin)) {
    return MakeStatus(WEFT_FAILED_PRECONDITION,
                      "weft-cpu: the host's init args are shorter than "
                      "interface 1.0's");
  }
  if (weft_status* s = weft_plugin_kit::RefuseOtherMajor(
          host, args, "weft-cpu", kImplementedVersion)) {
    return s;
  }
  if (weft_status* s = RegisterAll(Registrar(host, args->registrar))) {
    return s;
  }
  args->plugin = &kApi;
  return nullptr;
}

#if defined(__x86_64__) && !defined(WEFT_CPU_ISA_VARIANT)
// The x86-64-v3 build's entry point, loaded from weft-cpu-isa/ beside this
// file, when the machine runs it and WEFT_CPU_ISA does not say "baseline";
// NULL to stay with this build.  A missing or broken variant is logged and
// this build serves.  The variant stays loaded for the process's life, as
// plugins do.
weft_plugin_entry_fn VariantEntry(const weft_host_api* host) {
  const char* want = std::getenv("WEFT_CPU_ISA");
  if (want != nullptr && std::strcmp(want, "baseline") == 0) return nullptr;
  if (want != nullptr && *want != '\0' &&
      std::strcmp(want, "x86-64-v3") != 0 && host != nullptr) {
    host->log(WEFT_LOG_WARNING,
              "weft-cpu: WEFT_CPU_ISA must be 'baseline' or 'x86-64-v3'; "
              "choosing by the CPU");
  }
  if (!HasX86_64V3()) return nullptr;
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&VariantEntry), &self) == 0 ||
      self.dli_fname == nullptr) {
    return nullptr;
  }
  std::string path = self.dli_fname;
  size_t slash = path.rfind('/');
  path = (slash == std::string::npos ? std::string(".")
                                      : path.substr(0, slash)) +
         "/weft-cpu-isa/weft-cpu-x86-64-v3.so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // Not installed is normal (a build without variants); say it at debug
    // level only, but a variant that exists and fails to load is a warning.
    const char* why = dlerror();
    if (host != nullptr) {
      std::string msg = "weft-cpu: staying with baseline code: " +
                        std::string(why ? why : path.c_str());
      host->log(access(path.c_str(), F_OK) == 0 ? WEFT_LOG_WARNING
                                                : WEFT_LOG_DEBUG,
                msg.c_str());
    }
    return nullptr;
  }
  auto entry = reinterpret_cast<weft_plugin_entry_fn>(
      dlsym(handle, WEFT_PLUGIN_ENTRY_NAME));
  if (entry == nullptr && host != nullptr) {
    host->log(WEFT_LOG_WARNING,
              ("weft-cpu: " + path + " has no " WEFT_PLUGIN_ENTRY_NAME
               "; staying with baseline code").c_str());
  }
  return entry;
}
#endif

}  // namespace
}  // namespace weft_cpu

extern "C" WEFT_PLUGIN_EXPORT weft_status* weft_plugin_entry(
    weft_plugin_init_args* args) {
  if (args == nullptr) return nullptr;
  try {
#if defined(__x86_64__) && !defined(WEFT_CPU_ISA_VARIANT)
    const weft_host_api* host =
        WEFT_CPU_ARGS_HAVE(args, host) ? args->host : nullptr;
    if (weft_plugin_entry_fn variant = weft_cpu::VariantEntry(host))
      return variant(args);
#endif
    return weft_cpu::Enter(args);
  } catch (...) {
    // Registration copies nothing itself, but stay safe at the boundary.
    if (weft_cpu::g_host == nullptr) return nullptr;
    return weft_cpu::g_host->status_create(
        WEFT_INTERNAL, "weft-cpu: unexpected exception while loading");
  }
}
