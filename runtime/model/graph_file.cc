// The Weft graph file (FORMAT.md): a framed, checksummed protobuf holding a
// graph's nodes in creation order, its signatures and the side tables that
// gradients read (trainable flags, conds, loops).  Loading replays the
// nodes through the graph builder, so a loaded graph passes every check a
// built one does.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "base/status.h"
#include "checkpoint/checkpoint_format.h"
#include "checkpoint/crc32c.h"
#include "device/registry.h"
#include "graph/graph.h"
#include "model/model.h"
#include "weft_graph.pb.h"

namespace weft {
namespace {

constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'G', 'R', 'P', 'H'};
constexpr uint32_t kVersion = 1;
constexpr size_t kPreambleBytes = 16;
constexpr size_t kHeaderBytes = 16;

// ---- Writing ----------------------------------------------------------------

void PutOutput(const std::unordered_map<const weft_node*, int32_t>& index,
               weft_output o, model::Output* out) {
  out->set_node(index.at(o.node));
  out->set_index(o.index);
}

weft_status* PutAttr(const std::string& name, const AttrValue& v,
                     model::Attr* out) {
  out->set_name(name);
  switch (v.type) {
    case AttrType::kInt: out->set_i(v.i); break;
    case AttrType::kFloat: out->set_f(v.f); break;
    case AttrType::kBool: out->set_b(v.i != 0); break;
    case AttrType::kDtype: out->set_dtype(static_cast<int32_t>(v.i)); break;
    case AttrType::kString: out->set_s(v.s); break;
    case AttrType::kIntList:
      out->mutable_ints()->mutable_values()->Add(v.ints.begin(), v.ints.end());
      break;
    case AttrType::kFloatList:
      out->mutable_floats()->mutable_values()->Add(v.floats.begin(),
                                                   v.floats.end());
      break;
    case AttrType::kShape: {
      model::Shape* s = out->mutable_shape();
      s->set_rank(static_cast<int32_t>(v.i));
      s->mutable_dims()->Add(v.ints.begin(), v.ints.end());
      break;
    }
    case AttrType::kTensor: {
      model::Tensor* t = out->mutable_tensor();
      const TensorValue& tv = v.tensor;
      t->set_dtype(tv.dtype);
      t->mutable_dims()->Add(tv.dims.data(), tv.dims.data() + tv.dims.rank());
      size_t bytes = tv.byte_size();
      if (bytes > 0) {
        const void* data = tv.host_data();
        if (data == nullptr)
          return Error(WEFT_INTERNAL, "attribute '" + name +
                                          "' holds a tensor outside host "
                                          "memory");
        t->set_data(data, bytes);
      }
      break;
    }
  }
  return nullptr;
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

weft_status* WriteFileAtomically(const std::string& path,
                                 const std::string& bytes) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error(WEFT_FAILED_PRECONDITION,
                 "'" + path + "' is not a regular file: it is " +
                     FileKind(st.st_mode));
  std::string temp = path + ".weft-tmp." + std::to_string(getpid()) + "." +
                     std::to_string(temp_counter.fetch_add(1));
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return OsError(errno, "cannot create", temp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      unlink(temp.c_str());
      return OsError(err, "cannot write", temp);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int err = errno;
    unlink(temp.c_str());
    return OsError(err, "cannot flush", temp);
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(temp.c_str());
    return OsError(err, "cannot rename into", path);
  }
  return nullptr;
}

namespace {

// ---- Reading ----------------------------------------------------------------

struct Reader {
  const std::string& where;  // "graph file '<path>'"
  weft_graph* graph;
  std::vector<weft_node*> nodes;

