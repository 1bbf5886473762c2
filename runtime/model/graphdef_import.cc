// TensorFlow GraphDef import (issue 14): a frozen inference graph, as
// TensorFlow 1.x's convert_variables_to_constants (or TF2's
// convert_variables_to_constants_v2) writes it, rebuilt as a Weft graph
// through the public builder API.
//
// The pipeline: parse → index the nodes and their inputs → keep what the
// requested outputs need → refuse what Weft cannot run (op, attribute
// value, dtype), before building anything → sort topologically (GraphDef
// order is arbitrary) → build node by node (graphdef_ops.cc) → the
// signature.
//
// Weft takes as attributes what TensorFlow passes as tensors (Reshape's
// shape, Transpose's perm, reduction axes, ...; runtime/ops/CONVENTIONS.md
// says why), so those inputs are folded from the Const (or Identity of a
// Const) that produces them (graphdef_tensor.cc).  Consts are built lazily:
// one that only feeds attributes never becomes a node.  Identity and its
// kin become no node at all unless they carry control inputs.
//
// The input is untrusted: every index, dims product and content size is
// checked, and nothing here recurses on the input's structure.
#include "model/graphdef_import.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"

namespace weft {
namespace graphdef_import {
namespace {

// TensorFlow's rule for node names: [A-Za-z0-9.][A-Za-z0-9_./>-]*.  Names
// that break it are refused, which also keeps the helper nodes' names
// (with '#', HelperName) from ever colliding with one.
bool ValidTfNodeName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool ok = isalnum(c) || c == '.' ||
              (i > 0 && (c == '_' || c == '/' || c == '>' || c == '-'));
    if (!ok) return false;
  }
  return true;
}

// Splits "name:3" into name and index (0 when absent).  False for an index
// that is not a small decimal number.
bool SplitOutputName(const std::string& s, std::string* name, int* index) {
  size_t colon = s.rfind(':');
  *index = 0;
  if (colon == std::string::npos) {
    *name = s;
    return true;
  }
  std::string digits = s.substr(colon + 1);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return false;
  *name = s.substr(0, colon);
  *index = std::stoi(digits);
  return true;
}

// A signature key from a node or "node:index" name: characters keys do not
// allow become '_', and a repeat gets a suffix.
std::string MakeKey(const std::string& from, std::unordered_set<std::string>* used) {
  std::string key = from.substr(0, 240);
  for (char& c : key)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' &&
        c != '/' && c != '-')
      c = '_';
  if (key.empty()) key = "output";
  std::string candidate = key;
  for (int k = 2; !used->insert(candidate).second; ++k)
    candidate = key + "_" + std::to_string(k);
  return candidate;
}

// Data input k (control inputs skipped), or NULL.
const TfInput* NthDataInput(const std::vector<TfInput>& inputs, int k) {
  for (const TfInput& in : inputs)
    if (!in.control && k-- == 0) return &in;
  return nullptr;
}

}  // namespace

// ---- Errors ------------------------------------------------------------------

weft_status* Importer::FileError(weft_code code, const std::string& why) const {
  return Error(code, "cannot load '" + path_ + "': " + why);
}

weft_status* Importer::NodeError(weft_code code, int n,
                                 const std::string& why) const {
  return FileError(code, "node '" + node(n).name() + "' (" + node(n).op() +
                             "): " + why);
}

// ---- Indexing, pruning, checking, sorting ----------------------------------

weft_status* Importer::IndexNodes() {
  int count = gd_.node_size();
  inputs_.resize(count);
  for (int n = 0; n < count; ++n) {
    const std::string& name = node(n).name();
    if (!ValidTfNodeName(name))
      return FileError(WEFT_INVALID_ARGUMENT,
                       "node " + std::to_string(n) + " has name '" +
                           name.substr(0, 200) +
                           "', which is not a valid TensorFlow node name");
    if (!by_name_.emplace(name, n).second)
      return FileError(WEFT_INVALID_ARGUMENT,
                       "two nodes are named '" + name + "'");
  }
  for (int n = 0; n < count; ++n) {
    for (const std::string& s : node(n).input()) {
      TfInput in;
      std::string producer;
      if (!s.empty() && s[0] == '^') {
        in.control = true;
        producer = s.substr(1);
      } else if (!SplitOutputName(s, &producer, &in.index)) {
        return NodeError(WEFT_INVALID_ARGUMENT, n,
                         "input '" + s.substr(0, 200) +
                             "' is not NODE, NODE:INDEX or ^NODE");
      }
      auto it = by_name_.find(producer);
      if (it == by_name_.end())
        return NodeError(WEFT_INVALID_ARGUMENT, n,
                         "input '" + s.substr(0, 200) +
                             "' names no node of the graph");
      in.node = it->second;
      inputs_[n].push_back(in);
    }
  }
  return nullptr;
}

