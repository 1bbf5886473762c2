// OpenCL C programs, built once per device on first use and cached, and the
// kernel objects made from them.  A cl_kernel holds its arguments, so one
// object cannot serve two host threads at once: each kernel name has a pool,
// and a launch borrows an object for the time it sets arguments and
// enqueues.
#ifndef WEFT_PLUGINS_OPENCL_PROGRAM_H_
#define WEFT_PLUGINS_OPENCL_PROGRAM_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "opencl_plugin.h"

namespace weft_opencl {

// The programs, one per kernel family, so that a graph builds only the
// families it uses.
enum class Program {
  kElementwise,
  kMatMul,
  kReduction,
  kNn,
  kGrad,
  kTrain,
  kArray,
  kConv,
  kLayout,
  kRandom,
  kLinalg,
  kCount
};

// The OpenCL C source of each family (sources_*.cc); each is compiled after
// kPreludeSource.
extern const char* const kPreludeSource;
extern const char* const kElementwiseSource;
extern const char* const kMatMulSource;
extern const char* const kReductionSource;
extern const char* const kNnSource;
extern const char* const kGradSource;
extern const char* const kTrainSource;
extern const char* const kArraySource;
extern const char* const kConvSource;
extern const char* const kLayoutSource;
extern const char* const kRandomSource;
extern const char* const kLinalgSource;

class ProgramCache {
 public:
  explicit ProgramCache(weft_plugin_device* device) : device_(device) {}
  ~ProgramCache();
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // A kernel object of `name` in `program`, for the caller alone until
  // Release.  Builds the program on first use; a build failure is returned
  // (with the build log) every time.
  weft_status* Acquire(Program program, const char* name, cl_kernel* out);
  void Release(Program program, const char* name, cl_kernel kernel);

 private:
  struct Entry {
    std::mutex mutex;
    bool tried = false;
    cl_program program = nullptr;
    std::string failure;  // the build log, when the build failed
    // std::less<> finds a name without making a std::string of it.
    std::map<std::string, std::vector<cl_kernel>, std::less<>> idle;
  };
  weft_status* Build(Program which, Entry* entry);

  weft_plugin_device* device_;
  Entry entries_[static_cast<int>(Program::kCount)];
};

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_PROGRAM_H_
