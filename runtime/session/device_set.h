// Which devices a session may use, from a filter such as
// "/device:CPU:0,/device:OPENCL:*" or "cpu".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "device/device.h"
#include "weft/status.h"

namespace weft {

// True when `device` matches one filter term.  Terms: a type ("CPU"), a
// name ("/device:CPU:0"), or a type wildcard ("/device:CPU:*"); a
// "/job:NAME/task:N" prefix is skipped (cluster sessions place by task
// first: session/tasks.cc), and a term that is only such a prefix matches
// every device; types compare without case.
bool DeviceMatches(const Device& device, const std::string& term);

// `name` without a leading "/job:NAME" and "/task:N".
std::string WithoutTask(const std::string& name);

// Whether some term of the comma-separated `filter` can match a device of
// type `type` (an empty filter matches every type).
bool FilterMayName(const std::string& filter, const std::string& type);

// Calls `term` on each entry of a comma-separated list, trimmed of blanks;
// empty entries are skipped.  Stops at, and returns, the first error.
weft_status* ForEachListTerm(
    const std::string& list,
    const std::function<weft_status*(const std::string&)>& term);

// Filters `all` by a comma-separated list; an empty list keeps everything.
// Errors name a term that matches no device and, where its device type has
// none, why: the reason its plugin gave, or that no plugin provides it.
weft_status* SelectDevices(const std::vector<Device*>& all,
                           const std::string& filter,
                           std::vector<Device*>* out);

}  // namespace weft
