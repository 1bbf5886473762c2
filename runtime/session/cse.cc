// Common-subexpression elimination: one pass in topological order, each
// mergeable node looked up in a hash set of the nodes kept so far by a
// signature whose inputs are already mapped through representatives, so a
// chain of duplicates collapses in the same pass.
#include "session/cse.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>

namespace weft {
namespace {

// Binary ops whose value does not depend on the order of their two inputs
// (broadcasting is symmetric too).  A flag on OpDef would be the better home
// once another pass needs it.
bool IsCommutative(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {
      "Add", "Mul", "Maximum", "Minimum",
      "Equal", "NotEqual", "LogicalAnd", "LogicalOr"};
  return kOps.count(op) != 0;
}

size_t Mix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

uint64_t Bits(double f) {
  uint64_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

std::string_view Bytes(const TensorValue& t) {
  const void* data = t.host_data();
  size_t size = t.byte_size();
  if (data == nullptr || size == 0) return {};
  return {static_cast<const char*>(data), size};
}

// Attribute equality by the fields the type uses; floats by bit pattern, so
// a NaN attribute equals itself and -0.0 differs from 0.0.
bool AttrEqual(const AttrValue& a, const AttrValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case AttrType::kInt:
    case AttrType::kBool:
    case AttrType::kDtype:
      return a.i == b.i;
    case AttrType::kFloat:
      return Bits(a.f) == Bits(b.f);
    case AttrType::kString:
      return a.s == b.s;
    case AttrType::kIntList:
      return a.ints == b.ints;
    case AttrType::kFloatList:
      return a.floats.size() == b.floats.size() &&
             std::equal(a.floats.begin(), a.floats.end(), b.floats.begin(),
                        [](double x, double y) { return Bits(x) == Bits(y); });
    case AttrType::kShape:
      return a.i == b.i && a.ints == b.ints;
    case AttrType::kTensor:
      return a.tensor.dtype == b.tensor.dtype &&
             a.tensor.dims == b.tensor.dims &&
             Bytes(a.tensor) == Bytes(b.tensor);
  }
  return false;
}

size_t AttrHash(const AttrValue& a) {
  size_t h = static_cast<size_t>(a.type);
  switch (a.type) {
    case AttrType::kInt:
    case AttrType::kBool:
    case AttrType::kDtype:
      return Mix(h, static_cast<size_t>(a.i));
    case AttrType::kFloat:
      return Mix(h, Bits(a.f));
    case AttrType::kString:
      return Mix(h, std::hash<std::string>()(a.s));
    case AttrType::kShape:
      h = Mix(h, static_cast<size_t>(a.i));
      [[fallthrough]];
    case AttrType::kIntList:
      for (int64_t v : a.ints) h = Mix(h, static_cast<size_t>(v));
      return h;
    case AttrType::kFloatList:
      for (double v : a.floats) h = Mix(h, Bits(v));
      return h;
    case AttrType::kTensor:
      h = Mix(h, a.tensor.dtype);
      for (int32_t i = 0; i < a.tensor.dims.rank(); ++i)
        h = Mix(h, static_cast<size_t>(a.tensor.dims[i]));
      return Mix(h, std::hash<std::string_view>()(Bytes(a.tensor)));
  }
  return h;
}

using Attr = std::pair<std::string, AttrValue>;
using Input = std::pair<const weft_node*, int32_t>;

// What a node computes, in a canonical form: inputs mapped through
// representatives (and sorted for commutative ops), control inputs as a
// sorted set of representatives, attributes sorted by name.
struct Signature {
  const weft_node* node = nullptr;
  size_t hash = 0;
  std::vector<Input> inputs;
  std::vector<const weft_node*> controls;
  std::vector<const Attr*> attrs;
};

bool operator==(const Signature& a, const Signature& b) {
  const weft_node& x = *a.node;
  const weft_node& y = *b.node;
  if (a.hash != b.hash || x.op_type != y.op_type || x.device != y.device ||
      a.inputs != b.inputs || a.controls != b.controls ||
      a.attrs.size() != b.attrs.size())
    return false;
  for (size_t i = 0; i < a.attrs.size(); ++i)
    if (a.attrs[i]->first != b.attrs[i]->first ||
        !AttrEqual(a.attrs[i]->second, b.attrs[i]->second))
      return false;
  return true;
}

struct SignatureHash {
  size_t operator()(const Signature& s) const { return s.hash; }
};

bool ById(const weft_node* a, const weft_node* b) { return a->id < b->id; }

}  // namespace

CseResult EliminateCommonSubexpressions(
    const std::vector<const weft_node*>& nodes,
    const std::function<bool(const weft_node*, int32_t)>& is_fed) {
  CseResult result;
  auto rep = [&](const weft_node* n) {
    auto it = result.replaced.find(n);
    return it == result.replaced.end() ? n : it->second;
  };

  // Ids are creation order and a node's inputs exist before it does, so id
  // order is topological, and the first node of a class seen is the one with
  // the smallest id.
  std::vector<const weft_node*> order = nodes;
  std::sort(order.begin(), order.end(), ById);
  order.erase(std::unique(order.begin(), order.end()), order.end());

  std::unordered_set<Signature, SignatureHash> kept;
  kept.reserve(order.size());
  for (const weft_node* n : order) {
    // Only kernels and constants compute a value from what the signature
    // holds.  NoOps could merge safely when their control inputs agree, but
    // they compute nothing, so merging would only rename a target in reports.
    const ExecKind exec = n->def->exec;
    if (n->def->stateful ||
        (exec != ExecKind::kKernel && exec != ExecKind::kConst))
      continue;
    bool fed = false;
    for (size_t i = 0; i < n->output_dtypes.size() && !fed; ++i)
      fed = is_fed(n, static_cast<int32_t>(i));
    if (fed) continue;

    Signature s;
    s.node = n;
    // A fed input's producer never merges, so mapping it is harmless: the
    // fed value keeps an identity of its own.
    for (const weft_output& in : n->inputs)
      s.inputs.emplace_back(rep(in.node), in.index);
    if (s.inputs.size() == 2 && IsCommutative(n->op_type))
      std::sort(s.inputs.begin(), s.inputs.end(),
                [](const Input& a, const Input& b) {
                  return a.first->id != b.first->id ? a.first->id < b.first->id
                                                    : a.second < b.second;
                });
    for (const weft_node* c : n->control_inputs) s.controls.push_back(rep(c));
    std::sort(s.controls.begin(), s.controls.end(), ById);
    s.controls.erase(std::unique(s.controls.begin(), s.controls.end()),
                     s.controls.end());
    for (const Attr& a : n->attrs) s.attrs.push_back(&a);
    std::sort(s.attrs.begin(), s.attrs.end(),
              [](const Attr* a, const Attr* b) { return a->first < b->first; });

    size_t h = std::hash<std::string>()(n->op_type);
    h = Mix(h, std::hash<std::string>()(n->device));
    h = Mix(h, s.inputs.size());
    for (const Input& in : s.inputs)
      h = Mix(Mix(h, static_cast<size_t>(in.first->id)),
              static_cast<size_t>(in.second));
    h = Mix(h, s.controls.size());
    for (const weft_node* c : s.controls)
      h = Mix(h, static_cast<size_t>(c->id));
    for (const Attr* a : s.attrs)
      h = Mix(Mix(h, std::hash<std::string>()(a->first)), AttrHash(a->second));
    s.hash = h;

    auto [it, inserted] = kept.insert(std::move(s));
    if (!inserted) {
      result.replaced.emplace(n, it->node);
      result.merges.emplace_back(n, it->node);
    }
  }
  return result;
}

}  // namespace weft