  weft_status* Corrupt(const std::string& what) const {
    return Error(WEFT_DATA_LOSS, where + " is corrupt: " + what);
  }
  weft_status* NodeRef(int32_t index, size_t limit, const std::string& what,
                       weft_node** out) const {
    if (index < 0 || static_cast<size_t>(index) >= limit)
      return Corrupt(what + " names node " + std::to_string(index) +
                     " of " + std::to_string(limit));
    *out = nodes[index];
    return nullptr;
  }
  weft_status* OutputRef(const model::Output& o, size_t limit,
                         const std::string& what, weft_output* out) const {
    weft_node* n = nullptr;
    WEFT_RETURN_IF_ERROR(NodeRef(o.node(), limit, what, &n));
    if (o.index() < 0 ||
        o.index() >= static_cast<int32_t>(n->output_dtypes.size()))
      return Corrupt(what + " names output " + std::to_string(o.index()) +
                     " of node '" + n->name + "', which has " +
                     std::to_string(n->output_dtypes.size()));
    *out = weft_output{n, o.index()};
    return nullptr;
  }
};

weft_status* SetAttr(weft_op_builder* b, const model::Attr& a,
                     const std::string& where) {
  const char* name = a.name().c_str();
  switch (a.value_case()) {
    case model::Attr::kI: weft_op_set_attr_int(b, name, a.i()); break;
    case model::Attr::kF: weft_op_set_attr_float(b, name, a.f()); break;
    case model::Attr::kB: weft_op_set_attr_bool(b, name, a.b()); break;
    case model::Attr::kDtype:
      weft_op_set_attr_dtype(b, name, static_cast<weft_dtype>(a.dtype()));
      break;
    case model::Attr::kS:
      if (a.s().find('\0') != std::string::npos)
        return Error(WEFT_DATA_LOSS, where + ": attribute '" + a.name() +
                                         "' holds a NUL byte");
      weft_op_set_attr_string(b, name, a.s().c_str());
      break;
    case model::Attr::kInts:
      if (a.ints().values_size() > INT32_MAX / 2)
        return Error(WEFT_DATA_LOSS, where + ": attribute '" + a.name() +
                                         "' is too long");
      weft_op_set_attr_int_list(b, name, a.ints().values().data(),
                                a.ints().values_size());
      break;
    case model::Attr::kFloats:
      if (a.floats().values_size() > INT32_MAX / 2)
        return Error(WEFT_DATA_LOSS, where + ": attribute '" + a.name() +
                                         "' is too long");
      weft_op_set_attr_float_list(b, name, a.floats().values().data(),
                                  a.floats().values_size());
      break;
    case model::Attr::kShape: {
      const model::Shape& s = a.shape();
      if (s.rank() < -1 || s.rank() > WEFT_MAX_RANK ||
          s.dims_size() != std::max(s.rank(), 0))
        return Error(WEFT_DATA_LOSS,
                     where + ": attribute '" + a.name() + "' is a shape of "
                     "rank " + std::to_string(s.rank()) + " with " +
                     std::to_string(s.dims_size()) + " dims");
      weft_op_set_attr_shape(b, name, s.dims().data(), s.rank());
      break;
    }
    case model::Attr::kTensor: {
      const model::Tensor& t = a.tensor();
      if (t.dims_size() > WEFT_MAX_RANK)
        return Error(WEFT_DATA_LOSS, where + ": attribute '" + a.name() +
                                         "' is a tensor of rank " +
                                         std::to_string(t.dims_size()));
      weft_tensor* value = nullptr;
      if (weft_status* s = weft_tensor_create_copy(
              static_cast<weft_dtype>(t.dtype()), t.dims().data(),
              t.dims_size(), t.data().data(), t.data().size(), &value))
        return Annotate(s, where + ": attribute '" + a.name() + "'");
      weft_op_set_attr_tensor(b, name, value);
      weft_tensor_destroy(value);
      break;
    }
    case model::Attr::VALUE_NOT_SET:
      return Error(WEFT_DATA_LOSS,
                   where + ": attribute '" + a.name() + "' has no value");
  }
  return nullptr;
}

// Sets the thread's "building gradients" flag for one node and restores it.
class GradientFlag {
 public:
  explicit GradientFlag(bool on) : saved_(BuildingGradients()) {
    BuildingGradients() = on;
  }
  ~GradientFlag() { BuildingGradients() = saved_; }

