#include "ops/registry.h"

#include "data/dataset.h"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>

#include "base/status.h"

namespace weft {

const char* AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kDtype: return "dtype";
    case AttrType::kString: return "string";
    case AttrType::kIntList: return "list(int)";
    case AttrType::kFloatList: return "list(float)";
    case AttrType::kShape: return "shape";
    case AttrType::kTensor: return "tensor";
  }
  return "?";
}

const AttrValue* FindAttr(const AttrMap& attrs, const char* name) {
  for (const auto& kv : attrs)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

void SetAttr(AttrMap* attrs, const std::string& name, AttrValue value) {
  for (auto& kv : *attrs)
    if (kv.first == name) {
      kv.second = std::move(value);
      return;
    }
  attrs->emplace_back(name, std::move(value));
}

bool ShapeInfo::fully_known() const {
  if (rank < 0) return false;
  for (int64_t d : dims)
    if (d < 0) return false;
  return true;
}

std::string ShapeInfo::ToString() const {
  return ShapeString(dims.data(), rank);
}

weft_status* InferenceContext::Fail(const char* format, ...) const {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return Errorf(WEFT_INVALID_ARGUMENT, "node '%s' (%s): %s",
                node_name.c_str(), op.c_str(), buf);
}

const std::vector<weft_dtype> kFloatTypes = {WEFT_FLOAT16, WEFT_BFLOAT16,
                                             WEFT_FLOAT32, WEFT_FLOAT64};
const std::vector<weft_dtype> kNumericTypes = {
    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT8,
    WEFT_INT16,   WEFT_INT32,    WEFT_INT64,   WEFT_UINT8,   WEFT_UINT16,
    WEFT_UINT32,  WEFT_UINT64};
const std::vector<weft_dtype> kAllTypes = {
    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT8,
    WEFT_INT16,   WEFT_INT32,    WEFT_INT64,   WEFT_UINT8,   WEFT_UINT16,
    WEFT_UINT32,  WEFT_UINT64,   WEFT_BOOL};

weft_status* BroadcastShapes(const InferenceContext& c, const ShapeInfo& a,
                             const ShapeInfo& b, ShapeInfo* out) {
  if (!a.known_rank() || !b.known_rank()) {
    *out = ShapeInfo::Unknown();
    return nullptr;
  }
  int32_t rank = std::max(a.rank, b.rank);
  std::vector<int64_t> dims(rank);
  for (int32_t i = 0; i < rank; ++i) {
    int32_t ia = a.rank - rank + i, ib = b.rank - rank + i;
    int64_t da = ia >= 0 ? a.dims[ia] : 1;
    int64_t db = ib >= 0 ? b.dims[ib] : 1;
    if (da == 1) dims[i] = db;
    else if (db == 1) dims[i] = da;
    else if (da < 0) dims[i] = db;  // unknown vs known n>1 must be n
    else if (db < 0) dims[i] = da;
    else if (da == db) dims[i] = da;
    else
      return c.Fail("shapes %s and %s cannot be broadcast (dimension %d: "
                    "%lld vs %lld)", a.ToString().c_str(), b.ToString().c_str(),
                    i, static_cast<long long>(da), static_cast<long long>(db));
  }
  *out = ShapeInfo::Of(std::move(dims));
  return nullptr;
}

weft_status* UnifyInputTypes(InferenceContext& c) {
  if (c.input_dtypes.empty()) return nullptr;
  weft_dtype t = c.input_dtypes[0];
  for (size_t i = 1; i < c.input_dtypes.size(); ++i)
    if (c.input_dtypes[i] != t)
      return c.Fail("input %zu has dtype %s but input 0 has %s; inputs must "
                    "have the same dtype (insert a Cast)", i,
                    weft_dtype_name(c.input_dtypes[i]), weft_dtype_name(t));
  AttrValue v;
  v.type = AttrType::kDtype;
  v.i = t;
  SetAttr(c.attrs, "T", v);
  return nullptr;
}

const OpRegistry& OpRegistry::Global() { return GlobalMutable(); }

OpRegistry& OpRegistry::GlobalMutable() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    RegisterStateOps(r);
    RegisterElementwiseOps(r);
    RegisterArrayOps(r);
    RegisterRandomOps(r);
    RegisterReduceOps(r);
    RegisterLinalgOps(r);
    RegisterNnOps(r);
    RegisterTrainOps(r);
    RegisterControlFlowOps(r);
    RegisterAccumulatorOps(r);
    RegisterForeignOps(r);
    RegisterTensorArrayOps(r);
    RegisterIoOps(r);
    RegisterQueueOps(r);
    RegisterCollectiveOps(r);
    RegisterCheckpointOps(r);
    RegisterSummaryOps(r);
    RegisterMutexOps(r);
    data::RegisterDatasetOps(r);
    RegisterElementwiseArrayGradientOps(r);
    RegisterReduceNnGradientOps(r);
    return r;
  }();
  return *registry;
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return ordered_;
}

size_t OpRegistry::Count() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return ordered_.size();
}

