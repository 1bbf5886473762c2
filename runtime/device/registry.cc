// Finding, opening, negotiating with and registering plugins.
#include "device/registry.h"

#include <cstdio>

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "base/status.h"
#include "graph/op_registry.h"

#ifndef WEFT_PLUGIN_DIR
#define WEFT_PLUGIN_DIR ""
#endif
// The plugin directory relative to the library's own (libdir).
#ifndef WEFT_PLUGIN_SUBDIR
#define WEFT_PLUGIN_SUBDIR ""
#endif

namespace weft {
namespace {

constexpr uint32_t kHostMin = WEFT_VERSION_PACK(1, 0);
constexpr uint32_t kHostMax =
    WEFT_VERSION_PACK(WEFT_PLUGIN_INTERFACE_MAJOR, WEFT_PLUGIN_INTERFACE_MINOR);

std::string VersionString(uint32_t v) {
  return std::to_string(WEFT_VERSION_MAJOR_OF(v)) + "." +
         std::to_string(WEFT_VERSION_MINOR_OF(v));
}

// The 1.0 table ends with `shutdown`; anything shorter is not a v1 plugin.
constexpr size_t kMinPluginApiSize =
    offsetof(weft_plugin_api, shutdown) + sizeof(void (*)(void));

const char* MissingRequiredSlot(const weft_plugin_api& a) {
  if (!a.name) return "name";
  if (!a.device_type) return "device_type";
  if (!a.device_count) return "device_count";
  if (!a.device_open) return "device_open";
  if (!a.device_close) return "device_close";
  if (!a.device_properties) return "device_properties";
  if (!a.memory_allocate) return "memory_allocate";
  if (!a.memory_free) return "memory_free";
  if (!a.copy_host_to_device) return "copy_host_to_device";
  if (!a.copy_device_to_host) return "copy_device_to_host";
  if (!a.copy_device_to_device) return "copy_device_to_device";
  if (a.stream_create) {
    if (!a.stream_destroy) return "stream_destroy";
    if (!a.stream_synchronize) return "stream_synchronize";
    if (!a.event_create) return "event_create";
    if (!a.event_destroy) return "event_destroy";
    if (!a.event_record) return "event_record";
    if (!a.event_synchronize) return "event_synchronize";
    if (!a.stream_wait_event) return "stream_wait_event";
  }
  return nullptr;
}

// The plugin directory of the installation this libweft belongs to:
// WEFT_PLUGIN_SUBDIR beside the library file itself when that exists, so an
// installation that was moved, unpacked elsewhere or installed with DESTDIR
// finds its own plugins (and never those of another installation at the
// configured prefix); otherwise the configured WEFT_PLUGIN_DIR, which is
// where a libweft run from its build tree looks.
std::string InstalledPluginDir() {
  Dl_info self;
  if (*WEFT_PLUGIN_SUBDIR &&
      dladdr(reinterpret_cast<void*>(&InstalledPluginDir), &self) != 0 &&
      self.dli_fname != nullptr) {
    std::string library = self.dli_fname;
    size_t slash = library.rfind('/');
    if (slash != std::string::npos) {
      std::string dir = library.substr(0, slash + 1) + WEFT_PLUGIN_SUBDIR;
      struct stat st;
      if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir;
    }
  }
  return WEFT_PLUGIN_DIR;
}

std::vector<std::string> SearchPath() {
  std::vector<std::string> dirs;
  if (const char* env = getenv("WEFT_PLUGIN_PATH")) {
    std::string s(env);
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  std::string installed = InstalledPluginDir();
  if (!installed.empty()) dirs.push_back(installed);
  return dirs;
}

// Shared objects in a directory, sorted so that loading order (and so kernel
// priority ties) does not depend on the file system.
std::vector<std::string> PluginFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 3 && n.compare(n.size() - 3, 3, ".so") == 0)
      files.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

bool KernelReg::Accepts(int32_t dtype) const {
  if (dtype_attr.empty()) return true;
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

Registry& Registry::Get() {
  // Never destroyed: plugins stay loaded until the process exits, and worker
  // threads may still use them during static destruction.
  static Registry* r = new Registry;
  return *r;
}

weft_status* Registry::Discover() {
  std::lock_guard<std::mutex> lock(mu_);
  if (discovered_) return nullptr;
  discovered_ = true;
  for (const std::string& dir : SearchPath()) {
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) continue;
    std::vector<std::string> files =
        S_ISDIR(st.st_mode) ? PluginFilesIn(dir) : std::vector<std::string>{dir};
    for (const std::string& f : files) weft_status_destroy(LoadLocked(f));
  }
  return nullptr;
}

weft_status* Registry::Load(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadLocked(path);
}

weft_status* Registry::Refuse(const std::string& path, weft_status* why) {
  refusals_.push_back(Refusal{path, weft_status_message(why)});
  return why;
}

weft_status* Registry::LoadLocked(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr)
    return Refuse(path, Errorf(WEFT_NOT_FOUND, "plugin %s: no such file",
                               path.c_str()));
  std::string real = resolved;
  for (const auto& p : plugins_)
    if (p->path == real) return nullptr;  // already loaded