 private:
  bool saved_;
};

weft_status* AddNodes(const model::GraphFile& file, Reader* r) {
  std::unordered_map<std::string, std::string> origins;
  for (const model::DefinedOp& d : file.defined_ops())
    origins[d.name()] = d.origin();
  bool discovered = false;
  for (int i = 0; i < file.nodes_size(); ++i) {
    const model::Node& n = file.nodes(i);
    std::string where = r->where + ": node " + std::to_string(i) + " ('" +
                        n.name() + "', " + n.op() + ")";
    if (OpRegistry::Global().Find(n.op()) == nullptr) {
      // Ops of plugins on the search path join when the path is loaded.
      if (!discovered) {
        discovered = true;
        StatusPtr ignored(Registry::Get().Discover());
      }
      if (OpRegistry::Global().Find(n.op()) == nullptr) {
        auto it = origins.find(n.op());
        if (it != origins.end() && !it->second.empty())
          return Error(WEFT_NOT_FOUND,
                       where + ": op '" + n.op() + "' is not defined here; "
                       "when the model was saved it came from " + it->second +
                       ": load that first (weft_plugin_load, or put it on "
                       "WEFT_PLUGIN_PATH)");
        return Error(WEFT_NOT_FOUND, where + ": unknown op '" + n.op() + "'");
      }
    }
    weft_op_builder* b = weft_op_begin(r->graph, n.op().c_str(),
                                       n.name().c_str());
    auto abandon = [&](weft_status* s) {
      weft_op_abandon(b);
      return s;
    };
    if (n.name().empty() || n.name().find('\0') != std::string::npos)
      return abandon(r->Corrupt("node " + std::to_string(i) +
                                " has no usable name"));
    for (int k = 0; k < n.inputs_size(); ++k) {
      weft_output in;
      if (weft_status* s = r->OutputRef(
              n.inputs(k), i, "node '" + n.name() + "' input " +
                                  std::to_string(k), &in))
        return abandon(s);
      weft_op_add_input(b, in);
    }
    for (int32_t c : n.control_inputs()) {
      weft_node* cn = nullptr;
      if (weft_status* s = r->NodeRef(c, i, "node '" + n.name() +
                                                "' control input", &cn))
        return abandon(s);
      weft_op_add_control_input(b, cn);
    }
    for (int32_t k : n.keep_alive()) {
      weft_node* kn = nullptr;
      if (weft_status* s = r->NodeRef(k, i, "node '" + n.name() +
                                                "' keep-alive edge", &kn))
        return abandon(s);
      OpBuilderKeepAlive(b, kn);
    }
    if (!n.device().empty()) weft_op_set_device(b, n.device().c_str());
    for (const model::Attr& a : n.attrs())
      if (weft_status* s = SetAttr(b, a, where)) return abandon(s);
    weft_node* made = nullptr;
    GradientFlag flag(n.gradient());
    if (weft_status* s = weft_op_finish(b, &made))
      return Annotate(s, where);
    if (made->name != n.name())
      return r->Corrupt("node name '" + n.name() + "' is used twice");
    r->nodes.push_back(made);
  }
  return nullptr;
}

weft_status* AddSideTables(const model::GraphFile& file, Reader* r) {
  Graph& g = *r->graph->impl;
  const size_t all = r->nodes.size();
  for (int32_t v : file.not_trainable()) {
    weft_node* n = nullptr;
    WEFT_RETURN_IF_ERROR(r->NodeRef(v, all, "not_trainable", &n));
    if (n->def->exec != ExecKind::kVariable)
      return r->Corrupt("not_trainable names '" + n->name + "', a " +
                        n->op_type);
    g.SetTrainable(n, false);
  }
  for (const model::CondPredicate& c : file.cond_predicates()) {
    weft_node* merge = nullptr;
    weft_output pred;
    WEFT_RETURN_IF_ERROR(r->NodeRef(c.merge(), all, "cond predicate", &merge));
    WEFT_RETURN_IF_ERROR(
        r->OutputRef(c.predicate(), all, "cond predicate", &pred));
    if (merge->op_type != "Merge")
      return r->Corrupt("a cond predicate names '" + merge->name + "', a " +
                        merge->op_type);
    g.SetCondPredicate(merge, pred);
  }
  for (const model::WhileLoop& l : file.while_loops()) {
    auto loop = std::make_shared<WhileLoopInfo>();
    loop->frame = l.frame();
    loop->num_vars = l.num_vars();
    auto nodes = [&](const google::protobuf::RepeatedField<int32_t>& in,
                     std::vector<weft_node*>* out) -> weft_status* {
      for (int32_t k : in) {
        weft_node* n = nullptr;
        WEFT_RETURN_IF_ERROR(r->NodeRef(k, all, "while loop", &n));
        out->push_back(n);
      }
      return nullptr;
    };
    auto outputs = [&](const google::protobuf::RepeatedPtrField<model::Output>&
                           in,
                       std::vector<weft_output>* out) -> weft_status* {
      for (const model::Output& o : in) {
        weft_output x;
        WEFT_RETURN_IF_ERROR(r->OutputRef(o, all, "while loop", &x));
        out->push_back(x);
      }
      return nullptr;
    };
    WEFT_RETURN_IF_ERROR(nodes(l.enters(), &loop->enters));
    WEFT_RETURN_IF_ERROR(outputs(l.body_in(), &loop->body_in));
    WEFT_RETURN_IF_ERROR(outputs(l.next(), &loop->next));
    WEFT_RETURN_IF_ERROR(nodes(l.exits(), &loop->exits));
    WEFT_RETURN_IF_ERROR(nodes(l.invariants(), &loop->invariants));
    std::vector<weft_node*> members;
    WEFT_RETURN_IF_ERROR(nodes(l.nodes(), &members));
    loop->nodes.insert(members.begin(), members.end());
    WEFT_RETURN_IF_ERROR(r->NodeRef(l.pivot(), all, "while loop pivot",
                                    &loop->pivot));
    // The gradient indexes these per loop variable.
    const size_t vars = static_cast<size_t>(std::max(l.num_vars(), 0));
    if (l.num_vars() < 0 || loop->enters.size() < vars ||
        loop->body_in.size() < vars || loop->next.size() < vars ||
        loop->exits.size() != vars || loop->body_in.size() !=
        loop->next.size() || loop->enters.size() != loop->body_in.size())
      return r->Corrupt("while loop '" + l.frame() +
                        "' has inconsistent variable lists");
    g.AddWhileLoop(std::move(loop));
  }
  return nullptr;
}

}  // namespace

weft_status* WriteGraphFile(weft_graph* graph,
                            const std::vector<Signature>& signatures,
                            const std::string& path) {
  const Graph& g = *graph->impl;
  model::GraphFile file;
  file.set_producer(std::string("weft ") + weft_version_string());
  std::unordered_map<const weft_node*, int32_t> index;
  const int32_t n = g.size();
  std::unordered_set<const WhileLoopInfo*> loops;
  std::vector<const WhileLoopInfo*> loop_order;
  std::unordered_set<std::string> defined;
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* node = g.At(i);
    index[node] = i;
    model::Node* out = file.add_nodes();
    out->set_name(node->name);
    out->set_op(node->op_type);
    out->set_device(node->device);
    out->set_gradient(node->gradient);
    for (const weft_output& in : node->inputs)
      PutOutput(index, in, out->add_inputs());
    for (const weft_node* c : node->control_inputs)
      out->add_control_inputs(index.at(c));
    for (const weft_node* k : node->keep_alive)
      out->add_keep_alive(index.at(k));
    // The attributes the op declares: others are derived when the node is
    // built (a Const's dtype), and the builder refuses them as input.
    for (const auto& [name, value] : node->attrs) {
      bool declared = false;
      for (const AttrDef& d : node->def->attrs) declared |= d.name == name;
      if (!declared) continue;
      WEFT_RETURN_IF_ERROR(Annotate(PutAttr(name, value, out->add_attrs()),
                                    "node '" + node->name + "'"));
    }
    if (!node->def->origin.empty() && defined.insert(node->op_type).second) {
      model::DefinedOp* d = file.add_defined_ops();
      d->set_name(node->op_type);
      d->set_origin(node->def->origin);
    }
    if (node->def->exec == ExecKind::kVariable && !g.IsTrainable(node))
      file.add_not_trainable(i);
    weft_output pred;
    if (node->op_type == "Merge" && g.CondPredicate(node, &pred)) {
      model::CondPredicate* c = file.add_cond_predicates();
      c->set_merge(i);
      // A predicate made after its Merge cannot be written by index yet.
      if (index.count(pred.node) == 0)
        return Errorf(WEFT_INTERNAL, "cond predicate of '%s' comes later",
                      node->name.c_str());
      PutOutput(index, pred, c->mutable_predicate());
    }
    for (const WhileLoopInfo* l : g.WhileLoopsOf(node))
      if (loops.insert(l).second) loop_order.push_back(l);
  }
  for (const WhileLoopInfo* l : loop_order) {
    model::WhileLoop* out = file.add_while_loops();
    out->set_frame(l->frame);
    out->set_num_vars(l->num_vars);
    for (const weft_node* e : l->enters) out->add_enters(index.at(e));
    for (const weft_output& o : l->body_in)
      PutOutput(index, o, out->add_body_in());
    for (const weft_output& o : l->next) PutOutput(index, o, out->add_next());
    for (const weft_node* e : l->exits) out->add_exits(index.at(e));
    for (const weft_node* e : l->invariants) out->add_invariants(index.at(e));
    out->set_pivot(index.at(l->pivot));
    std::vector<int32_t> members;
    for (const weft_node* m : l->nodes) members.push_back(index.at(m));
    std::sort(members.begin(), members.end());
    for (int32_t m : members) out->add_nodes(m);
  }
  for (const Signature& s : signatures) {
    model::Signature* out = file.add_signatures();
    out->set_name(s.name);
    for (const SignatureEntry& e : s.inputs) {
      model::SignatureEntry* x = out->add_inputs();
      x->set_key(e.key);
      PutOutput(index, e.output, x->mutable_output());
    }
    for (const SignatureEntry& e : s.outputs) {
      model::SignatureEntry* x = out->add_outputs();
      x->set_key(e.key);
      PutOutput(index, e.output, x->mutable_output());
    }
  }
  std::string payload;
  if (!file.SerializeToString(&payload))
    return Error(WEFT_RESOURCE_EXHAUSTED,
                 "the graph is too large for a graph file (2 GiB)");
  LeBytes preamble;
  preamble.Put(kMagic, sizeof kMagic);
  preamble.Put(kVersion);
  preamble.Put(preamble.Crc());
  LeBytes header;
  header.Put(static_cast<uint64_t>(payload.size()));
  header.Put(Crc32c(0, payload.data(), payload.size()));
  header.Put(header.Crc());
  std::string bytes(preamble.b.begin(), preamble.b.end());
  bytes.append(header.b.begin(), header.b.end());
  bytes += payload;
  return WriteFileAtomically(path, bytes);
}

