// The graph: append-only nodes, so sessions planning on it never see a node
// change under them.  Node objects are the C API's weft_node handles.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ops/registry.h"
#include "weft/graph.h"

namespace weft {
class Graph;
}

struct weft_node {
  weft::Graph* graph = nullptr;
  int32_t id = 0;  // creation order
  std::string name;
  std::string op_type;
  std::string device;
  const weft::OpDef* def = nullptr;
  std::vector<weft_output> inputs;
  std::vector<weft_node*> control_inputs;
  // Nodes that must run whenever this one runs, without ordering or data:
  // pruning follows these edges, the executor does not.  A loop gradient's
  // stack pops name the forward loop's pushes here (the pushes feed nothing
  // else; the pops run after them because a frame's Exits fire only once
  // the frame has finished).  Set before the node is added, never after.
  std::vector<weft_node*> keep_alive;
  weft::AttrMap attrs;
  std::vector<weft_dtype> output_dtypes;
  std::vector<weft::ShapeInfo> output_shapes;
  // Made by weft_gradients (a backward pass), which the planner's
  // recomputation uses to tell the values a gradient reads.  Set when the
  // node is added (Graph::AddNode), never after.
  bool gradient = false;
};

namespace weft {

// What weft_while_loop built, for the loop's gradient.
struct WhileLoopInfo {
  std::string frame;
  int32_t num_vars = 0;                // the caller's variables
  std::vector<weft_node*> enters;      // per variable (then hidden ones)
  std::vector<weft_output> body_in;    // per variable: its value in the body
  std::vector<weft_output> next;       // per variable: the body's result
  std::vector<weft_node*> exits;       // per caller's variable
  std::vector<weft_node*> invariants;  // is_constant Enters (captures)
  weft_node* pivot = nullptr;          // live in every iteration that runs
  std::unordered_set<const weft_node*> nodes;  // every node of the loop
};

// Adds `keep` to the keep_alive list of the node `b` will make (internal:
// the public builder has no such edges).
void OpBuilderKeepAlive(weft_op_builder* b, weft_node* keep);

// True on this thread while weft_gradients builds a backward pass: nodes
// added meanwhile are marked `gradient`.
bool& BuildingGradients();

class Graph {
 public:
  // Validates `node` (inputs already known to belong to this graph) and
  // appends it, giving it a unique name if it has none.
  weft_status* AddNode(std::unique_ptr<weft_node> node, weft_node** out);

  weft_node* Find(const std::string& name) const;
  int32_t size() const;
  weft_node* At(int32_t index) const;
  bool Owns(const weft_node* node) const { return node && node->graph == this; }

  // The NextIteration nodes naming `merge` (its back edges), in creation
  // order.
  std::vector<weft_node*> BackEdges(const weft_node* merge) const;

  // A Merge made by weft_cond: its predicate (input 0 is the then branch,
  // input 1 the else branch), which the Merge's gradient switches on.
  void SetCondPredicate(const weft_node* merge, weft_output pred);
  void AddWhileLoop(std::shared_ptr<const WhileLoopInfo> loop);
  // The loops `node` belongs to, outermost first.
  std::vector<const WhileLoopInfo*> WhileLoopsOf(const weft_node* node) const;
  bool CondPredicate(const weft_node* merge, weft_output* pred) const;

  // Objects the graph keeps alive for its nodes (a dataset an iterator
  // node reads), by key; Attached is null for an unknown key.
  void Attach(const std::string& key, std::shared_ptr<const void> object);
  std::shared_ptr<const void> Attached(const std::string& key) const;

  // The constraint of nodes made from now on that set none
  // (weft_graph_set_device).
  void SetDefaultDevice(std::string device) {
    std::lock_guard<std::mutex> lock(mu_);
    default_device_ = std::move(device);
  }
  std::string DefaultDevice() const {
    std::lock_guard<std::mutex> lock(mu_);
    return default_device_;
  }

  // Whether weft_minimize() updates a Variable node (all are, until told).
  void SetTrainable(const weft_node* variable, bool trainable);
  bool IsTrainable(const weft_node* variable) const;

 private:
  std::string UniqueName(const std::string& base);
  weft_status* CheckBackEdge(const weft_node& n, weft_node** merge);

  mutable std::mutex mu_;
  std::deque<std::unique_ptr<weft_node>> nodes_;
  std::unordered_map<std::string, weft_node*> by_name_;
  std::unordered_map<std::string, int> name_counters_;
  std::unordered_set<const weft_node*> not_trainable_;
  std::string default_device_;
  std::unordered_map<std::string, std::shared_ptr<const void>> attached_;
  std::unordered_map<const weft_node*, std::vector<weft_node*>> back_edges_;
  std::unordered_map<const weft_node*, weft_output> cond_predicates_;
  std::unordered_map<const weft_node*,
                     std::vector<std::shared_ptr<const WhileLoopInfo>>>
      loops_;
};

}  // namespace weft

struct weft_graph {
  std::shared_ptr<weft::Graph> impl;
};