weft_status* Importer::ResolveOutputs(const std::vector<std::string>& requested,
                                      std::vector<TfInput>* outputs,
                                      std::vector<std::string>* keys_from) {
  if (!requested.empty()) {
    for (const std::string& s : requested) {
      std::string name;
      TfInput out;
      auto it = by_name_.end();
      if (SplitOutputName(s, &name, &out.index)) it = by_name_.find(name);
      if (it == by_name_.end())
        return FileError(WEFT_INVALID_ARGUMENT,
                         "graphdef_outputs names '" + s +
                             "', which is no node (or NODE:INDEX) of the graph");
      out.node = it->second;
      outputs->push_back(out);
      keys_from->push_back(s);
    }
    return nullptr;
  }
  // Every node whose outputs nothing reads, NoOps aside.  Their output
  // count is known only once built, so BuildSignature expands them.
  std::vector<char> read(gd_.node_size(), 0);
  for (const auto& ins : inputs_)
    for (const TfInput& in : ins)
      if (!in.control) read[in.node] = 1;
  for (int n = 0; n < gd_.node_size(); ++n) {
    if (read[n] || node(n).op() == "NoOp") continue;
    outputs->push_back(TfInput{n, -1, false});
    keys_from->push_back(node(n).name());
  }
  if (outputs->empty())
    return FileError(WEFT_INVALID_ARGUMENT,
                     "the graph has no node whose outputs nothing reads; "
                     "name the outputs (graphdef_outputs)");
  return nullptr;
}

void Importer::MarkNeeded(const std::vector<TfInput>& roots) {
  needed_.assign(gd_.node_size(), 0);
  std::vector<int> stack;
  for (const TfInput& r : roots) stack.push_back(r.node);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (needed_[n]) continue;
    needed_[n] = 1;
    for (const TfInput& in : inputs_[n])
      if (!needed_[in.node]) stack.push_back(in.node);
  }
}

weft_status* Importer::CheckSupported(int n) {
  const std::string& op = node(n).op();
  if (const char* why = KnownRefusal(op))
    return NodeError(WEFT_UNIMPLEMENTED, n, why);
  if (FindMapping(op) == nullptr)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "op " + op + " has no Weft counterpart "
                     "(`weft ops` lists Weft's ops)");
  // Every dtype the node is typed by must be one Weft has.
  for (const auto& kv : node(n).attr()) {
    std::vector<int> types;
    if (kv.second.value_case() == tf::AttrValue::kType)
      types.push_back(kv.second.type());
    else if (kv.second.value_case() == tf::AttrValue::kList)
      types.assign(kv.second.list().type().begin(),
                   kv.second.list().type().end());
    else if (kv.second.value_case() == tf::AttrValue::kFunc)
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       "attribute " + kv.first +
                           " is a function: function calls are not imported");
    for (int t : types) {
      if (t > kRefDtypeOffset && WeftDtype(t - kRefDtypeOffset) != WEFT_DTYPE_INVALID)
        return NodeError(WEFT_UNIMPLEMENTED, n,
                         "attribute " + kv.first + " is " + TfDtypeName(t) +
                             ", a reference to a variable: freeze the graph "
                             "first (convert_variables_to_constants)");
      if (WeftDtype(t) == WEFT_DTYPE_INVALID)
        return NodeError(WEFT_UNIMPLEMENTED, n,
                         "attribute " + kv.first + " is dtype " +
                             TfDtypeName(t) + ", which Weft does not have");
    }
  }
  return nullptr;
}

// Kahn's algorithm over the needed nodes, data and control edges alike.
weft_status* Importer::SortNeeded(std::vector<int>* order) {
  int count = gd_.node_size();
  std::vector<int> pending(count, 0);
  std::vector<std::vector<int>> readers(count);
  for (int n = 0; n < count; ++n) {
    if (!needed_[n]) continue;
    for (const TfInput& in : inputs_[n]) {
      ++pending[n];
      readers[in.node].push_back(n);
    }
  }
  std::vector<int> ready;
  for (int n = count - 1; n >= 0; --n)
    if (needed_[n] && pending[n] == 0) ready.push_back(n);
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    order->push_back(n);
    for (int r : readers[n])
      if (--pending[r] == 0) ready.push_back(r);
  }
  for (int n = 0; n < count; ++n) {
    if (!needed_[n] || pending[n] == 0) continue;
    // Every node left waits on another node left: walking inputs that are
    // still pending count steps lands on the cycle itself.
    int at = n;
    for (int step = 0; step < count; ++step)
      for (const TfInput& in : inputs_[at])
        if (pending[in.node] > 0) {
          at = in.node;
          break;
        }
    return NodeError(WEFT_INVALID_ARGUMENT, at,
                     "the graph has a cycle through this node (Weft imports "
                     "no TensorFlow loops)");
  }
  return nullptr;
}

