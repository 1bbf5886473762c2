#include "grad/registry.h"

#include <mutex>
#include <unordered_map>

namespace weft {
namespace {

struct Entry {
  bool differentiable = false;
  GradFn fn;
};

std::mutex g_mu;

std::unordered_map<std::string, Entry>& Table() {
  static std::unordered_map<std::string, Entry> table;
  return table;
}

// The library's gradients, registered on first use (never again, so a
// program's weft_gradient_register() replacements stick).
void EnsureLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterElementwiseGradients();
    RegisterArrayGradients();
    RegisterReduceGradients();
    RegisterNnGradients();
    RegisterLinalgGradients();
    RegisterStateGradients();
    RegisterControlFlowGradients();
    RegisterTensorArrayGradients();
    RegisterCollectiveGradients();
  });
}

}  // namespace

void RegisterGradient(const std::string& op, GradFn fn) {
  std::lock_guard<std::mutex> lock(g_mu);
  Entry& e = Table()[op];
  e.differentiable = true;
  e.fn = std::move(fn);
}

void RegisterNotDifferentiable(const std::string& op) {
  std::lock_guard<std::mutex> lock(g_mu);
  Entry& e = Table()[op];
  e.differentiable = false;
  e.fn = nullptr;
}

int GradientStatus(const std::string& op) {
  EnsureLibrary();
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Table().find(op);
  if (it == Table().end()) return -1;
  return it->second.differentiable ? 1 : 0;
}

const GradFn* FindGradient(const std::string& op) {
  EnsureLibrary();
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Table().find(op);
  if (it == Table().end() || !it->second.fn) return nullptr;
  return &it->second.fn;  // entries are never erased: the pointer stays
}

}  // namespace weft
