// TAP output for the plain C++ tests (no Criterion: they also run under
// ThreadSanitizer and the ASan+UBSan suite): one line per case, and the
// count of failed ones for main's exit status.
#ifndef WEFT_TESTS_TAP_H_
#define WEFT_TESTS_TAP_H_

#include <cstdio>
#include <string>

namespace tap {

inline int g_case = 0;
inline int g_failed = 0;

inline void Report(bool ok, const std::string& name, const std::string& why) {
  ++g_case;
  if (ok) {
    std::printf("ok %d - %s\n", g_case, name.c_str());
  } else {
    ++g_failed;
    std::printf("not ok %d - %s: %s\n", g_case, name.c_str(), why.c_str());
  }
  std::fflush(stdout);
}

// A case that cannot run here, counted as skipped (never as passed).
inline void Skip(const std::string& name, const std::string& why) {
  ++g_case;
  std::printf("ok %d - %s # SKIP %s\n", g_case, name.c_str(), why.c_str());
  std::fflush(stdout);
}

}  // namespace tap

#endif  // WEFT_TESTS_TAP_H_
