// weft_model: the C API of abi/weft/model.h over the graph file, the
// checkpoint and the importers.
#include "model/model.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "base/status.h"
#include "base/sized_struct.h"
#include "checkpoint/checkpoint_format.h"
#include "graph/graph.h"
#include "session/session.h"
#include "weft/train.h"

struct weft_model {
  weft_graph* graph = nullptr;
  weft_session* session = nullptr;
  bool owned = false;  // a loaded model owns its graph and session
  std::vector<weft::Signature> signatures;

  ~weft_model() {
    if (owned) {
      weft_session_destroy(session);
      weft_graph_destroy(graph);
    }
  }
};

namespace weft {
namespace {

constexpr char kGraphFileName[] = "graph.weft";
constexpr char kVariablesFileName[] = "variables.ckpt";
// Model files are read whole; none this size is a model (ONNX itself
// refuses protobufs over 2 GiB).
constexpr size_t kMaxModelFileBytes = size_t{2} << 30;

const Signature* FindSignature(const weft_model* m, const char* name) {
  if (m == nullptr) return nullptr;
  if (name == nullptr || *name == '\0') {
    for (const Signature& s : m->signatures)
      if (s.name == WEFT_DEFAULT_SIGNATURE) return &s;
    return m->signatures.size() == 1 ? &m->signatures[0] : nullptr;
  }
  for (const Signature& s : m->signatures)
    if (s.name == name) return &s;
  return nullptr;
}

weft_status* NoSignature(const weft_model* m, const char* name) {
  std::string known;
  for (const Signature& s : m->signatures)
    known += (known.empty() ? "" : ", ") + s.name;
  if (name == nullptr || *name == '\0')
    return Errorf(WEFT_NOT_FOUND,
                  "the model has no signature '%s' and %zu others (%s): "
                  "name one",
                  WEFT_DEFAULT_SIGNATURE, m->signatures.size(),
                  known.c_str());
  return Errorf(WEFT_NOT_FOUND, "the model has no signature '%s' (it has: %s)",
                name, known.empty() ? "none" : known.c_str());
}

// Copies and checks the caller's signatures.
weft_status* CopySignatures(const weft::Graph& graph,
                            const weft_signature_def* defs, int32_t n,
                            std::vector<Signature>* out) {
  if (n < 0 || (n > 0 && defs == nullptr))
    return Errorf(WEFT_INVALID_ARGUMENT, "signatures is %s with count %d",
                  defs ? "set" : "NULL", n);
  std::unordered_set<std::string> names;
  for (int32_t i = 0; i < n; ++i) {
    const weft_signature_def& d = defs[i];
    if (d.struct_size < sizeof(weft_signature_def))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "signatures[%d].struct_size is %zu; this library needs "
                    "%zu",
                    i, d.struct_size, sizeof(weft_signature_def));
    if (d.name == nullptr || !ValidSignatureKey(d.name))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "signatures[%d] has name %s%s%s: names are letters, "
                    "digits and _ . / -, 1 to 256 bytes",
                    i, d.name ? "'" : "", d.name ? d.name : "NULL",
                    d.name ? "'" : "");
    if (!names.insert(d.name).second)
      return Errorf(WEFT_INVALID_ARGUMENT, "signature '%s' is given twice",
                    d.name);
    Signature sig;
    sig.name = d.name;
    for (int side = 0; side < 2; ++side) {
      int32_t count = side ? d.num_outputs : d.num_inputs;
      const char* const* keys = side ? d.output_keys : d.input_keys;
      const weft_output* outs = side ? d.outputs : d.inputs;
      const char* what = side ? "output" : "input";
      if (count < 0 || (count > 0 && (keys == nullptr || outs == nullptr)))
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "signature '%s': %d %ss with keys %s and values %s",
                      d.name, count, what, keys ? "set" : "NULL",
                      outs ? "set" : "NULL");
      std::vector<SignatureEntry>& entries = side ? sig.outputs : sig.inputs;
      std::unordered_set<std::string> seen;
      for (int32_t k = 0; k < count; ++k) {
        if (keys[k] == nullptr || !ValidSignatureKey(keys[k]))
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "signature '%s': %s key %d is %s%s%s: keys are "
                        "letters, digits and _ . / -, 1 to 256 bytes",
                        d.name, what, k, keys[k] ? "'" : "",
                        keys[k] ? keys[k] : "NULL", keys[k] ? "'" : "");
        if (!seen.insert(keys[k]).second)
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "signature '%s': %s key '%s' is given twice", d.name,
                        what, keys[k]);
        const weft_output o = outs[k];
        if (!graph.Owns(o.node) || o.index < 0 ||
            o.index >= static_cast<int32_t>(o.node->output_dtypes.size()))
          return Errorf(WEFT_INVALID_ARGUMENT,
                        "signature '%s': %s '%s' is not an output of a node "
                        "of the model's graph",
                        d.name, what, keys[k]);
        entries.push_back({keys[k], o});
      }
    }
    out->push_back(std::move(sig));
  }
  return nullptr;
}

