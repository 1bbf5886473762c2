// Finding, opening, negotiating with and registering plugins.
#include "device/registry.h"

#include <cstdio>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <mutex>

#include "base/hot.h"
#include "base/status.h"
#include "ops/registry.h"

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

// A plugin of ops only (interface 1.4): no device type and no device,
// memory, copy or stream slot.
bool OpsOnly(const weft_plugin_api& a, uint32_t version) {
  return version >= WEFT_VERSION_PACK(1, 4) && a.device_type == nullptr &&
         !a.device_count && !a.device_open && !a.device_close &&
         !a.device_properties && !a.memory_allocate && !a.memory_free &&
         !a.copy_host_to_device && !a.copy_device_to_host &&
         !a.copy_device_to_device && !a.stream_create;
}

const char* MissingRequiredSlot(const weft_plugin_api& a, uint32_t version) {
  if (!a.name) return "name";
  if (OpsOnly(a, version)) return nullptr;
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
  // 1.7: the device's collectives, all or none (ClearNewerSlots has
  // emptied them for an older plugin).
  if (a.collective_unique_id || a.collective_comm_create ||
      a.collective_all_reduce || a.collective_broadcast ||
      a.collective_comm_destroy) {
    if (!a.collective_unique_id) return "collective_unique_id";
    if (!a.collective_comm_create) return "collective_comm_create";
    if (!a.collective_all_reduce) return "collective_all_reduce";
    if (!a.collective_broadcast) return "collective_broadcast";
    if (!a.collective_comm_destroy) return "collective_comm_destroy";
  }
  return nullptr;
}

// Slots appended after the version a plugin chose read as NULL, whatever
// its table holds there: both sides branch on the negotiated version.
void ClearNewerSlots(weft_plugin_api* a, uint32_t version) {
  if (version < WEFT_VERSION_PACK(1, 7)) {
    a->collective_unique_id = nullptr;
    a->collective_comm_create = nullptr;
    a->collective_all_reduce = nullptr;
    a->collective_broadcast = nullptr;
    a->collective_comm_destroy = nullptr;
  }
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

namespace {

bool AttrHoldsOneOf(const AttrMap& attrs, const std::string& name,
                    const std::vector<int32_t>& dtypes) {
  const AttrValue* v = FindAttr(attrs, name.c_str());
  return v != nullptr && v->type == AttrType::kDtype &&
         std::find(dtypes.begin(), dtypes.end(), v->i) != dtypes.end();
}

}  // namespace

bool KernelReg::Accepts(const AttrMap& attrs) const {
  if (!dtype_attr.empty() && !AttrHoldsOneOf(attrs, dtype_attr, dtypes))
    return false;
  for (const TypeConstraint& c : type_constraints)
    if (!AttrHoldsOneOf(attrs, c.attr, c.dtypes)) return false;
  return true;
}

void KernelReg::DescribeConstraints() {
  described_constraints.clear();
  for (const TypeConstraint& c : type_constraints)
    described_constraints.push_back(weft_kernel_type_constraint{
        c.attr.c_str(), c.dtypes.data(),
        static_cast<int32_t>(c.dtypes.size())});
}

Registry& Registry::Get() {
  // Never destroyed: plugins stay loaded until the process exits, and worker
  // threads may still use them during static destruction.
  static Registry* r = new Registry;
  return *r;
}

Registry::~Registry() {
  for (const auto& d : devices_) d->api->device_close(d->handle);
}

weft_status* Registry::Discover() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return discovery_ != Discovery::kRunning; });
    if (discovery_ == Discovery::kDone) return nullptr;
    discovery_ = Discovery::kRunning;
  }
  // Marks discovery done however it ends, so that waiters never hang.
  auto done = [this](void*) {
    std::lock_guard<std::mutex> lock(mu_);
    discovery_ = Discovery::kDone;
    changed_.notify_all();
  };
  std::unique_ptr<void, decltype(done)> mark_done(this, done);
  for (const std::string& dir : SearchPath()) {
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) continue;
    std::vector<std::string> files =
        S_ISDIR(st.st_mode) ? PluginFilesIn(dir) : std::vector<std::string>{dir};
    for (const std::string& f : files)
      weft_status_destroy(Load(f, /*devices_now=*/false));
  }
  return nullptr;
}

weft_status* Registry::Refuse(const std::string& path, weft_status* why) {
  std::lock_guard<std::mutex> lock(mu_);
  refusals_.push_back(Refusal{path, weft_status_message(why)});
  return why;
}

