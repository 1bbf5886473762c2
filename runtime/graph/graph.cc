#include "graph/graph.h"

#include "base/status.h"
#include "ops/shape_checks.h"

namespace weft {
namespace {

bool AttrTypeMatches(const AttrDef& def, const AttrValue& v) {
  return def.type == v.type;
}

// Fills defaults and checks that every given attribute is known and of the
// right type and every required one is present.
weft_status* CheckAttrs(const weft_node& n) {
  const OpDef& def = *n.def;
  for (const auto& kv : n.attrs) {
    const AttrDef* ad = nullptr;
    for (const AttrDef& a : def.attrs)
      if (a.name == kv.first) ad = &a;
    if (ad == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s): unknown attribute '%s'", n.name.c_str(),
                    n.op_type.c_str(), kv.first.c_str());
    if (!AttrTypeMatches(*ad, kv.second))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s): attribute '%s' must be a %s, got a %s",
                    n.name.c_str(), n.op_type.c_str(), kv.first.c_str(),
                    AttrTypeName(ad->type), AttrTypeName(kv.second.type));
  }
  return nullptr;
}

void FillDefaults(weft_node* n) {
  for (const AttrDef& a : n->def->attrs)
    if (!a.required && a.has_default &&
        FindAttr(n->attrs, a.name.c_str()) == nullptr)
      SetAttr(&n->attrs, a.name, a.default_value);
}

}  // namespace

bool& BuildingGradients() {
  thread_local bool building = false;
  return building;
}

std::string Graph::UniqueName(const std::string& base) {
  for (;;) {
    int& k = name_counters_[base];
    std::string candidate = k == 0 ? base : base + "_" + std::to_string(k);
    ++k;
    if (by_name_.count(candidate) == 0) return candidate;
  }
}

weft_status* Graph::AddNode(std::unique_ptr<weft_node> n, weft_node** out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (n->name.empty()) n->name = UniqueName(n->op_type);
  const std::string& name = n->name;
  if (by_name_.count(name))
    return Errorf(WEFT_ALREADY_EXISTS, "a node named '%s' already exists",
                  name.c_str());
  const OpDef* def = OpRegistry::Global().Find(n->op_type);
  if (def == nullptr)
    return Errorf(WEFT_NOT_FOUND, "node '%s': unknown op '%s'", name.c_str(),
                  n->op_type.c_str());
  n->def = def;
  n->gradient = BuildingGradients();
  size_t arity = def->input_names.size();
  bool arity_ok = def->variadic ? n->inputs.size() >= arity
                                : n->inputs.size() == arity;
  if (!arity_ok)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (%s): expects %s%zu input%s, got %zu",
                  name.c_str(), n->op_type.c_str(),
                  def->variadic ? "at least " : "", arity,
                  arity == 1 ? "" : "s", n->inputs.size());
  WEFT_RETURN_IF_ERROR(CheckAttrs(*n));
  for (const AttrDef& a : def->attrs)
    if (a.required && FindAttr(n->attrs, a.name.c_str()) == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "node '%s' (%s): missing required attribute '%s' (%s)",
                    name.c_str(), n->op_type.c_str(), a.name.c_str(),
                    AttrTypeName(a.type));
  FillDefaults(n.get());

  InferenceContext c{n->name, n->op_type, {}, {}, {}, &n->attrs, {}, {}, {}};
  for (const weft_output& in : n->inputs) {
    c.input_dtypes.push_back(in.node->output_dtypes[in.index]);
    c.input_shapes.push_back(in.node->output_shapes[in.index]);
    c.input_ops.push_back(in.node->op_type);
    c.input_attrs.push_back(&in.node->attrs);
  }
  WEFT_RETURN_IF_ERROR(def->infer(c));
  WEFT_RETURN_IF_ERROR(CheckOutputCounts(c));
  if (!def->type_attr.empty() && !def->allowed_types.empty()) {
    const AttrValue* t = FindAttr(n->attrs, def->type_attr.c_str());
    if (t != nullptr) {
      bool ok = false;
      for (weft_dtype d : def->allowed_types) ok |= d == t->i;
      if (!ok)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "node '%s' (%s): dtype %s is not supported by this op",
                      name.c_str(), n->op_type.c_str(),
                      weft_dtype_name(static_cast<weft_dtype>(t->i)));
    }
  }
  n->output_dtypes = std::move(c.output_dtypes);
  n->output_shapes = std::move(c.output_shapes);
  weft_node* merge = nullptr;
  if (def->exec == ExecKind::kNextIteration)
    WEFT_RETURN_IF_ERROR(CheckBackEdge(*n, &merge));
  n->graph = this;
  n->id = static_cast<int32_t>(nodes_.size());
  weft_node* raw = n.get();
  nodes_.push_back(std::move(n));
  by_name_[raw->name] = raw;
  if (merge != nullptr) back_edges_[merge].push_back(raw);
  if (out) *out = raw;
  return nullptr;
}