const char* Extension(const std::string& path) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return "";
  return path.c_str() + dot + 1;
}

// A bundle directory: holds graph.weft.
bool IsBundle(const std::string& dir) {
  struct stat st;
  return stat((dir + "/" + kGraphFileName).c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
}

weft_status* RemoveTree(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return OsError(errno, "cannot open directory", dir);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  for (const std::string& name : names) {
    std::string p = dir + "/" + name;
    // A bundle holds regular files only; anything else is not ours.
    struct stat st;
    if (lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return Error(WEFT_FAILED_PRECONDITION,
                   "'" + p + "' is not a file of a model bundle; left alone");
    if (unlink(p.c_str()) != 0) return OsError(errno, "cannot remove", p);
  }
  if (rmdir(dir.c_str()) != 0) return OsError(errno, "cannot remove", dir);
  return nullptr;
}

std::atomic<uint64_t> bundle_counter{0};

weft_status* SaveBundle(weft_model* m, const std::string& dir) {
  std::string saving_ctx = "saving model '" + dir + "'";
  std::string saving = saving_ctx + ": ";
  struct stat st;
  bool exists = false;
  if (lstat(dir.c_str(), &st) == 0) {
    exists = true;
    if (!S_ISDIR(st.st_mode))
      return Error(WEFT_FAILED_PRECONDITION,
                   saving + "the path exists and is " + FileKind(st.st_mode) +
                       ", not a model bundle");
    if (!IsBundle(dir)) {
      DIR* d = opendir(dir.c_str());
      if (d == nullptr)
        return Annotate(OsError(errno, "cannot open directory", dir),
                        saving_ctx);
      bool empty = true;
      while (dirent* e = readdir(d))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
          empty = false;
      closedir(d);
      if (!empty)
        return Error(WEFT_FAILED_PRECONDITION,
                     saving + "the directory exists, is not empty and holds "
                              "no model (no " + kGraphFileName + ")");
    }
  }
  std::string temp = dir + ".weft-tmp." + std::to_string(getpid()) + "." +
                     std::to_string(bundle_counter.fetch_add(1));
  if (mkdir(temp.c_str(), 0777) != 0)
    return Annotate(OsError(errno, "cannot create directory", temp),
                    saving_ctx);
  auto fail = [&](weft_status* s) {
    StatusPtr ignored(RemoveTree(temp));
    return Annotate(s, saving_ctx);
  };
  if (weft_status* s = WriteGraphFile(m->graph, m->signatures,
                                      temp + "/" + kGraphFileName))
    return fail(s);
  if (m->session != nullptr) {
    // Every variable, named: an uninitialized one is refused rather than
    // left out (the loaded model would not run).
    std::vector<weft_node*> vars;
    const Graph& g = *m->graph->impl;
    for (int32_t i = 0, n = g.size(); i < n; ++i)
      if (g.At(i)->def->exec == ExecKind::kVariable) vars.push_back(g.At(i));
    if (!vars.empty()) {
      if (weft_status* s = weft_checkpoint_save(
              m->session, (temp + "/" + kVariablesFileName).c_str(),
              vars.data(), static_cast<int32_t>(vars.size())))
        return fail(s);
    }
  }
  // Into place: an empty directory is replaced by rename; a previous bundle
  // moves aside first and goes once the new one is in place.
  std::string old;
  if (exists && IsBundle(dir)) {
    old = dir + ".weft-old." + std::to_string(getpid()) + "." +
          std::to_string(bundle_counter.fetch_add(1));
    if (rename(dir.c_str(), old.c_str()) != 0)
      return fail(OsError(errno, "cannot move the previous bundle", dir));
  }
  if (rename(temp.c_str(), dir.c_str()) != 0) {
    int err = errno;
    if (!old.empty()) rename(old.c_str(), dir.c_str());
    return fail(OsError(err, "cannot rename the new bundle into", dir));
  }
  if (!old.empty()) {
    StatusPtr ignored(RemoveTree(old));
  }
  return nullptr;
}

std::string LowerFormat(const char* format, const std::string& path,
                        bool is_dir) {
  if (format != nullptr && *format != '\0') return format;
  if (is_dir) return "weft";
  std::string ext = Extension(path);
  if (ext == "onnx") return "onnx";
  if (ext == "pb") return "graphdef";
  return "weft";
}

weft_status* Load(const char* path_c, const weft_model_load_options* options,
                  weft_model** out) {
  if (out == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "out_model is NULL");
  *out = nullptr;
  if (path_c == nullptr) return Error(WEFT_INVALID_ARGUMENT, "path is NULL");
  weft_model_load_options opts;
  weft_model_load_options_init(&opts);
  if (options != nullptr) {
    if (options->struct_size < offsetof(weft_model_load_options, format) +
                                   sizeof(const char*))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "options->struct_size is %zu: set it with "
                    "weft_model_load_options_init",
                    options->struct_size);
    memcpy(&opts, options,
           std::min(options->struct_size, sizeof(opts)));
    opts.struct_size = sizeof(opts);
  }
  std::string path = path_c;
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return OsError(errno, "cannot load model", path);
  bool is_dir = S_ISDIR(st.st_mode);
  std::string format = LowerFormat(opts.format, path, is_dir);
  std::string graph_path = path;
  if (is_dir) {
    if (format != "weft")
      return Error(WEFT_FAILED_PRECONDITION,
                   "cannot load model '" + path + "' as " + format +
                       ": it is a directory");
    if (!IsBundle(path))
      return Error(WEFT_FAILED_PRECONDITION,
                   "cannot load model '" + path +
                       "': the directory is not a model bundle (it holds no " +
                       kGraphFileName + ")");
    graph_path = path + "/" + kGraphFileName;
  }
  if (format != "weft" && format != "onnx" && format != "graphdef")
    return Error(WEFT_INVALID_ARGUMENT,
                 "unknown model format '" + format +
                     "': formats are weft, onnx and graphdef");
  std::vector<std::string> graphdef_outputs;
  if (opts.num_graphdef_outputs < 0 ||
      (opts.num_graphdef_outputs > 0 && opts.graphdef_outputs == nullptr))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "graphdef_outputs is %s with count %d",
                  opts.graphdef_outputs ? "set" : "NULL",
                  opts.num_graphdef_outputs);
  for (int32_t i = 0; i < opts.num_graphdef_outputs; ++i) {
    if (opts.graphdef_outputs[i] == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT, "graphdef_outputs[%d] is NULL", i);
    graphdef_outputs.push_back(opts.graphdef_outputs[i]);
  }

  std::string bytes;
  WEFT_RETURN_IF_ERROR(ReadWholeFile(graph_path, kMaxModelFileBytes, &bytes));
  auto m = std::make_unique<weft_model>();
  m->owned = true;
  WEFT_RETURN_IF_ERROR(weft_graph_create(&m->graph));
  LoadedGraph loaded;
  if (format == "onnx") {
    WEFT_RETURN_IF_ERROR(ImportOnnx(bytes, path, m->graph, &loaded));
  } else if (format == "graphdef") {
    WEFT_RETURN_IF_ERROR(
        ImportGraphDef(bytes, path, graphdef_outputs, m->graph, &loaded));
  } else {
    WEFT_RETURN_IF_ERROR(ReadGraphFile(bytes, graph_path, m->graph, &loaded));
  }
  m->signatures = std::move(loaded.signatures);
  WEFT_RETURN_IF_ERROR(
      weft_session_create(m->graph, opts.session_options, &m->session));
  if (is_dir) {
    std::string vars = path + "/" + kVariablesFileName;
    if (access(vars.c_str(), F_OK) == 0) {
      weft_status* s =
          weft_checkpoint_restore(m->session, vars.c_str(), nullptr, 0);
      if (s != nullptr)
        return Annotate(s, "loading model '" + path + "'");
    }
  }
  *out = m.release();
  return nullptr;
}