// ---- Inputs ------------------------------------------------------------------

int Importer::DataInputCount(int n) const {
  int count = 0;
  for (const TfInput& in : inputs_[n]) count += in.control ? 0 : 1;
  return count;
}

weft_status* Importer::NeedDataInputs(int n, int count) const {
  int have = DataInputCount(n);
  if (have != count)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     "has " + std::to_string(have) + " data inputs; " +
                         node(n).op() + " takes " + std::to_string(count));
  return nullptr;
}

weft_status* Importer::DataInput(int n, int k, weft_output* out) {
  const TfInput* in = NthDataInput(inputs_[n], k);
  if (in == nullptr)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     "has no data input " + std::to_string(k));
  int p = in->node;
  WEFT_RETURN_IF_ERROR(Materialize(p));
  const Imported& from = imported_[p];
  auto refuse = [&](weft_code code, const std::string& which) {
    return NodeError(code, n,
                     "reads output " + std::to_string(in->index) + " of '" +
                         node(p).name() + "' (" + node(p).op() + "), which " +
                         which);
  };
  if (in->index < 0 || in->index >= static_cast<int>(from.outputs.size()))
    return refuse(WEFT_INVALID_ARGUMENT,
                  "has " + std::to_string(from.outputs.size()));
  if (from.outputs[in->index].node == nullptr)
    return refuse(WEFT_UNIMPLEMENTED, "Weft does not compute");
  *out = from.outputs[in->index];
  return nullptr;
}

weft_status* Importer::DataInputs(int n, int first, int count,
                                  std::vector<weft_output>* out) {
  for (int k = first; k < first + count; ++k) {
    weft_output o;
    WEFT_RETURN_IF_ERROR(DataInput(n, k, &o));
    out->push_back(o);
  }
  return nullptr;
}

weft_status* Importer::AllDataInputs(int n, int count,
                                     std::vector<weft_output>* out) {
  WEFT_RETURN_IF_ERROR(NeedDataInputs(n, count));
  return DataInputs(n, 0, count, out);
}

weft_status* Importer::Anchor(int p, weft_node** out) {
  WEFT_RETURN_IF_ERROR(Materialize(p));
  *out = imported_[p].anchor;
  return nullptr;
}

// Through Identity: frozen graphs read their constants through the
// variables' old `read` Identity nodes.
weft_status* Importer::ConstantInput(int n, int k, const char* what,
                                     const tf::TensorProto** out) {
  const TfInput* in = NthDataInput(inputs_[n], k);
  if (in == nullptr)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("has no input ") + what);
  int p = in->node;
  // Sorting refused cycles, so this ends; the bound is for certainty.
  for (int hops = 0; hops < gd_.node_size() && node(p).op() == "Identity" &&
                     in->index == 0;
       ++hops) {
    const TfInput* next = NthDataInput(inputs_[p], 0);
    if (next == nullptr) break;
    in = next;
    p = in->node;
  }
  if (node(p).op() != "Const" || in->index != 0)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     std::string("input ") + what + " comes from '" +
                         node(p).name() + "' (" + node(p).op() +
                         "), computed when the graph runs; Weft takes " +
                         what + " as an attribute and needs a constant");
  const tf::AttrValue* v = Attr(p, "value");
  if (v == nullptr || v->value_case() != tf::AttrValue::kTensor)
    return NodeError(WEFT_INVALID_ARGUMENT, p, "has no tensor attribute value");
  *out = &v->tensor();
  return nullptr;
}

// ---- Building --------------------------------------------------------------

void Importer::Record(int n, weft_node* built) {
  Imported& imp = imported_[n];
  imp.built = true;
  imp.anchor = built;
  imp.outputs.clear();
  for (int32_t i = 0; i < weft_node_num_outputs(built); ++i)
    imp.outputs.push_back(weft_output{built, i});
}