namespace {

// Why `path` may not be handed to dlopen, or NULL.  dlopen blocks forever on
// a FIFO and misbehaves on directories and devices, so only a regular file
// passes; the check opens without blocking.
weft_status* NotARegularFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return Errorf(WEFT_NOT_FOUND, "plugin %s cannot be opened: %s",
                  path.c_str(), std::strerror(errno));
  struct stat st;
  int rc = fstat(fd, &st);
  close(fd);
  if (rc != 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "plugin %s cannot be examined: %s",
                  path.c_str(), std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "plugin %s is not a regular file (a %s): only shared "
                  "object files are loaded", path.c_str(),
                  S_ISDIR(st.st_mode)    ? "directory"
                  : S_ISFIFO(st.st_mode) ? "FIFO"
                  : S_ISSOCK(st.st_mode) ? "socket"
                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                      ? "device"
                      : "special file");
  return nullptr;
}

// True when `s` is 1..WEFT_PLUGIN_MAX_NAME-1 characters from [A-Za-z0-9_]
// plus `extra`.  Device types become part of device names
// ("/device:TYPE:N") and of comma-separated device patterns, so ':', '/'
// and ',' must never appear in them.
bool IsPlainName(const std::string& s, const char* extra) {
  if (s.empty() || s.size() >= WEFT_PLUGIN_MAX_NAME) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        std::strchr(extra, c) == nullptr)
      return false;
  return true;
}

// The plugin's own strings, checked; NULL when they are usable.
weft_status* ReadIdentity(const std::string& path, Plugin* p) {
  const weft_plugin_api& a = p->api;
  if (!ReadPluginString(a.name, &p->name) || !IsPlainName(p->name, "-."))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "plugin %s has a bad name: it must be 1 to %d characters "
                  "of A-Z a-z 0-9 _ - .", path.c_str(),
                  WEFT_PLUGIN_MAX_NAME - 1);
  if (a.device_type != nullptr &&
      (!ReadPluginString(a.device_type, &p->device_type) ||
       !IsPlainName(p->device_type, "")))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "plugin '%s' (%s) has a bad device_type: it must be 1 to "
                  "%d characters of A-Z a-z 0-9 _ (no ':', '/' or ',', "
                  "which would break device names)", p->name.c_str(),
                  path.c_str(), WEFT_PLUGIN_MAX_NAME - 1);
  if (a.version != nullptr && !ReadPluginString(a.version, &p->version))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "plugin '%s' (%s) has a version string without a NUL "
                  "within %d bytes", p->name.c_str(), path.c_str(),
                  WEFT_PLUGIN_MAX_STRING);
  return nullptr;
}

// A device property string; one that is unterminated is dropped, not
// trusted.
std::string PropertyString(const char* s) {
  std::string out;
  if (s != nullptr && !ReadPluginString(s, &out)) out.clear();
  return out;
}

}  // namespace

bool ReadPluginString(const char* s, std::string* out) {
  if (s == nullptr) return false;
  size_t n = strnlen(s, WEFT_PLUGIN_MAX_STRING);
  if (n == WEFT_PLUGIN_MAX_STRING) return false;
  out->assign(s, n);
  return true;
}

std::string PluginText(const char* s) {
  if (s == nullptr) return std::string();
  return std::string(s, strnlen(s, WEFT_PLUGIN_MAX_STRING - 1));
}

namespace {

// Plugins run their parallel regions on OpenMP (the CPU plugin's oneDNN
// links libgomp), whose workers spin after each region by default.  With
// more threads than free cores (another process busy on one core of two)
// the spinning workers take the time the region's stragglers need: the
// CNN step at 2 threads fell from 16.4 (1 thread) to 11.4 steps/s; with
// passive waiting it stays at 15.6, and idle machines lose nothing (30.6
// steps/s at 2 threads either way; bench/train_cnn, 2-core AMD EPYC).  The
// policy is read once, when libgomp is loaded, which is when the first
// plugin linking it is opened: so it is set here, before any dlopen, and
// only when the program has neither chosen a policy nor loaded libgomp
// itself.  Set OMP_WAIT_POLICY=active to keep spinning.
void PreferPassiveOpenMpWaiting() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
    if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(gomp);  // already running with the program's policy
      return;
    }
    setenv("OMP_WAIT_POLICY", "passive", 0);
  });
}

}  // namespace

