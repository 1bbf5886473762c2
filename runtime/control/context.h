// Control contexts: while a cond branch or a loop is being built by a user
// callback, nodes the calling thread adds to that graph are rewritten so the
// control structure is well formed (abi/weft/control.h says how).  Contexts
// nest; the innermost one rewrites, and the nodes it makes to bring a value
// in are themselves rewritten by the contexts around it.
#pragma once

#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace weft {

class ControlContext {
 public:
  ControlContext(weft_graph* graph, std::string what)
      : graph_(graph), what_(std::move(what)) {}
  virtual ~ControlContext() = default;

  // The innermost context of `graph` on this thread, or null.
  static ControlContext* Current(const Graph* graph);
  // How many loop contexts of `graph` are open on this thread: the loop
  // depth of a node added now.
  static int32_t LoopDepth(const Graph* graph);
  virtual bool is_loop() const { return false; }

  // Before `n` is added: brings outside inputs in, and gives a node with no
  // inputs a control input from the pivot.
  weft_status* Prepare(weft_node* n);
  // After a node is added on this thread: it is inside every open context
  // of its graph.
  static void Added(const Graph* graph, const weft_node* n);

  bool Inside(const weft_node* n) const { return inside_.count(n) != 0; }
  void MarkInside(const weft_node* n) { inside_.insert(n); }
  void set_pivot(weft_node* pivot) { pivot_ = pivot; }
  weft_node* pivot() const { return pivot_; }
  const std::unordered_set<const weft_node*>& inside() const {
    return inside_;
  }
  // Closes every context of `graph` on this thread (nodes added meanwhile
  // are not rewritten); Resume reopens them.
  static std::vector<ControlContext*> Suspend(const Graph* graph);
  static void Resume(const std::vector<ControlContext*>& contexts);
  const std::string& what() const { return what_; }
  // `v` as seen inside this context (captured when it comes from outside).
  weft_status* Bring(weft_output v, weft_output* out);

  // Opens this context on the calling thread until Close().
  void Open();
  void Close();

 protected:
  // Makes the node that brings outside value `v` in.
  virtual weft_status* Capture(weft_output v, weft_output* out) = 0;

  weft_graph* graph_;
  std::string what_;

 private:
  weft_node* pivot_ = nullptr;
  std::unordered_set<const weft_node*> inside_;
  std::map<std::pair<const weft_node*, int32_t>, weft_output> captured_;
};

}  // namespace weft
