#include "program.h"

#include "binary_cache.h"

namespace weft_opencl {
namespace {

const char* SourceOf(Program program) {
  switch (program) {
    case Program::kElementwise: return kElementwiseSource;
    case Program::kMatMul: return kMatMulSource;
    case Program::kReduction: return kReductionSource;
    case Program::kNn: return kNnSource;
    case Program::kGrad: return kGradSource;
    case Program::kTrain: return kTrainSource;
    case Program::kArray: return kArraySource;
    case Program::kConv: return kConvSource;
    case Program::kLayout: return kLayoutSource;
    case Program::kRandom: return kRandomSource;
    case Program::kLinalg: return kLinalgSource;
    default: return "";
  }
}

const char* NameOf(Program program) {
  switch (program) {
    case Program::kElementwise: return "element-wise";
    case Program::kMatMul: return "MatMul";
    case Program::kReduction: return "reduction";
    case Program::kNn: return "nn";
    case Program::kGrad: return "gradient";
    case Program::kTrain: return "optimizer";
    case Program::kArray: return "array";
    case Program::kConv: return "convolution and pooling";
    case Program::kLayout: return "layout";
    case Program::kRandom: return "random";
    case Program::kLinalg: return "linear algebra";
    default: return "?";
  }
}

}  // namespace

ProgramCache::~ProgramCache() {
  for (Entry& entry : entries_) {
    for (auto& [name, kernels] : entry.idle) {
      for (cl_kernel kernel : kernels) g_cl->ReleaseKernel(kernel);
    }
    if (entry.program != nullptr) g_cl->ReleaseProgram(entry.program);
  }
}

// Called with entry->mutex held: one thread builds, the others wait for it
// rather than building the same program twice.
weft_status* ProgramCache::Build(Program which, Entry* entry) {
  entry->tried = true;
  const char* sources[2] = {kPreludeSource, SourceOf(which)};
  // Division and sqrt rounded as IEEE requires (the CPU's results), where
  // the device offers it; without the option OpenCL allows 2.5 ulp.
  std::string options = device_->correctly_rounded_sqrt
                            ? "-cl-fp32-correctly-rounded-divide-sqrt"
                            : "";
  if (device_->fp64) options += " -DWEFT_FP64=1";
  // A binary a previous process built, when the disk cache has one.
  const BinaryCache disk(device_, options, sources, 2);
  if (cl_program cached = disk.Load(device_)) {
    entry->program = cached;
    return nullptr;
  }
  cl_int error = CL_SUCCESS;
  cl_program program = g_cl->CreateProgramWithSource(device_->context, 2,
                                                     sources, nullptr, &error);
  if (error != CL_SUCCESS) {
    entry->failure = std::string("clCreateProgramWithSource failed: ") +
                     ClErrorName(error);
    return nullptr;
  }
  error = g_cl->BuildProgram(program, 1, &device_->id, options.c_str(),
                             nullptr, nullptr);
  if (error != CL_SUCCESS) {
    size_t size = 0;
    g_cl->GetProgramBuildInfo(program, device_->id, CL_PROGRAM_BUILD_LOG, 0,
                              nullptr, &size);
    std::string log(size, '\0');
    if (size > 0) {
      g_cl->GetProgramBuildInfo(program, device_->id, CL_PROGRAM_BUILD_LOG,
                                size, &log[0], nullptr);
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
        log.pop_back();
      }
    }
    entry->failure = std::string("building the ") + NameOf(which) +
                     " program failed (" + ClErrorName(error) +
                     "); build log:\n" + log;
    g_cl->ReleaseProgram(program);
    return nullptr;
  }
  entry->program = program;
  disk.Store(program);
  return nullptr;
}

weft_status* ProgramCache::Acquire(Program which, const char* name,
                                   cl_kernel* out) {
  *out = nullptr;
  Entry& entry = entries_[static_cast<int>(which)];
  std::lock_guard<std::mutex> lock(entry.mutex);
  if (!entry.tried) {
    if (weft_status* status = Build(which, &entry)) return status;
  }
  if (entry.program == nullptr) {
    // Not MakeStatus: a build log outgrows its fixed buffer.
    const std::string message = "OpenCL device " +
                                std::to_string(device_->index) + ": " +
                                entry.failure;
    return g_host->status_create(WEFT_INTERNAL, message.c_str());
  }
  auto idle = entry.idle.find(name);
  if (idle != entry.idle.end() && !idle->second.empty()) {
    *out = idle->second.back();
    idle->second.pop_back();
    return nullptr;
  }
  cl_int error = CL_SUCCESS;
  cl_kernel kernel = g_cl->CreateKernel(entry.program, name, &error);
  if (error != CL_SUCCESS) {
    return MakeStatus(CodeFor(error), "OpenCL device %d: kernel '%s': %s",
                      device_->index, name, ClErrorName(error));
  }
  *out = kernel;
  return nullptr;
}

void ProgramCache::Release(Program which, const char* name,
                           cl_kernel kernel) {
  Entry& entry = entries_[static_cast<int>(which)];
  std::lock_guard<std::mutex> lock(entry.mutex);
  auto idle = entry.idle.find(name);
  if (idle == entry.idle.end()) {
    idle = entry.idle.emplace(name, std::vector<cl_kernel>()).first;
  }
  idle->second.push_back(kernel);
}

}  // namespace weft_opencl