weft_status* Registry::Load(const std::string& path, bool devices_now) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr)
    return Refuse(path, Errorf(WEFT_NOT_FOUND, "plugin %s: no such file",
                               path.c_str()));
  std::string real = resolved;
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return loading_.count(real) == 0; });
    for (const auto& p : plugins_)
      if (p->path == real) return nullptr;  // already loaded
    loading_.insert(real);
  }
  auto done = [this, &real](void*) {
    std::lock_guard<std::mutex> lock(mu_);
    loading_.erase(real);
    changed_.notify_all();
  };
  std::unique_ptr<void, decltype(done)> mark_done(this, done);

  if (weft_status* why = NotARegularFile(real)) return Refuse(real, why);
  PreferPassiveOpenMpWaiting();
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
  return LoadEntry(real, dl, entry, devices_now);
}

weft_status* Registry::ConflictLocked(const Plugin& candidate,
                                      std::string* shadowed_by) {
  for (const auto& p : plugins_) {
    if (p->name == candidate.name &&
        p->device_type == candidate.device_type) {
      *shadowed_by = p->path;
      return Errorf(WEFT_ALREADY_EXISTS,
                    "plugin '%s' %s (%s) is shadowed by the same plugin, "
                    "version %s, loaded first from %s",
                    candidate.name.c_str(), candidate.version.c_str(),
                    candidate.path.c_str(), p->version.c_str(),
                    p->path.c_str());
    }
    if (p->name == candidate.name)
      return Errorf(WEFT_ALREADY_EXISTS,
                    "a plugin named '%s' is already loaded from %s",
                    p->name.c_str(), p->path.c_str());
    if (!candidate.device_type.empty() &&
        p->device_type == candidate.device_type)
      return Errorf(WEFT_ALREADY_EXISTS,
                    "plugin '%s' (%s) provides device type %s, which "
                    "belongs to plugin '%s' (%s), loaded first",
                    candidate.name.c_str(), candidate.path.c_str(),
                    candidate.device_type.c_str(), p->name.c_str(),
                    p->path.c_str());
  }
  return nullptr;
}