// A NextIteration's `merge` must name an existing Merge of the same dtype
// whose output shape can hold the value (else the loop variable would change
// shape between iterations: the Merge needs a shape invariant).
weft_status* Graph::CheckBackEdge(const weft_node& n, weft_node** merge) {
  const std::string& target = FindAttr(n.attrs, "merge")->s;
  auto it = by_name_.find(target);
  if (it == by_name_.end())
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (NextIteration): attr merge names '%s', which "
                  "is not a node of this graph", n.name.c_str(),
                  target.c_str());
  weft_node* m = it->second;
  if (m->def->exec != ExecKind::kMerge)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (NextIteration): attr merge names '%s', a %s, "
                  "not a Merge", n.name.c_str(), target.c_str(),
                  m->op_type.c_str());
  if (m->output_dtypes[0] != n.output_dtypes[0])
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (NextIteration): value of dtype %s cannot feed "
                  "Merge '%s' of dtype %s", n.name.c_str(),
                  weft_dtype_name(n.output_dtypes[0]), target.c_str(),
                  weft_dtype_name(m->output_dtypes[0]));
  if (!ShapeFits(n.output_shapes[0], m->output_shapes[0]))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "node '%s' (NextIteration): value of shape %s does not fit "
                  "Merge '%s' of shape %s; give the loop variable a shape "
                  "invariant", n.name.c_str(),
                  n.output_shapes[0].ToString().c_str(), target.c_str(),
                  m->output_shapes[0].ToString().c_str());
  *merge = m;
  return nullptr;
}

std::vector<weft_node*> Graph::BackEdges(const weft_node* merge) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = back_edges_.find(merge);
  return it == back_edges_.end() ? std::vector<weft_node*>{} : it->second;
}

void Graph::SetCondPredicate(const weft_node* merge, weft_output pred) {
  std::lock_guard<std::mutex> lock(mu_);
  cond_predicates_[merge] = pred;
}

bool Graph::CondPredicate(const weft_node* merge, weft_output* pred) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cond_predicates_.find(merge);
  if (it == cond_predicates_.end()) return false;
  *pred = it->second;
  return true;
}

void Graph::AddWhileLoop(std::shared_ptr<const WhileLoopInfo> loop) {
  std::lock_guard<std::mutex> lock(mu_);
  // An outer loop is added after the loops inside it.
  for (const weft_node* n : loop->nodes) loops_[n].push_back(loop);
}

std::vector<const WhileLoopInfo*> Graph::WhileLoopsOf(
    const weft_node* node) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const WhileLoopInfo*> out;
  auto it = loops_.find(node);
  if (it != loops_.end())
    for (size_t i = it->second.size(); i-- > 0;)
      out.push_back(it->second[i].get());
  return out;
}

weft_node* Graph::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

int32_t Graph::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int32_t>(nodes_.size());
}

weft_node* Graph::At(int32_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || static_cast<size_t>(index) >= nodes_.size()) return nullptr;
  return nodes_[index].get();
}

void Graph::Attach(const std::string& key, std::shared_ptr<const void> object) {
  std::lock_guard<std::mutex> lock(mu_);
  attached_[key] = std::move(object);
}

std::shared_ptr<const void> Graph::Attached(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attached_.find(key);
  return it == attached_.end() ? nullptr : it->second;
}

void Graph::SetTrainable(const weft_node* variable, bool trainable) {
  std::lock_guard<std::mutex> lock(mu_);
  if (trainable) not_trainable_.erase(variable);
  else not_trainable_.insert(variable);
}

bool Graph::IsTrainable(const weft_node* variable) const {
  std::lock_guard<std::mutex> lock(mu_);
  return not_trainable_.count(variable) == 0;
}

}  // namespace weft