  void* dl = dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* why = dlerror();
    return Refuse(real, Errorf(WEFT_INVALID_ARGUMENT,
                               "%s is not a loadable shared object: %s",
                               real.c_str(), why ? why : "unknown error"));
  }
  auto entry = reinterpret_cast<weft_plugin_entry_fn>(
      dlsym(dl, WEFT_PLUGIN_ENTRY_NAME));
  if (entry == nullptr) {
    dlclose(dl);
    return Refuse(real, Errorf(WEFT_INVALID_ARGUMENT,
                               "%s is not a Weft plugin: it exports no '%s'",
                               real.c_str(), WEFT_PLUGIN_ENTRY_NAME));
  }

  weft_kernel_registrar registrar;
  weft_plugin_init_args args{};
  args.struct_size = sizeof args;
  args.host_min_version = kHostMin;
  args.host_max_version = kHostMax;
  args.host = HostApi();
  args.registrar = &registrar;
  weft_status* st = entry(&args);

  uint32_t chosen = args.chosen_version;
  if (WEFT_VERSION_MAJOR_OF(chosen) < WEFT_VERSION_MAJOR_OF(kHostMin) ||
      WEFT_VERSION_MAJOR_OF(chosen) > WEFT_VERSION_MAJOR_OF(kHostMax) ||
      chosen > kHostMax) {
    weft_status_destroy(st);
    dlclose(dl);
    return Refuse(real, Errorf(WEFT_FAILED_PRECONDITION,
                               "plugin %s implements plugin interface %s; "
                               "this host speaks %s to %s",
                               real.c_str(), VersionString(chosen).c_str(),
                               VersionString(kHostMin).c_str(),
                               VersionString(kHostMax).c_str()));
  }
  if (st != nullptr) {
    dlclose(dl);
    return Refuse(real, Annotate(st, "plugin " + real +
                                         " failed to initialise"));
  }
  if (!registrar.impl.first_error.empty()) {
    dlclose(dl);
    return Refuse(real, Errorf(WEFT_INVALID_ARGUMENT,
                               "plugin %s registered a bad kernel: %s",
                               real.c_str(),
                               registrar.impl.first_error.c_str()));
  }
  const weft_plugin_api* table = args.plugin;
  if (table == nullptr || table->struct_size < kMinPluginApiSize) {
    dlclose(dl);
    return Refuse(real, Errorf(WEFT_INVALID_ARGUMENT,
                               "plugin %s returned %s plugin table",
                               real.c_str(), table ? "a truncated" : "no"));
  }

  auto plugin = std::make_unique<Plugin>();
  std::memcpy(&plugin->api, table,
              std::min(table->struct_size, sizeof(weft_plugin_api)));
  plugin->api.struct_size = sizeof(weft_plugin_api);
  if (const char* slot = MissingRequiredSlot(plugin->api)) {
    dlclose(dl);
    return Refuse(real, Errorf(WEFT_INVALID_ARGUMENT,
                               "plugin %s leaves required slot '%s' empty",
                               real.c_str(), slot));
  }
  for (const auto& p : plugins_)
    if (p->name == plugin->api.name) {
      dlclose(dl);
      return Refuse(real, Errorf(WEFT_ALREADY_EXISTS,
                                 "a plugin named '%s' is already loaded "
                                 "from %s", p->name.c_str(), p->path.c_str()));
    }

  plugin->path = real;
  plugin->dl = dl;
  plugin->name = plugin->api.name;
  plugin->version = plugin->api.version ? plugin->api.version : "";
  plugin->device_type = plugin->api.device_type;
  plugin->interface_version = chosen;
  plugin->load_order = static_cast<int32_t>(plugins_.size());

  int32_t count = 0;
  if (weft_status* cs = plugin->api.device_count(&count)) {
    plugin->no_device_reason = weft_status_message(cs);
    weft_status_destroy(cs);
    count = 0;
  } else if (count == 0) {
    plugin->no_device_reason = "the plugin found no device";
  }
  int32_t type_index = 0;
  for (const auto& d : devices_)
    if (d->type == plugin->device_type) ++type_index;
  for (int32_t i = 0; i < count; ++i) {
    auto dev = std::make_unique<Device>();
    dev->plugin = plugin.get();
    dev->api = &plugin->api;
    if (weft_status* os = plugin->api.device_open(i, &dev->handle)) {
      plugin->no_device_reason = std::string("device ") + std::to_string(i) +
                                 " failed to open: " + weft_status_message(os);
      weft_status_destroy(os);
      continue;
    }
    weft_device_properties props{};
    props.struct_size = sizeof props;
    if (weft_status* ps = plugin->api.device_properties(dev->handle, &props)) {
      weft_status_destroy(ps);
      props = weft_device_properties{};
    }
    dev->type = plugin->device_type;
    dev->index = type_index++;
    dev->name = "/device:" + dev->type + ":" + std::to_string(dev->index);
    dev->description = props.description ? props.description : "";
    dev->vendor = props.vendor ? props.vendor : "";
    dev->memory_bytes = props.memory_bytes;
    dev->compute_gflops = props.compute_gflops;
    dev->flags = props.flags;
    plugin->devices.push_back(dev.get());
    devices_.push_back(std::move(dev));
  }

