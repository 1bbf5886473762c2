#include "ops/runtime_op.h"

#include "graph/graph.h"

namespace weft {

std::string NodeWhere(const weft_node* node) {
  return "node '" + node->name + "' (" + node->op_type + ")";
}

weft_status* RunResources::GetOrCreate(
    const std::string& key,
    const std::function<weft_status*(std::unique_ptr<RunResource>*)>& make,
    RunResource** out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ != nullptr) {
    auto it = map_->find(key);
    if (it != map_->end()) {
      *out = it->second.get();
      return nullptr;
    }
  }
  std::unique_ptr<RunResource> made;
  if (weft_status* st = make(&made)) return st;
  *out = made.get();
  if (map_ == nullptr)
    map_ = std::make_unique<
        std::unordered_map<std::string, std::unique_ptr<RunResource>>>();
  map_->emplace(key, std::move(made));
  return nullptr;
}

RunResource* RunResources::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_ == nullptr) return nullptr;
  auto it = map_->find(key);
  return it == map_->end() ? nullptr : it->second.get();
}

weft_status* SessionResources::GetOrCreate(
    const std::string& key,
    const std::function<weft_status*(std::shared_ptr<SessionResource>*)>& make,
    std::shared_ptr<SessionResource>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it != map_.end()) {
    *out = it->second;
    return nullptr;
  }
  std::shared_ptr<SessionResource> made;
  if (weft_status* st = make(&made)) return st;
  *out = made;
  map_.emplace(key, std::move(made));
  return nullptr;
}

std::vector<std::shared_ptr<SessionResource>> SessionResources::All() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<SessionResource>> all;
  for (auto& entry : map_) all.push_back(entry.second);
  return all;
}

}  // namespace weft
