#include "session/cost_model.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include "base/status.h"
#include "session/device_set.h"
#include "weft/graph.h"
#include "weft/session.h"

namespace weft {
namespace {

// Fixed parts of the model.  A kernel launch on a device with streams
// (OpenCL, CUDA) costs microseconds; on a synchronous host device it is a
// function call.  Memory traffic inside a device is charged at a rate that
// is the same for every device: it separates cheap ops from expensive ones
// without claiming to know each device's memory system.
constexpr double kLaunchUsAsync = 5.0;
constexpr double kLaunchUsSync = 0.2;
constexpr double kMemoryBytesPerUs = 10e3;   // 10 GB/s
constexpr double kTransferLatencyUs = 10.0;

using Clock = std::chrono::steady_clock;

double ElapsedUs(Clock::time_point since) {
  return std::chrono::duration<double, std::micro>(Clock::now() - since)
      .count();
}

int64_t StaticElements(const ShapeInfo& s) {
  if (s.rank < 0) return 0;
  int64_t n = 1;
  for (int64_t d : s.dims) n *= d < 0 ? 1 : d;
  return n;
}

int64_t Dim(const ShapeInfo& s, int32_t i) {
  if (i < 0) i += s.rank;
  if (i < 0 || i >= s.rank) return 1;
  return s.dims[i] < 0 ? 1 : s.dims[i];
}

bool BoolAttr(const weft_node* n, const char* name) {
  const AttrValue* v = FindAttr(n->attrs, name);
  return v != nullptr && v->i != 0;
}

const ShapeInfo& InputShape(const weft_node* n, size_t i) {
  const weft_output& in = n->inputs[i];
  return in.node->output_shapes[in.index];
}

// Floating-point operations of one execution, from static shapes.
double Flops(const weft_node* n) {
  const std::string& op = n->op_type;
  if ((op == "MatMul" || op == "BatchMatMul") && n->inputs.size() == 2) {
    const ShapeInfo& a = InputShape(n, 0);
    const ShapeInfo& out = n->output_shapes[0];
    bool ta = BoolAttr(n, op == "MatMul" ? "transpose_a" : "adj_x");
    int64_t k = ta ? Dim(a, -2) : Dim(a, -1);
    return 2.0 * static_cast<double>(StaticElements(out)) *
           static_cast<double>(k);
  }
  // The product's multiply-adds, and var - alpha * delta.
  if (op == "MatMulApplyGradientDescent" && n->inputs.size() == 4) {
    const ShapeInfo& a = InputShape(n, 2);
    const int64_t k = BoolAttr(n, "transpose_a") ? Dim(a, -2) : Dim(a, -1);
    return (2.0 * static_cast<double>(k) + 2.0) *
           static_cast<double>(StaticElements(n->output_shapes[0]));
  }
  if ((op == "Conv2D" && n->inputs.size() == 2) ||
      (op == "FusedConv2D" && n->inputs.size() == 3)) {
    const ShapeInfo& f = InputShape(n, 1);  // [kh, kw, in, out]
    return 2.0 * static_cast<double>(StaticElements(n->output_shapes[0])) *
           static_cast<double>(Dim(f, 0) * Dim(f, 1) * Dim(f, 2));
  }
  // LU-based: about n^3 per n x n matrix.
  if ((op == "MatrixInverse" || op == "MatrixDeterminant") &&
      n->inputs.size() == 1) {
    const ShapeInfo& a = InputShape(n, 0);
    return static_cast<double>(StaticElements(a)) *
           static_cast<double>(Dim(a, -1));
  }
  // Everything else: a few operations per element in or out.
  int64_t elements = 0;
  for (const ShapeInfo& s : n->output_shapes) elements += StaticElements(s);
  for (size_t i = 0; i < n->inputs.size(); ++i)
    elements = std::max(elements, StaticElements(InputShape(n, i)));
  return static_cast<double>(elements);
}

}  // namespace

double FlopsPerOutputElement(const weft_node* n) {
  int64_t elements = 0;
  for (const ShapeInfo& s : n->output_shapes) elements += StaticElements(s);
  if (elements == 0) return std::numeric_limits<double>::infinity();
  return Flops(n) / static_cast<double>(elements);
}

namespace {

double BytesTouched(const weft_node* n) {
  double bytes = 0;
  for (size_t i = 0; i < n->inputs.size(); ++i)
    bytes += static_cast<double>(
        StaticBytes(n->inputs[i].node, n->inputs[i].index));
  for (size_t o = 0; o < n->output_dtypes.size(); ++o)
    bytes += static_cast<double>(StaticBytes(n, static_cast<int32_t>(o)));
  return bytes;
}

// Times a 256^3 float32 MatMul on `d` through a session of its own.
double MeasureGflops(Device* d) {
  constexpr int64_t kN = 256;
  weft_graph* g = nullptr;
  weft_session* s = nullptr;
  weft_tensor* a = nullptr;
  double gflops = 0;
  const int64_t dims[2] = {kN, kN};
  weft_output ca{}, cb{}, mm{};
  weft_status* st = weft_graph_create(&g);
  if (!st) st = weft_tensor_create(WEFT_FLOAT32, dims, 2, &a);
  if (!st) {
    auto* p = static_cast<float*>(weft_tensor_data(a));
    for (int64_t i = 0; i < kN * kN; ++i) p[i] = 1.0f / (1 + i % 7);
    st = weft_graph_constant(g, "a", a, &ca);
  }
  if (!st) st = weft_graph_constant(g, "b", a, &cb);
  if (!st) {
    weft_output in[2] = {ca, cb};
    st = weft_graph_apply(g, "MatMul", "mm", in, 2, &mm);
  }
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = d->name.c_str();
  o.inter_op_threads = 1;
  if (!st) st = weft_session_create(g, &o, &s);
  double best = 0;
  for (int i = 0; !st && i < 4; ++i) {
    weft_tensor* out = nullptr;
    Clock::time_point t0 = Clock::now();
    st = weft_session_run(s, nullptr, nullptr, 0, &mm, 1, nullptr, 0, &out);
    double us = ElapsedUs(t0);
    weft_tensor_destroy(out);
    if (i > 0 && (best == 0 || us < best)) best = us;  // first run warms up
  }
  if (st == nullptr && best > 0) gflops = 2.0 * kN * kN * kN / (best * 1e3);
  weft_status_destroy(st);
  weft_session_destroy(s);
  weft_tensor_destroy(a);
  weft_graph_destroy(g);
  return gflops;
}

// Host<->device copy rate in bytes per microsecond (8 MiB each way).
double MeasureCopyRate(Device* d) {
  constexpr size_t kBytes = size_t{8} << 20;
  BufferRef dev;
  BufferRef host = AllocateHostBuffer(kBytes);
  if (!host) return 0;
  std::memset(host->handle, 1, kBytes);
  weft_status* st = d->Allocate(kBytes, &dev);
  double best = 0;
  for (int i = 0; !st && i < 3; ++i) {
    Clock::time_point t0 = Clock::now();
    st = d->api->copy_host_to_device(d->handle, nullptr, host->handle,
                                     dev->handle, 0, kBytes);
    if (!st)
      st = d->api->copy_device_to_host(d->handle, nullptr, dev->handle, 0,
                                       host->handle, kBytes);
    double us = ElapsedUs(t0) / 2;
    if (!st && (best == 0 || us < best)) best = us;
  }
  weft_status_destroy(st);
  return best > 0 ? static_cast<double>(kBytes) / best : 0;
}

// Per-process caches: a device's rate does not change while it is loaded.
std::mutex g_measure_mu;
std::map<const Device*, double> g_gflops;
std::map<const Device*, double> g_copy_rate;

double MeasuredGflops(Device* d) {
  {
    std::lock_guard<std::mutex> lock(g_measure_mu);
    auto it = g_gflops.find(d);
    if (it != g_gflops.end()) return it->second;
  }
  // Measured outside the lock: the measuring session plans too.
  double v = MeasureGflops(d);
  if (v <= 0) v = 1.0;  // the device could not run a MatMul: a low rate
  std::lock_guard<std::mutex> lock(g_measure_mu);
  return g_gflops.emplace(d, v).first->second;
}

double CopyRate(Device* d) {
  {
    std::lock_guard<std::mutex> lock(g_measure_mu);
    auto it = g_copy_rate.find(d);
    if (it != g_copy_rate.end()) return it->second;
  }
  double v = MeasureCopyRate(d);
  if (v <= 0) v = 1e3;  // 1 GB/s when it cannot be measured
  std::lock_guard<std::mutex> lock(g_measure_mu);
  return g_copy_rate.emplace(d, v).first->second;
}


}  // namespace

uint64_t StaticBytes(const weft_node* n, int32_t index) {
  const ShapeInfo& s = n->output_shapes[index];
  if (s.rank < 0) return 0;
  return static_cast<uint64_t>(StaticElements(s)) *
         weft_dtype_size(n->output_dtypes[index]);
}

weft_status* CostModel::Create(const std::string& overrides,
                               const std::vector<Device*>& devices,
                               bool every_term_matches,
                               std::unique_ptr<CostModel>* out) {
  auto m = std::make_unique<CostModel>();
  WEFT_RETURN_IF_ERROR(ForEachListTerm(
      overrides, [&](const std::string& term) -> weft_status* {
        size_t eq = term.rfind('=');
        char* rest = nullptr;
        double v = eq == std::string::npos
                       ? 0
                       : std::strtod(term.c_str() + eq + 1, &rest);
        if (eq == std::string::npos || rest == term.c_str() + eq + 1 ||
            *rest != '\0' || !(v > 0) || v > 1e12)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "device_gflops term '%s' is not PATTERN=GFLOPS with "
                        "a positive number", term.c_str());
        std::string pattern = term.substr(0, eq);
        while (!pattern.empty() && pattern.back() == ' ') pattern.pop_back();
        bool any = false;
        for (Device* d : devices)
          if (DeviceMatches(*d, pattern)) {
            m->overrides_.emplace_back(d, v);
            any = true;
          }
        if (!any && every_term_matches)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "device_gflops term '%s' matches no device of the "
                        "session", term.c_str());
        return nullptr;
      }));
  *out = std::move(m);
  return nullptr;
}

