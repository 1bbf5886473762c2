// The one CPU device: discovery and the properties the placer's cost model
// reads.
#include <sched.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cpu_device.h"
#include "kernel.h"
#include "weft/device.h"

// Defined at global scope: the C header declares the tag there.
struct weft_plugin_device {
  int32_t index;
};

namespace weft_cpu {

#if defined(__x86_64__)
// Whether this CPU, and the OS's saving of vector registers, allow
// x86-64-v3 code: AVX, AVX2, FMA, F16C, BMI1/2, LZCNT and MOVBE, with XMM
// and YMM state enabled in XCR0.
bool HasX86_64V3() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = c & (1u << 12), movbe = c & (1u << 22),
             osxsave = c & (1u << 27), avx = c & (1u << 28),
             f16c = c & (1u << 29);
  if (!(fma && movbe && osxsave && avx && f16c)) return false;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6u) != 0x6u) return false;  // XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool bmi1 = b & (1u << 3), avx2 = b & (1u << 5),
             bmi2 = b & (1u << 8);
  if (!(bmi1 && avx2 && bmi2)) return false;
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d)) return false;
  return (c & (1u << 5)) != 0;  // LZCNT (ABM)
}
#endif

namespace {

weft_plugin_device g_device{0};

// Facts about the machine, read once; they live until the plugin unloads.
struct MachineInfo {
  char description[256] = "CPU";
  char vendor[64] = "";
  uint64_t memory_bytes = 0;
  double compute_gflops = 0;
};

// Copies the value of a "key<TAB>: value" line of /proc/cpuinfo into `out`
// when `line` starts with `key`.
bool ReadCpuinfoField(const char* line, const char* key, char* out,
                      size_t size) {
  size_t key_length = strlen(key);
  if (strncmp(line, key, key_length) != 0) return false;
  const char* colon = strchr(line + key_length, ':');
  if (colon == nullptr) return false;
  const char* value = colon + 1;
  while (*value == ' ' || *value == '\t') ++value;
  size_t length = strcspn(value, "\n");
  if (length == 0) return false;
  if (length >= size) length = size - 1;
  memcpy(out, value, length);
  out[length] = '\0';
  return true;
}

// The highest clock the cores reach, in GHz; 0 when unknown.
double ReadMaxClockGhz() {
  if (FILE* f = fopen(
          "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r")) {
    unsigned long long khz = 0;
    bool ok = fscanf(f, "%llu", &khz) == 1;
    fclose(f);
    if (ok && khz > 0) return static_cast<double>(khz) / 1e6;
  }
  return 0;
}

int UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

void ProbeMachine(MachineInfo* info) {
  double cpuinfo_mhz = 0;
  if (FILE* f = fopen("/proc/cpuinfo", "r")) {
    char line[512];
    bool have_model = false, have_vendor = false;
    while (fgets(line, sizeof line, f) != nullptr) {
      char mhz[32];
      if (!have_model) {
        have_model = ReadCpuinfoField(line, "model name", info->description,
                                      sizeof info->description);
      }
      if (!have_vendor) {
        have_vendor = ReadCpuinfoField(line, "vendor_id", info->vendor,
                                       sizeof info->vendor);
      }
      if (cpuinfo_mhz == 0 &&
          ReadCpuinfoField(line, "cpu MHz", mhz, sizeof mhz)) {
        cpuinfo_mhz = strtod(mhz, nullptr);
      }
      if (have_model && have_vendor && cpuinfo_mhz > 0) break;
    }
    fclose(f);
  }

  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    info->memory_bytes =
        static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }

  // A peak estimate for the placer, not a measurement: fp32 flops per
  // cycle per core for the products the plugin runs.  With oneDNN on an
  // x86-64-v3 CPU (FMA, AVX2; AVX-512 ones too), 32: two 8-wide FMAs, or
  // one 16-wide (the floor of that class: Intel parts with one AVX-512
  // FMA unit, AMD's Zen 4 splitting 512-bit operations in two; Zen 5
  // retires 64, and oneDNN reaches ~260 GFLOP/s on one of its cores at
  // 4 GHz).  Otherwise Eigen's baseline SSE2 code, 8: a 4-wide multiply
  // and a 4-wide add.
  // The cost model compares this with other devices' estimates and with
  // rates it measures (PoCL's OpenCL device, which runs on these same
  // cores): 16 for every CPU put the MLP's products on PoCL, 319 against
  // 416 us estimated for 64x784 by 784x256, which oneDNN computes in ~100.
  double ghz = ReadMaxClockGhz();
  if (ghz <= 0) ghz = cpuinfo_mhz / 1000.0;
  if (ghz <= 0) ghz = 2.0;
  double flops_per_cycle = 8.0;
#if WEFT_CPU_HAVE_ONEDNN && defined(__x86_64__)
  if (HasX86_64V3()) flops_per_cycle = 32.0;
#endif
  info->compute_gflops = UsableCores() * ghz * flops_per_cycle;
}

const MachineInfo& Machine() {
  static MachineInfo info;
  static std::once_flag once;
  std::call_once(once, [] { ProbeMachine(&info); });
  return info;
}

}  // namespace

weft_status* DeviceCount(int32_t* out_count) {
  if (out_count == nullptr) {
    return MakeStatus(WEFT_INVALID_ARGUMENT, "weft-cpu: out_count is NULL");
  }
  *out_count = 1;
  return nullptr;
}

weft_status* DeviceOpen(int32_t index, weft_plugin_device** out) {
  if (out == nullptr) {
    return MakeStatus(WEFT_INVALID_ARGUMENT, "weft-cpu: out is NULL");
  }
  if (index != 0) {
    return MakeStatus(WEFT_INVALID_ARGUMENT,
                      "weft-cpu: no CPU device %d (there is one, index 0)",
                      index);
  }
  // All host threads share one device: the whole machine.
  *out = &g_device;
  return nullptr;
}

void DeviceClose(weft_plugin_device* /*device*/) {}

weft_status* DeviceProperties(weft_plugin_device* device,
                              weft_device_properties* out) {
  if (device != &g_device || out == nullptr) {
    return MakeStatus(WEFT_INVALID_ARGUMENT,
                      "weft-cpu: device_properties needs a device from "
                      "device_open and a non-NULL output");
  }
  const MachineInfo* machine = nullptr;
  try {
    machine = &Machine();
  } catch (...) {  // std::call_once may throw std::system_error
    return MakeStatus(WEFT_INTERNAL, "weft-cpu: cannot probe the machine");
  }
  const MachineInfo& info = *machine;
  // Write only what the host's struct covers: an older host's is shorter.
#define WEFT_CPU_SET(field, value)                                         \
  if (out->struct_size >= offsetof(weft_device_properties, field) +        \
                              sizeof(out->field)) {                        \
    out->field = (value);                                                  \
  }
  WEFT_CPU_SET(description, info.description);
  WEFT_CPU_SET(vendor, info.vendor);
  WEFT_CPU_SET(memory_bytes, info.memory_bytes);
  WEFT_CPU_SET(compute_gflops, info.compute_gflops);
  WEFT_CPU_SET(flags, WEFT_DEVICE_HOST_MEMORY);
#undef WEFT_CPU_SET
  return nullptr;
}

}  // namespace weft_cpu