const OpDef* OpRegistry::At(size_t index) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return index < ordered_.size() ? ordered_[index] : nullptr;
}

void OpRegistry::Add(OpDef def) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  defs_.push_back(std::make_unique<OpDef>(std::move(def)));
  ordered_.push_back(defs_.back().get());
  by_name_.emplace(ordered_.back()->name, ordered_.back());
}

static std::string OriginText(const std::string& origin) {
  return origin.empty() ? "the runtime" : origin;
}

weft_status* OpRegistry::AddDefined(std::vector<OpDef> defs,
                                    std::vector<bool>* added) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  std::vector<bool> fresh(defs.size(), true);
  for (size_t i = 0; i < defs.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (defs[j].name == defs[i].name)
        return Errorf(WEFT_ALREADY_EXISTS, "op '%s' is defined twice by %s",
                      defs[i].name.c_str(), defs[i].origin.c_str());
    auto it = by_name_.find(defs[i].name);
    if (it == by_name_.end()) continue;
    const OpDef& old = *it->second;
    if (old.origin == defs[i].origin && old.identity == defs[i].identity) {
      fresh[i] = false;
      continue;
    }
    if (old.origin == defs[i].origin)
      return Errorf(WEFT_ALREADY_EXISTS,
                    "op '%s' is already defined by %s with another schema "
                    "or functions (was: %s; now: %s)",
                    defs[i].name.c_str(), old.origin.c_str(),
                    old.identity.c_str(), defs[i].identity.c_str());
    return Errorf(WEFT_ALREADY_EXISTS,
                  "op '%s' defined by %s is already defined by %s",
                  defs[i].name.c_str(), defs[i].origin.c_str(),
                  OriginText(old.origin).c_str());
  }
  for (size_t i = 0; i < defs.size(); ++i) {
    if (!fresh[i]) continue;
    defs_.push_back(std::make_unique<OpDef>(std::move(defs[i])));
    ordered_.push_back(defs_.back().get());
    by_name_.emplace(ordered_.back()->name, ordered_.back());
  }
  if (added != nullptr) *added = std::move(fresh);
  return nullptr;
}

AttrDef Required(const char* name, AttrType type) {
  return AttrDef{name, type, true, {}};
}

AttrDef Optional(const char* name, AttrType type, AttrValue value) {
  value.type = type;
  return AttrDef{name, type, false, std::move(value)};
}

AttrValue IntValue(int64_t i) {
  AttrValue v;
  v.i = i;
  return v;
}

std::string DecodeDtypeList(const std::vector<int64_t>& codes,
                            std::vector<weft_dtype>* out) {
  if (codes.empty() || codes.size() > 1024)
    return "it must list 1 to 1024 dtypes (weft_dtype codes)";
  for (int64_t t : codes) {
    if (t < 0 || t > 0xffff ||
        weft_dtype_size_of(static_cast<weft_dtype>(t)) == 0)
      return "it holds " + std::to_string(t) + ", which is not a dtype";
    out->push_back(static_cast<weft_dtype>(t));
  }
  return "";
}

std::string DecodeShapeList(const std::vector<int64_t>& v,
                            std::vector<ShapeInfo>* out) {
  for (size_t k = 0; k < v.size();) {
    const int64_t rank = v[k++];
    if (rank < -1 || rank > WEFT_MAX_RANK ||
        (rank > 0 && static_cast<size_t>(rank) > v.size() - k))
      return "component " + std::to_string(out->size()) + " has rank " +
             std::to_string(rank) + ", or fewer dims than it says (each "
             "component is its rank, then its dims)";
    if (rank < 0) {
      out->push_back(ShapeInfo::Unknown());
      continue;
    }
    std::vector<int64_t> dims(v.begin() + static_cast<long>(k),
                              v.begin() + static_cast<long>(k + rank));
    for (int64_t d : dims)
      if (d < -1)
        return "component " + std::to_string(out->size()) + " has dim " +
               std::to_string(d);
    out->push_back(ShapeInfo::Of(std::move(dims)));
    k += static_cast<size_t>(rank);
  }
  return "";
}

std::vector<int64_t> EncodeShapeList(const std::vector<ShapeInfo>& shapes) {
  std::vector<int64_t> v;
  for (const ShapeInfo& s : shapes) {
    v.push_back(s.rank);
    if (s.known_rank()) v.insert(v.end(), s.dims.begin(), s.dims.end());
  }
  return v;
}

OpDef RuntimeOp(const char* name, std::vector<std::string> inputs,
                RuntimeOpFn fn, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = std::move(inputs);
  d.exec = ExecKind::kRuntime;
  d.runtime = fn;
  d.stateful = true;
  d.summary = summary;
  return d;
}

OpDef TypedOp(const char* name, std::vector<std::string> inputs,
              const std::vector<weft_dtype>& types,
              std::function<weft_status*(InferenceContext&)> infer,
              const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = std::move(inputs);
  d.type_attr = "T";
  d.allowed_types = types;
  d.infer = std::move(infer);
  d.summary = summary;
  return d;
}

}  // namespace weft