weft_status* Importer::Build(int n, const char* op,
                             const std::vector<weft_output>& in,
                             const std::function<void(weft_op_builder*)>& attrs,
                             weft_node** out, const std::string& name,
                             bool as_list, bool record) {
  std::vector<weft_node*> controls;
  for (const TfInput& c : inputs_[n]) {
    if (!c.control) continue;
    weft_node* a = nullptr;
    WEFT_RETURN_IF_ERROR(Anchor(c.node, &a));
    if (a != nullptr) controls.push_back(a);
  }
  const std::string& node_name = name.empty() ? node(n).name() : name;
  weft_op_builder* b = weft_op_begin(graph_, op, node_name.c_str());
  if (as_list)
    weft_op_add_input_list(b, in.data(), static_cast<int32_t>(in.size()));
  else
    for (const weft_output& o : in) weft_op_add_input(b, o);
  for (weft_node* c : controls) weft_op_add_control_input(b, c);
  if (attrs) attrs(b);
  weft_node* built = nullptr;
  weft_status* s = weft_op_finish(b, &built);
  if (s != nullptr) return Annotate(s, "cannot load '" + path_ + "': ");
  if (record) Record(n, built);
  if (out) *out = built;
  return nullptr;
}

weft_status* Importer::BuildHelper(int n, const char* op,
                                   const std::vector<weft_output>& in,
                                   const std::string& suffix,
                                   weft_output* out) {
  weft_node* built = nullptr;
  WEFT_RETURN_IF_ERROR(
      Build(n, op, in, nullptr, &built, HelperName(n, suffix), false, false));
  *out = weft_output{built, 0};
  return nullptr;
}

// ---- The whole import --------------------------------------------------------

weft_status* Importer::BuildSignature(const std::vector<TfInput>& roots,
                                      const std::vector<std::string>& keys_from,
                                      LoadedGraph* out) {
  Signature sig;
  sig.name = WEFT_DEFAULT_SIGNATURE;
  std::unordered_set<std::string> input_keys, output_keys;
  for (int n = 0; n < gd_.node_size(); ++n)
    if (needed_[n] && node(n).op() == "Placeholder")
      sig.inputs.push_back(
          {MakeKey(node(n).name(), &input_keys), imported_[n].outputs[0]});
  for (size_t i = 0; i < roots.size(); ++i) {
    int n = roots[i].node;
    WEFT_RETURN_IF_ERROR(Materialize(n));
    const std::vector<weft_output>& outs = imported_[n].outputs;
    if (roots[i].index >= 0) {  // named by the caller
      if (roots[i].index >= static_cast<int>(outs.size()) ||
          outs[roots[i].index].node == nullptr)
        return FileError(WEFT_INVALID_ARGUMENT,
                         "graphdef_outputs names '" + keys_from[i] +
                             "', but node '" + node(n).name() + "' (" +
                             node(n).op() + ") has " +
                             std::to_string(outs.size()) +
                             " outputs Weft computes");
      sig.outputs.push_back({MakeKey(keys_from[i], &output_keys),
                             outs[roots[i].index]});
      continue;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].node == nullptr) continue;
      std::string from = keys_from[i];
      if (outs.size() > 1) from += "_" + std::to_string(k);
      sig.outputs.push_back({MakeKey(from, &output_keys), outs[k]});
    }
  }
  out->signatures.push_back(std::move(sig));
  return nullptr;
}

weft_status* Importer::Import(const std::vector<std::string>& requested,
                              LoadedGraph* out) {
  WEFT_RETURN_IF_ERROR(IndexNodes());
  std::vector<TfInput> roots;
  std::vector<std::string> keys_from;
  WEFT_RETURN_IF_ERROR(ResolveOutputs(requested, &roots, &keys_from));
  MarkNeeded(roots);
  for (int n = 0; n < gd_.node_size(); ++n)
    if (needed_[n]) WEFT_RETURN_IF_ERROR(CheckSupported(n));
  std::vector<int> order;
  WEFT_RETURN_IF_ERROR(SortNeeded(&order));

  imported_.assign(gd_.node_size(), Imported{});
  for (int n : order) {
    const OpMapping& m = *FindMapping(node(n).op());
    WEFT_RETURN_IF_ERROR((this->*m.convert)(n, m));
  }
  return BuildSignature(roots, keys_from, out);
}

}  // namespace graphdef_import

weft_status* ImportGraphDef(const std::string& bytes, const std::string& path,
                            const std::vector<std::string>& outputs,
                            weft_graph* graph, LoadedGraph* out) {
  return Guard([&]() -> weft_status* {
    tf::GraphDef graph_def;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !graph_def.ParseFromString(bytes))
      return Error(WEFT_DATA_LOSS,
                   "cannot load '" + path +
                       "': not a TensorFlow GraphDef (the bytes do not "
                       "parse as one; truncated or corrupt?)");
    graphdef_import::Importer importer(graph_def, path, graph);
    return importer.Import(outputs, out);
  });
}

}  // namespace weft