weft_status* Run(weft_model* m, const char* signature,
                 const char* const* input_keys,
                 const weft_tensor* const* inputs, int32_t num_inputs,
                 const char* const* output_keys, weft_tensor** outputs,
                 int32_t num_outputs) {
  if (m == nullptr) return Error(WEFT_INVALID_ARGUMENT, "model is NULL");
  if (num_outputs > 0 && outputs == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "outputs is NULL");
  for (int32_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
  const Signature* sig = FindSignature(m, signature);
  if (sig == nullptr) return NoSignature(m, signature);
  if (num_inputs < 0 || (num_inputs > 0 && (input_keys == nullptr ||
                                            inputs == nullptr)))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%d inputs with keys %s and values %s", num_inputs,
                  input_keys ? "set" : "NULL", inputs ? "set" : "NULL");
  if (num_outputs < 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "num_outputs is %d", num_outputs);
  if (m->session == nullptr)
    return Error(WEFT_FAILED_PRECONDITION,
                 "the model was made without a session: it cannot run");
  std::vector<weft_output> feeds;
  std::vector<weft_tensor*> values;
  std::vector<bool> fed(sig->inputs.size(), false);
  for (int32_t i = 0; i < num_inputs; ++i) {
    if (input_keys[i] == nullptr || inputs[i] == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT, "input %d has a NULL %s", i,
                    input_keys[i] == nullptr ? "key" : "tensor");
    size_t k = 0;
    while (k < sig->inputs.size() && sig->inputs[k].key != input_keys[i]) ++k;
    if (k == sig->inputs.size())
      return Errorf(WEFT_NOT_FOUND, "signature '%s' has no input '%s'",
                    sig->name.c_str(), input_keys[i]);
    if (fed[k])
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "signature '%s': input '%s' is given twice",
                    sig->name.c_str(), input_keys[i]);
    fed[k] = true;
    feeds.push_back(sig->inputs[k].output);
    values.push_back(const_cast<weft_tensor*>(inputs[i]));
  }
  std::vector<weft_output> fetches;
  if (output_keys == nullptr) {
    if (static_cast<size_t>(num_outputs) != sig->outputs.size())
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "signature '%s' has %zu outputs; num_outputs is %d",
                    sig->name.c_str(), sig->outputs.size(), num_outputs);
    for (const SignatureEntry& e : sig->outputs) fetches.push_back(e.output);
  } else {
    for (int32_t i = 0; i < num_outputs; ++i) {
      size_t k = 0;
      while (k < sig->outputs.size() &&
             (output_keys[i] == nullptr || sig->outputs[k].key != output_keys[i]))
        ++k;
      if (k == sig->outputs.size())
        return Errorf(WEFT_NOT_FOUND, "signature '%s' has no output '%s'",
                      sig->name.c_str(),
                      output_keys[i] ? output_keys[i] : "(NULL)");
      fetches.push_back(sig->outputs[k].output);
    }
  }
  return weft_session_run(m->session, feeds.data(), values.data(),
                          static_cast<int32_t>(feeds.size()), fetches.data(),
                          num_outputs, nullptr, 0, outputs);
}

}  // namespace