double CostModel::Gflops(Device* d, const char** source) {
  double v = 0;
  const char* src = nullptr;
  for (const auto& o : overrides_)  // later terms win
    if (o.first == d) {
      v = o.second;
      src = "session override";
    }
  if (src == nullptr && d->compute_gflops > 0) {
    v = d->compute_gflops;
    src = "plugin estimate";
  }
  if (src == nullptr) {
    v = MeasuredGflops(d);
    src = "measured";
  }
  if (source) *source = src;
  return v;
}

double CostModel::ComputeUs(const weft_node* n, Device* d) {
  double launch = d->has_streams() ? kLaunchUsAsync : kLaunchUsSync;
  return launch + Flops(n) / (Gflops(d) * 1e3) +
         BytesTouched(n) / kMemoryBytesPerUs;
}

double CostModel::TransferUs(uint64_t bytes, Device* src, Device* dst) {
  if (src == dst) return 0;
  bool src_host = src == nullptr || src->host_memory();
  bool dst_host = dst->host_memory();
  if (src_host && dst_host) return 0;
  double us = 0;
  if (!src_host) us += kTransferLatencyUs + bytes / CopyRate(src);
  if (!dst_host) us += kTransferLatencyUs + bytes / CopyRate(dst);
  return us;
}

}  // namespace weft