weft_status* ReadGraphFile(const std::string& bytes, const std::string& path,
                           weft_graph* graph, LoadedGraph* out) {
  const std::string where = "graph file '" + path + "'";
  if (bytes.size() < kPreambleBytes)
    return Error(WEFT_DATA_LOSS,
                 where + " is truncated: " + std::to_string(bytes.size()) +
                     " bytes, shorter than its preamble");
  if (memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return Error(WEFT_DATA_LOSS,
                 where + " is not a Weft graph file (its first bytes are not "
                         "WEFTGRPH)");
  if (Crc32c(0, bytes.data(), 12) != GetLe<uint32_t>(bytes.data() + 12))
    return Error(WEFT_DATA_LOSS, where + " is corrupt: preamble checksum");
  const uint32_t version = GetLe<uint32_t>(bytes.data() + 8);
  if (version != kVersion)
    return Errorf(WEFT_UNIMPLEMENTED,
                  "%s is graph file version %u, written by a newer Weft; "
                  "this library (%s) reads version %u",
                  where.c_str(), version, weft_version_string(), kVersion);
  if (bytes.size() < kPreambleBytes + kHeaderBytes)
    return Error(WEFT_DATA_LOSS, where + " is truncated: no header");
  const char* h = bytes.data() + kPreambleBytes;
  if (Crc32c(0, h, 12) != GetLe<uint32_t>(h + 12))
    return Error(WEFT_DATA_LOSS, where + " is corrupt: header checksum");
  const uint64_t length = GetLe<uint64_t>(h);
  const uint64_t have = bytes.size() - kPreambleBytes - kHeaderBytes;
  if (length > have)
    return Errorf(WEFT_DATA_LOSS,
                  "%s is truncated: %llu bytes of graph declared, %llu "
                  "present",
                  where.c_str(), static_cast<unsigned long long>(length),
                  static_cast<unsigned long long>(have));
  if (length < have)
    return Errorf(WEFT_DATA_LOSS, "%s has %llu bytes after its end",
                  where.c_str(),
                  static_cast<unsigned long long>(have - length));
  const char* payload = h + kHeaderBytes;
  if (Crc32c(0, payload, length) != GetLe<uint32_t>(h + 8))
    return Error(WEFT_DATA_LOSS, where + " is corrupt: graph checksum");
  model::GraphFile file;
  if (!file.ParseFromArray(payload, static_cast<int>(length)))
    return Error(WEFT_DATA_LOSS,
                 where + " is corrupt: its graph does not parse");

  Reader r{where, graph, {}};
  WEFT_RETURN_IF_ERROR(AddNodes(file, &r));
  WEFT_RETURN_IF_ERROR(AddSideTables(file, &r));
  std::unordered_set<std::string> names;
  for (const model::Signature& s : file.signatures()) {
    if (!ValidSignatureKey(s.name()) || !names.insert(s.name()).second)
      return r.Corrupt("signature name '" + s.name() +
                       "' is invalid or repeated");
    Signature sig;
    sig.name = s.name();
    for (int side = 0; side < 2; ++side) {
      const auto& entries = side ? s.outputs() : s.inputs();
      std::unordered_set<std::string> keys;
      for (const model::SignatureEntry& e : entries) {
        if (!ValidSignatureKey(e.key()) || !keys.insert(e.key()).second)
          return r.Corrupt("signature '" + s.name() + "' key '" + e.key() +
                           "' is invalid or repeated");
        weft_output o;
        WEFT_RETURN_IF_ERROR(r.OutputRef(e.output(), r.nodes.size(),
                                         "signature '" + s.name() + "'", &o));
        (side ? sig.outputs : sig.inputs).push_back({e.key(), o});
      }
    }
    out->signatures.push_back(std::move(sig));
  }
  return nullptr;
}

}  // namespace weft