weft_status* Registry::LoadEntry(const std::string& real, void* dl,
                                 weft_plugin_entry_fn entry,
                                 bool devices_now) {
  auto plugin = std::make_unique<Plugin>();
  std::vector<std::unique_ptr<Device>> devices;
  // Undoes what was opened, for a plugin that is not loaded after all.
  auto release = [&] {
    for (const auto& d : devices) plugin->api.device_close(d->handle);
    if (dl != nullptr) dlclose(dl);
  };
  auto refuse = [&](weft_status* why) {
    release();
    return Refuse(real, why);
  };
  // The same for a conflict, except that a copy of a loaded plugin is
  // recorded as shadowed, not refused.
  std::string shadowed_by;
  auto conflicts = [&](weft_status* why) {
    if (shadowed_by.empty()) return refuse(why);
    release();
    std::lock_guard<std::mutex> lock(mu_);
    shadowed_.push_back(Shadowed{real, shadowed_by});
    return why;
  };

  weft_kernel_registrar* registrar;
  {
    std::lock_guard<std::mutex> lock(mu_);
    registrars_.push_back(std::make_unique<weft_kernel_registrar>());
    registrar = registrars_.back().get();
  }
  KernelRegistrarImpl& reg = registrar->impl;
  weft_plugin_init_args args{};
  args.struct_size = sizeof args;
  args.host_min_version = kHostMin;
  args.host_max_version = kHostMax;
  args.host = HostApi();
  args.registrar = registrar;
  weft_status* st = entry(&args);
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.open = false;
  }

  uint32_t chosen = args.chosen_version;
  if (WEFT_VERSION_MAJOR_OF(chosen) < WEFT_VERSION_MAJOR_OF(kHostMin) ||
      WEFT_VERSION_MAJOR_OF(chosen) > WEFT_VERSION_MAJOR_OF(kHostMax) ||
      chosen > kHostMax) {
    weft_status_destroy(st);
    return refuse(Errorf(WEFT_FAILED_PRECONDITION,
                         "plugin %s implements plugin interface %s; "
                         "this host speaks %s to %s",
                         real.c_str(), VersionString(chosen).c_str(),
                         VersionString(kHostMin).c_str(),
                         VersionString(kHostMax).c_str()));
  }
  if (st != nullptr)
    return refuse(Annotate(st, "plugin " + real + " failed to initialise"));
  if (!reg.first_error.empty())
    return refuse(Errorf(WEFT_INVALID_ARGUMENT,
                         "plugin %s registered a bad kernel: %s",
                         real.c_str(), reg.first_error.c_str()));
  const weft_plugin_api* table = args.plugin;
  if (table == nullptr || table->struct_size < kMinPluginApiSize)
    return refuse(Errorf(WEFT_INVALID_ARGUMENT,
                         "plugin %s returned %s plugin table", real.c_str(),
                         table ? "a truncated" : "no"));

  std::memcpy(&plugin->api, table,
              std::min(table->struct_size, sizeof(weft_plugin_api)));
  plugin->api.struct_size = sizeof(weft_plugin_api);
  ClearNewerSlots(&plugin->api, chosen);
  if (const char* slot = MissingRequiredSlot(plugin->api, chosen))
    return refuse(Errorf(WEFT_INVALID_ARGUMENT,
                         "plugin %s leaves required slot '%s' empty",
                         real.c_str(), slot));
  plugin->path = real;
  plugin->interface_version = chosen;
  if (weft_status* why = ReadIdentity(real, plugin.get())) return refuse(why);
  weft_status* conflict;
  {
    // Checked before the plugin opens any device, and again on publishing
    // (another thread may have loaded a rival meanwhile).
    std::lock_guard<std::mutex> lock(mu_);
    conflict = ConflictLocked(*plugin, &shadowed_by);
  }
  if (conflict != nullptr) return conflicts(conflict);

  if (devices_now) {
    if (weft_status* why = OpenDevices(plugin.get(), &devices))
      return refuse(why);
  }

  std::unique_lock<std::mutex> lock(mu_);
  if (weft_status* why = ConflictLocked(*plugin, &shadowed_by)) {
    lock.unlock();
    return conflicts(why);
  }
  plugin->dl = dl;
  plugin->load_order = static_cast<int32_t>(plugins_.size());
  // Kernels for another device type serve only the plugin's own ops, and a
  // plugin of ops only must name one for each.  Checked, with the ops'
  // names, before anything of the plugin is published.
  for (const KernelReg& k : reg.pending) {
    bool own_op = false;
    for (const OpDef& d : reg.ops) own_op |= d.name == k.op;
    const char* why = nullptr;
    if (k.device_type.empty() && plugin->device_type.empty())
      why = "defines ops only, so each kernel must name a device type";
    else if (!k.device_type.empty() && k.device_type != plugin->device_type &&
             !own_op)
      why = "serves a device type not its own: a plugin may do so only for "
            "ops it defines";
    if (why != nullptr) {
      lock.unlock();
      return refuse(Errorf(WEFT_INVALID_ARGUMENT,
                           "plugin %s: its kernel for %s%s%s %s", real.c_str(),
                           k.op.c_str(), k.device_type.empty() ? "" : " on ",
                           k.device_type.c_str(), why));
    }
  }
  if (!reg.ops.empty()) {
    // A name another plugin or the program took refuses the whole plugin
    // before anything of it is published.
    for (OpDef& d : reg.ops) d.origin = "plugin " + plugin->name;
    if (weft_status* why =
            OpRegistry::GlobalMutable().AddDefined(std::move(reg.ops))) {
      lock.unlock();
      return refuse(Annotate(why, "plugin " + real));
    }
    reg.ops.clear();
  }
  if (devices_now) {
    PublishDevicesLocked(plugin.get(), &devices);
    plugin->devices_opened.store(true, std::memory_order_release);
  }
  for (KernelReg& k : reg.pending) {
    if (k.device_type.empty()) k.device_type = plugin->device_type;
    k.plugin = plugin->name;
    k.load_order = plugin->load_order;
    AddKernelLocked(std::move(k));
  }
  reg.pending.clear();
  std::vector<KernelRegistrarImpl::Gradient> gradients =
      std::move(reg.gradients);
  std::string name = plugin->name;
  plugins_.push_back(std::move(plugin));
  lock.unlock();
  for (const KernelRegistrarImpl::Gradient& g : gradients) {
    weft_status* gs = weft_gradient_register(g.op.c_str(), g.fn, g.arg);
    if (gs != nullptr) {
      std::fprintf(stderr, "weft: plugin '%s': gradient of %s not "
                   "installed: %s\n", name.c_str(), g.op.c_str(),
                   weft_status_message(gs));
      weft_status_destroy(gs);
    }
  }
  return nullptr;
}