  for (KernelReg& k : registrar.impl.pending) {
    k.device_type = plugin->device_type;
    k.plugin = plugin->name;
    k.load_order = plugin->load_order;
    auto& list = kernels_[k.op];
    list.push_back(std::make_unique<KernelReg>(std::move(k)));
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) {
                       if (a->priority != b->priority)
                         return a->priority > b->priority;
                       return a->load_order < b->load_order;
                     });
  }
  for (const KernelRegistrarImpl::Gradient& g : registrar.impl.gradients) {
    weft_status* st = weft_gradient_register(g.op.c_str(), g.fn, g.arg);
    if (st != nullptr) {
      std::fprintf(stderr, "weft: plugin '%s': gradient of %s not "
                   "installed: %s\n", plugin->name.c_str(), g.op.c_str(),
                   weft_status_message(st));
      weft_status_destroy(st);
    }
  }
  plugins_.push_back(std::move(plugin));
  return nullptr;
}

std::vector<Device*> Registry::Devices() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

std::vector<const Plugin*> Registry::Plugins() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Plugin*> out;
  for (const auto& p : plugins_) out.push_back(p.get());
  return out;
}

std::vector<Refusal> Registry::Refusals() {
  std::lock_guard<std::mutex> lock(mu_);
  return refusals_;
}

const KernelReg* Registry::FindKernel(const std::string& op,
                                      const std::string& device_type,
                                      int32_t dtype) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(op);
  if (it == kernels_.end()) return nullptr;
  for (const auto& k : it->second)
    if (k->device_type == device_type && k->Accepts(dtype)) return k.get();
  return nullptr;
}

std::vector<const KernelReg*> Registry::KernelsFor(const std::string& op) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const KernelReg*> out;
  auto it = kernels_.find(op);
  if (it != kernels_.end())
    for (const auto& k : it->second) out.push_back(k.get());
  return out;
}

size_t Device::RoundedSize(size_t bytes) const {
  if (bytes <= (size_t{64} << (kSmallClasses - 1))) {
    size_t cap = 64;
    while (cap < bytes) cap <<= 1;
    return cap;
  }
  if (bytes > kLargestCached) return bytes;  // not cached: no rounding
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

std::vector<Buffer*>* Device::CacheList(size_t rounded) {
  if (rounded <= (size_t{64} << (kSmallClasses - 1))) {
    int c = 0;
    while ((size_t{64} << c) < rounded) ++c;
    return &small_cache_[c];
  }
  if (rounded > kLargestCached) return nullptr;
  return &large_cache_[rounded];
}

weft_status* Device::Allocate(size_t bytes, BufferRef* out) {
  *out = BufferRef();
  if (bytes == 0) return nullptr;
  size_t rounded = RoundedSize(bytes);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    std::vector<Buffer*>* list = CacheList(rounded);
    if (list != nullptr && !list->empty()) {
      Buffer* b = list->back();
      list->pop_back();
      cached_bytes_ -= rounded;
      b->refs.store(1, std::memory_order_relaxed);
      b->is_state = false;
      b->bytes = bytes;
      *out = BufferRef(b);
      return nullptr;
    }
  }
  void* h = nullptr;
  if (weft_status* st = api->memory_allocate(handle, rounded, &h))
    return Annotate(st, "allocating " + std::to_string(bytes) + " bytes on " +
                            name);
  auto* b = new (std::nothrow) Buffer;
  if (b == nullptr) {
    api->memory_free(handle, h);
    return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  b->kind = Buffer::Kind::kDevice;
  b->device = this;
  b->handle = h;
  b->bytes = bytes;
  *out = BufferRef(b);
  return nullptr;
}

void Device::Recycle(Buffer* b) {
  size_t rounded = RoundedSize(b->bytes);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    std::vector<Buffer*>* list = CacheList(rounded);
    if (list != nullptr && list->size() < kMaxPerClass &&
        cached_bytes_ + rounded <= kMaxCachedBytes) {
      list->push_back(b);
      cached_bytes_ += rounded;
      return;
    }
  }
  api->memory_free(handle, b->handle);
  delete b;
}

}  // namespace weft