bool ValidSignatureKey(const std::string& key) {
  if (key.empty() || key.size() > 256) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

weft_status* ReadWholeFile(const std::string& path, size_t limit,
                           std::string* out) {
  int fd = -1;
  uint64_t size = 0;
  WEFT_RETURN_IF_ERROR(
      OpenRegularForReading(path, "'" + path + "'", "model file", &fd, &size));
  if (size > limit) {
    close(fd);
    return Errorf(WEFT_RESOURCE_EXHAUSTED,
                  "'%s' is %llu bytes; model files are read whole, up to %zu",
                  path.c_str(), static_cast<unsigned long long>(size), limit);
  }
  out->resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = read(fd, &(*out)[done], out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      if (n == 0) {  // shrank while read
        out->resize(done);
        return nullptr;
      }
      return OsError(err, "cannot read", path);
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return nullptr;
}

}  // namespace weft

using weft::Guard;

extern "C" {

weft_status* weft_model_create(weft_graph* graph, weft_session* session,
                               const weft_signature_def* signatures,
                               int32_t num_signatures, weft_model** out) {
  return Guard([&]() -> weft_status* {
    if (out == nullptr)
      return weft::Error(WEFT_INVALID_ARGUMENT, "out_model is NULL");
    *out = nullptr;
    if (graph == nullptr)
      return weft::Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
    if (session != nullptr && session->graph != graph->impl)
      return weft::Error(WEFT_INVALID_ARGUMENT,
                         "the session runs another graph than the model's");
    auto m = std::make_unique<weft_model>();
    m->graph = graph;
    m->session = session;
    WEFT_RETURN_IF_ERROR(weft::CopySignatures(*graph->impl, signatures,
                                              num_signatures, &m->signatures));
    *out = m.release();
    return nullptr;
  });
}

weft_status* weft_model_save(weft_model* model, const char* dir) {
  return Guard([&]() -> weft_status* {
    if (model == nullptr || dir == nullptr)
      return weft::Error(WEFT_INVALID_ARGUMENT,
                         model == nullptr ? "model is NULL" : "dir is NULL");
    return weft::SaveBundle(model, dir);
  });
}

void weft_model_load_options_init(weft_model_load_options* options) {
  if (options == nullptr) return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

weft_status* weft_model_load(const char* path,
                             const weft_model_load_options* options,
                             weft_model** out) {
  return Guard([&]() { return weft::Load(path, options, out); });
}

void weft_model_destroy(weft_model* model) { delete model; }

weft_graph* weft_model_graph(weft_model* model) {
  return model ? model->graph : nullptr;
}

weft_session* weft_model_session(weft_model* model) {
  return model ? model->session : nullptr;
}

int32_t weft_model_num_signatures(const weft_model* model) {
  return model ? static_cast<int32_t>(model->signatures.size()) : 0;
}

const char* weft_model_signature_name(const weft_model* model, int32_t index) {
  if (model == nullptr || index < 0 ||
      index >= static_cast<int32_t>(model->signatures.size()))
    return nullptr;
  return model->signatures[index].name.c_str();
}

int32_t weft_model_signature_size(const weft_model* model,
                                  const char* signature, int32_t is_output) {
  const weft::Signature* s = weft::FindSignature(model, signature);
  if (s == nullptr) return -1;
  return static_cast<int32_t>(is_output ? s->outputs.size()
                                        : s->inputs.size());
}

weft_status* weft_model_signature_entry(const weft_model* model,
                                        const char* signature,
                                        int32_t is_output, int32_t index,
                                        const char** out_key,
                                        weft_output* out_output) {
  return Guard([&]() -> weft_status* {
    if (model == nullptr)
      return weft::Error(WEFT_INVALID_ARGUMENT, "model is NULL");
    const weft::Signature* s = weft::FindSignature(model, signature);
    if (s == nullptr) return weft::NoSignature(model, signature);
    const auto& entries = is_output ? s->outputs : s->inputs;
    if (index < 0 || index >= static_cast<int32_t>(entries.size()))
      return weft::Errorf(WEFT_OUT_OF_RANGE,
                          "signature '%s' has %zu %ss; index is %d",
                          s->name.c_str(), entries.size(),
                          is_output ? "output" : "input", index);
    if (out_key != nullptr) *out_key = entries[index].key.c_str();
    if (out_output != nullptr) *out_output = entries[index].output;
    return nullptr;
  });
}

weft_status* weft_model_run(weft_model* model, const char* signature,
                            const char* const* input_keys,
                            const weft_tensor* const* inputs,
                            int32_t num_inputs, const char* const* output_keys,
                            weft_tensor** outputs, int32_t num_outputs) {
  return Guard([&]() {
    return weft::Run(model, signature, input_keys, inputs, num_inputs,
                     output_keys, outputs, num_outputs);
  });
}

weft_status* weft_model_export_onnx(weft_model* model, const char* signature,
                                    const char* path) {
  return Guard([&]() -> weft_status* {
    if (model == nullptr || path == nullptr)
      return weft::Error(WEFT_INVALID_ARGUMENT,
                         model == nullptr ? "model is NULL" : "path is NULL");
    const weft::Signature* s = weft::FindSignature(model, signature);
    if (s == nullptr) return weft::NoSignature(model, signature);
    return weft::ExportOnnx(model->graph, model->session, *s, path);
  });
}

}  // extern "C"