// Asks the plugin for its devices and opens them.  A count outside
// [0, WEFT_PLUGIN_MAX_DEVICES] is an error; a failing count or open leaves
// the plugin (or that device) without devices, the reason recorded.
weft_status* Registry::OpenDevices(
    Plugin* plugin, std::vector<std::unique_ptr<Device>>* devices) {
  if (plugin->device_type.empty()) {
    plugin->no_device_reason = "a plugin of ops only";
    return nullptr;
  }
  int32_t count = 0;
  if (weft_status* cs = plugin->api.device_count(&count)) {
    plugin->no_device_reason = weft_status_message(cs);
    weft_status_destroy(cs);
    count = 0;
  } else if (count < 0 || count > WEFT_PLUGIN_MAX_DEVICES) {
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "plugin '%s' (%s) reports %d devices; the host accepts 0 "
                  "to %d", plugin->name.c_str(), plugin->path.c_str(), count,
                  WEFT_PLUGIN_MAX_DEVICES);
  } else if (count == 0) {
    plugin->no_device_reason = "the plugin found no device";
  }
  for (int32_t i = 0; i < count; ++i) {
    auto dev = std::make_unique<Device>();
    dev->plugin = plugin;
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
    dev->description = PropertyString(props.description);
    dev->vendor = PropertyString(props.vendor);
    dev->memory_bytes = props.memory_bytes;
    dev->compute_gflops = props.compute_gflops;
    dev->flags = props.flags;
    dev->unsupported_dtypes = props.unsupported_dtypes;
    devices->push_back(std::move(dev));
  }
  return nullptr;
}

void Registry::PublishDevicesLocked(
    Plugin* plugin, std::vector<std::unique_ptr<Device>>* devices) {
  // The type is this plugin's alone, so its devices number from 0.
  for (auto& dev : *devices) {
    dev->index = static_cast<int32_t>(plugin->devices.size());
    dev->name = "/device:" + dev->type + ":" + std::to_string(dev->index);
    plugin->devices.push_back(dev.get());
    devices_.push_back(std::move(dev));
  }
  devices->clear();
}

void Registry::EnsureDevices(
    const std::function<bool(const std::string& type)>& wanted) {
  std::vector<Plugin*> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : plugins_)
      if (!p->devices_opened.load(std::memory_order_acquire) &&
          (!wanted || wanted(p->device_type)))
        todo.push_back(p.get());
  }
  // Outside the lock: the plugin's functions may block.  Once per plugin;
  // a second caller waits for the first.
  for (Plugin* p : todo) {
    std::call_once(p->open_devices, [&] {
      std::vector<std::unique_ptr<Device>> devices;
      if (weft_status* why = OpenDevices(p, &devices)) {
        p->no_device_reason = weft_status_message(why);
        weft_status_destroy(why);
      }
      std::lock_guard<std::mutex> lock(mu_);
      PublishDevicesLocked(p, &devices);
      p->devices_opened.store(true, std::memory_order_release);
    });
  }
}

std::vector<Device*> Registry::Devices(
    const std::function<bool(const std::string& type)>& wanted) {
  EnsureDevices(wanted);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Device*> out;
  // In load order, whatever order the plugins opened their devices in.
  for (const auto& p : plugins_)
    if (p->devices_opened.load(std::memory_order_acquire))
      out.insert(out.end(), p->devices.begin(), p->devices.end());
  return out;
}

std::vector<const Plugin*> Registry::Plugins() {
  EnsureDevices(nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Plugin*> out;
  for (const auto& p : plugins_) out.push_back(p.get());
  return out;
}

std::vector<Refusal> Registry::Refusals() {
  std::lock_guard<std::mutex> lock(mu_);
  return refusals_;
}

std::vector<Shadowed> Registry::ShadowedPlugins() {
  std::lock_guard<std::mutex> lock(mu_);
  return shadowed_;
}

const KernelReg* Registry::FindKernel(const std::string& op,
                                      const std::string& device_type,
                                      const AttrMap& attrs) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(op);
  if (it == kernels_.end()) return nullptr;
  for (const auto& k : it->second)
    if (k->device_type == device_type && k->Accepts(attrs)) return k.get();
  return nullptr;
}

int32_t Registry::UnsupportedDtype(const Device* device,
                                   const AttrMap& attrs) {
  if (device->unsupported_dtypes == 0) return -1;
  for (const auto& kv : attrs)
    if (kv.second.type == AttrType::kDtype && kv.second.i >= 0 &&
        kv.second.i < 64 && ((device->unsupported_dtypes >> kv.second.i) & 1))
      return static_cast<int32_t>(kv.second.i);
  return -1;
}

