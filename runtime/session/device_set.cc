#include "session/device_set.h"

#include <strings.h>

#include <cstring>

#include "base/status.h"
#include "base/text.h"
#include "device/registry.h"

namespace weft {

std::string WithoutTask(const std::string& name) {
  std::string t = name;
  for (const char* part : {"/job:", "/task:"}) {
    const size_t n = std::strlen(part);
    if (t.compare(0, n, part) != 0) continue;
    const size_t end = t.find('/', n);
    t = end == std::string::npos ? std::string() : t.substr(end);
  }
  return t;
}

namespace {

const char kDevicePrefix[] = "/device:";

// A term as a device name: "CPU:0" and "OPENCL:*" are short for
// "/device:CPU:0" and "/device:OPENCL:*"; a bare type ("OPENCL") and full
// names stay as they are.
std::string FullTerm(std::string t) {
  if (t.compare(0, sizeof kDevicePrefix - 1, kDevicePrefix) != 0 &&
      t.find(':') != std::string::npos && t[0] != '/')
    t = kDevicePrefix + t;
  return t;
}

// The device type a term names: "OPENCL" of "OPENCL", "/device:OPENCL:1"
// or "OPENCL:*"; "" for a term naming a task only.
std::string TermType(const std::string& raw) {
  std::string t = FullTerm(WithoutTask(raw));
  if (t.compare(0, sizeof kDevicePrefix - 1, kDevicePrefix) != 0) return t;
  t = t.substr(sizeof kDevicePrefix - 1);
  return t.substr(0, t.find(':'));
}

// Why no device of the type `term` names exists, for the error that says
// no device matches it: what the plugin of that type said when it found
// none (weft_plugin_description.no_device_reason, what `weft devices`
// shows), or that no plugin provides the type.  "" when the type has
// devices (the term named an index it lacks: the device list says enough).
std::string NoDeviceReason(const std::string& term) {
  const std::string type = TermType(term);
  if (type.empty()) return "";
  for (const Plugin* p : Registry::Get().Plugins()) {
    if (strcasecmp(p->device_type.c_str(), type.c_str()) != 0) continue;
    if (!p->devices.empty()) return "";
    return "; plugin " + p->name + " (" + p->path + ") provides " +
           p->device_type + " but found no device: " +
           (p->no_device_reason.empty() ? "it gave no reason"
                                        : p->no_device_reason);
  }
  return "; no plugin loaded provides device type '" + type +
         "' (see `weft devices` for the plugins found and refused)";
}

}  // namespace

bool DeviceMatches(const Device& d, const std::string& raw) {
  std::string t = FullTerm(WithoutTask(raw));
  if (t.empty()) return true;  // "/job:ps/task:0": any device of that task
  const std::string prefix = kDevicePrefix;
  if (t.compare(0, prefix.size(), prefix) != 0)
    return strcasecmp(t.c_str(), d.type.c_str()) == 0;
  t = t.substr(prefix.size());
  size_t colon = t.find(':');
  std::string type = t.substr(0, colon);
  if (strcasecmp(type.c_str(), d.type.c_str()) != 0) return false;
  if (colon == std::string::npos) return true;
  std::string index = t.substr(colon + 1);
  return index == "*" || index == std::to_string(d.index);
}

bool FilterMayName(const std::string& filter, const std::string& type) {
  if (Trim(filter).empty()) return true;
  // A device of this type with any index: what DeviceMatches reads of a
  // term is its type, then (for names) the index.
  Device probe;
  probe.type = type;
  bool named = false;
  weft_status_destroy(ForEachListTerm(filter, [&](const std::string& term) {
    std::string t = FullTerm(WithoutTask(term));
    const size_t colon = t.rfind(':');
    if (t.compare(0, 8, "/device:") == 0 && colon > 8)
      t = t.substr(0, colon) + ":*";
    named |= DeviceMatches(probe, t);
    return static_cast<weft_status*>(nullptr);
  }));
  return named;
}

weft_status* ForEachListTerm(
    const std::string& list,
    const std::function<weft_status*(const std::string&)>& term) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string t = Trim(list.substr(start, end - start));
    start = end + 1;
    if (!t.empty()) WEFT_RETURN_IF_ERROR(term(t));
  }
  return nullptr;
}

weft_status* SelectDevices(const std::vector<Device*>& all,
                           const std::string& filter,
                           std::vector<Device*>* out) {
  out->clear();
  if (Trim(filter).empty()) {
    *out = all;
    return nullptr;
  }
  return ForEachListTerm(filter, [&](const std::string& term) -> weft_status* {
    bool any = false;
    for (Device* d : all)
      if (DeviceMatches(*d, term)) {
        any = true;
        bool seen = false;
        for (Device* o : *out) seen |= o == d;
        if (!seen) out->push_back(d);
      }
    if (any) return nullptr;
    std::string names;
    for (Device* d : all) names += (names.empty() ? "" : ", ") + d->name;
    return Errorf(WEFT_NOT_FOUND, "no device matches '%s' (devices: %s)%s",
                  term.c_str(), names.empty() ? "none" : names.c_str(),
                  NoDeviceReason(term).c_str());
  });
}

}  // namespace weft