const KernelReg* Registry::FindKernel(const std::string& op,
                                      const Device* device,
                                      const AttrMap& attrs) {
  if (UnsupportedDtype(device, attrs) >= 0) return nullptr;
  return FindKernel(op, device->type, attrs);
}

void Registry::AddKernelLocked(KernelReg k) {
  auto& list = kernels_[k.op];
  list.push_back(std::make_unique<KernelReg>(std::move(k)));
  list.back()->DescribeConstraints();
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) {
                     if (a->priority != b->priority)
                       return a->priority > b->priority;
                     return a->load_order < b->load_order;
                   });
}

void Registry::AddProgramKernel(KernelReg kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  kernel.plugin = "program";
  // After every plugin: a tie in priority goes to a plugin's kernel.
  kernel.load_order = INT32_MAX;
  AddKernelLocked(std::move(kernel));
}

std::vector<const KernelReg*> Registry::KernelsFor(const std::string& op) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const KernelReg*> out;
  auto it = kernels_.find(op);
  if (it != kernels_.end())
    for (const auto& k : it->second) out.push_back(k.get());
  return out;
}

// The smallest class c with 64 << c >= bytes (bytes >= 1).
static inline int SmallClass(size_t bytes) {
  if (bytes <= 64) return 0;
  return 64 - __builtin_clzll(static_cast<unsigned long long>(bytes - 1)) - 6;
}

size_t Device::RoundedSize(size_t bytes) const {
  if (bytes <= (size_t{64} << (kSmallClasses - 1)))
    return size_t{64} << SmallClass(bytes);
  if (bytes > kLargestCached) return bytes;  // not cached: no rounding
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

inline std::vector<Buffer*>* Device::CacheList(size_t rounded) {
  if (rounded <= (size_t{64} << (kSmallClasses - 1)))
    return &small_cache_[SmallClass(rounded)];
  if (rounded > kLargestCached) return nullptr;
  return &large_cache_[rounded];
}

// A cached buffer of up to twice `rounded` where its own size has none: it
// was allocated (its pages are resident) and sits unused, where a fresh
// allocation would add memory.  Buffers of one step are mostly alive at
// different times, so without this a step holds one buffer per size at
// the most it ever needed of that size, summed over sizes: 18.9 MiB for
// the CNN benchmark whose live tensors peak at 9.6 MiB.
std::vector<Buffer*>* Device::LargerCached(size_t rounded) {
  if (rounded <= (size_t{64} << (kSmallClasses - 1))) {
    const int next = SmallClass(rounded) + 1;
    if (next < kSmallClasses) {
      return small_cache_[next].empty() ? nullptr : &small_cache_[next];
    }
  }
  if (rounded > kLargestCached) return nullptr;
  std::vector<Buffer*>* best = nullptr;
  size_t best_size = 2 * rounded + 1;
  for (auto& entry : large_cache_) {
    if (entry.first > rounded && entry.first < best_size &&
        !entry.second.empty()) {
      best = &entry.second;
      best_size = entry.first;
    }
  }
  return best;
}

WEFT_HOT weft_status* Device::Allocate(size_t bytes, BufferRef* out) {
  *out = BufferRef();
  if (bytes == 0) return nullptr;
  size_t rounded = RoundedSize(bytes);
  {
    std::lock_guard<SpinLock> lock(cache_mu_);
    std::vector<Buffer*>* list = CacheList(rounded);
    if (list != nullptr && list->empty()) list = LargerCached(rounded);
    if (list != nullptr && !list->empty()) {
      Buffer* b = list->back();
      list->pop_back();
      cached_bytes_ -= b->capacity;
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
  // Everything downstream (constants, copies, host-memory kernels) would
  // dereference or pass on a NULL handle: it is the plugin's error.
  if (h == nullptr)
    return Errorf(WEFT_INTERNAL,
                  "plugin '%s' (%s) allocated %zu bytes on %s but returned "
                  "no memory handle", plugin->name.c_str(),
                  plugin->path.c_str(), bytes, name.c_str());
  auto* b = new (std::nothrow) Buffer;
  if (b == nullptr) {
    api->memory_free(handle, h);
    return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  b->kind = Buffer::Kind::kDevice;
  b->device = this;
  b->handle = h;
  b->bytes = bytes;
  b->capacity = rounded;
  *out = BufferRef(b);
  return nullptr;
}

WEFT_HOT void Device::Recycle(Buffer* b) {
  const size_t rounded = b->capacity;
  {
    std::lock_guard<SpinLock> lock(cache_mu_);
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
