// weft_checkpoint_save and weft_checkpoint_restore: between a session's
// variables (in any device's memory) and checkpoint files.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "checkpoint/checkpoint_format.h"
#include "device/device.h"
#include "session/plan.h"
#include "session/session.h"
#include "weft/train.h"

namespace weft {
namespace {

// The variables a call names, or (none named) every variable of the graph,
// in creation order and without repeats.
weft_status* SelectVariables(const weft_session* s, weft_node* const* vars,
                             int32_t n, std::vector<const weft_node*>* out) {
  if (n < 0 || (n > 0 && vars == nullptr))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "variables is %s with count %d", vars ? "set" : "NULL", n);
  if (n == 0) {
    for (int32_t i = 0, size = s->graph->size(); i < size; ++i) {
      const weft_node* node = s->graph->At(i);
      if (node->def->exec == ExecKind::kVariable) out->push_back(node);
    }
    return nullptr;
  }
  for (int32_t i = 0; i < n; ++i) {
    const weft_node* v = vars[i];
    if (!s->graph->Owns(v))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "variables[%d] is not a node of this session's graph", i);
    if (v->def->exec != ExecKind::kVariable)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "variables[%d] ('%s') is a %s, not a Variable", i,
                    v->name.c_str(), v->op_type.c_str());
    if (std::find(out->begin(), out->end(), v) == out->end())
      out->push_back(v);
  }
  return nullptr;
}

// The bytes of a variable's value, in host memory: the value's own when the
// host can read it, else a copy.  Values are never written in place once
// published, so a reference taken under the lock can be read after it.
weft_status* HostBytes(const TensorValue& v, BufferRef* staging,
                       const void** out) {
  Device* d = v.device();
  size_t bytes = v.byte_size();
  if (bytes == 0 || d == nullptr || d->host_memory()) {
    *out = v.host_data();
    return nullptr;
  }
  *staging = AllocateHostBuffer(bytes);
  if (!*staging)
    return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory for a device copy");
  WEFT_RETURN_IF_ERROR(d->api->copy_device_to_host(
      d->handle, nullptr, v.buffer->handle, v.offset, (*staging)->handle,
      bytes));
  *out = (*staging)->handle;
  return nullptr;
}

weft_status* Save(weft_session* s, const std::string& path,
                  weft_node* const* vars, int32_t n) {
  std::vector<const weft_node*> selected;
  WEFT_RETURN_IF_ERROR(SelectVariables(s, vars, n, &selected));
  std::vector<const weft_node*> nodes;
  std::vector<TensorValue> values;
  for (const weft_node* node : selected) {
    VariableState* state = s->variables.Get(node);
    std::lock_guard<std::mutex> lock(state->mu);
    if (!state->initialized) {
      if (n == 0) continue;  // "every initialized variable"
      return Errorf(WEFT_FAILED_PRECONDITION,
                    "saving checkpoint '%s': variable '%s' is not "
                    "initialized: run its initializer or restore it first",
                    path.c_str(), node->name.c_str());
    }
    nodes.push_back(node);
    values.push_back(state->value);
  }
  std::vector<CheckpointEntry> entries(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    entries[i].name = nodes[i]->name;
    entries[i].dtype = values[i].dtype;
    entries[i].dims = values[i].dims;
    entries[i].bytes = values[i].byte_size();
  }
  CheckpointWriter writer;
  WEFT_RETURN_IF_ERROR(writer.Open(path, entries));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const CheckpointEntry& e = entries[i];
    BufferRef staging;
    const void* data = nullptr;
    WEFT_RETURN_IF_ERROR(Annotate(
        HostBytes(values[i], &staging, &data),
        "saving checkpoint '" + path + "': reading variable '" + e.name +
            "': "));
    WEFT_RETURN_IF_ERROR(writer.Add(e, data));
  }
  return writer.Commit();
}

// A value read from the file, on its variable's device, not yet published.
struct Restored {
  const weft_node* node;
  VariableState* state;
  TensorValue value;
};

// Checks a stored entry against the variable it restores.
weft_status* CheckFits(const CheckpointReader& r, const weft_node* node,
                       const CheckpointEntry& e) {
  weft_dtype want = node->output_dtypes[0];
  const ShapeInfo& shape = node->output_shapes[0];
  Dims want_dims(shape.dims.data(), shape.rank);
  if (e.dtype != want)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: variable '%s' is %s in the file but %s in the graph",
                  r.Where().c_str(), node->name.c_str(),
                  weft_dtype_name(e.dtype), weft_dtype_name(want));
  if (!(e.dims == want_dims))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: variable '%s' has shape %s in the file but %s in the "
                  "graph", r.Where().c_str(), node->name.c_str(),
                  e.dims.ToString().c_str(), want_dims.ToString().c_str());
  return nullptr;
}

// Reads the data of entry `e` into a new state buffer on the variable's
// device.
weft_status* ReadValue(weft_session* s, CheckpointReader* r,
                       const CheckpointEntry& e, Restored* out) {
  Device* d = nullptr;
  WEFT_RETURN_IF_ERROR(VariableDevice(out->node, out->state, s->devices,
                                      s->plan_options.placement,
                                      s->costs.get(), &d, nullptr));
  TensorValue& v = out->value;
  v.dtype = e.dtype;
  v.dims = e.dims;
  WEFT_RETURN_IF_ERROR(d->Allocate(e.bytes, &v.buffer));
  if (!v.buffer) return r->ReadData(nullptr);  // empty
  v.buffer->is_state = true;
  if (d->host_memory()) return r->ReadData(v.buffer->handle);
  BufferRef staging = AllocateHostBuffer(e.bytes);
  if (!staging)
    return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory for a device copy");
  WEFT_RETURN_IF_ERROR(r->ReadData(staging->handle));
  return Annotate(d->api->copy_host_to_device(d->handle, nullptr,
                                              staging->handle,
                                              v.buffer->handle, 0, e.bytes),
                  r->Where() + ": copying variable '" + e.name + "' to " +
                      d->name + ": ");
}

weft_status* Restore(weft_session* s, const std::string& path,
                     weft_node* const* vars, int32_t n) {
  std::vector<const weft_node*> selected;
  WEFT_RETURN_IF_ERROR(SelectVariables(s, vars, n, &selected));
  std::unordered_map<std::string, const weft_node*> by_name;
  for (const weft_node* node : selected) by_name.emplace(node->name, node);

  // Everything is read and checked before anything is published.
  CheckpointReader reader;
  WEFT_RETURN_IF_ERROR(reader.Open(path));
  std::vector<Restored> restored;
  for (uint64_t i = 0; i < reader.num_records(); ++i) {
    CheckpointEntry e;
    WEFT_RETURN_IF_ERROR(reader.Next(&e));
    auto it = by_name.find(e.name);
    if (it == by_name.end()) continue;  // Next() checks the skipped data
    WEFT_RETURN_IF_ERROR(CheckFits(reader, it->second, e));
    restored.push_back({it->second, s->variables.Get(it->second), {}});
    WEFT_RETURN_IF_ERROR(ReadValue(s, &reader, e, &restored.back()));
  }
  WEFT_RETURN_IF_ERROR(reader.Finish());
  if (n > 0 && restored.size() < selected.size())
    for (const weft_node* node : selected)
      if (std::none_of(restored.begin(), restored.end(),
                       [&](const Restored& r) { return r.node == node; }))
        return Errorf(WEFT_NOT_FOUND, "%s holds no variable '%s'",
                      reader.Where().c_str(), node->name.c_str());

  // Published together, locked in address order as updates lock them, so
  // a run sees all old values or all new ones for the variables it reads.
  std::vector<Restored*> order;
  for (Restored& r : restored) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](Restored* a, Restored* b) {
    return a->state < b->state;
  });
  std::vector<std::unique_lock<std::mutex>> locks;
  for (Restored* r : order) locks.emplace_back(r->state->mu);
  for (Restored* r : order) {
    // The old value's readers hold their own references to it.
    std::swap(r->state->value, r->value);
    r->state->initialized = true;
  }
  return nullptr;
}

weft_status* CheckArguments(const weft_session* session, const char* path) {
  if (session == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "session is NULL");
  if (path == nullptr || *path == '\0')
    return Error(WEFT_INVALID_ARGUMENT, "checkpoint path is NULL or empty");
  return nullptr;
}

}  // namespace
}  // namespace weft

extern "C" {

weft_status* weft_checkpoint_save(weft_session* session, const char* path,
                                  weft_node* const* variables,
                                  int32_t num_variables) {
  WEFT_RETURN_IF_ERROR(weft::CheckArguments(session, path));
  return weft::Guard([&] {
    return weft::Save(session, path, variables, num_variables);
  });
}

weft_status* weft_checkpoint_restore(weft_session* session, const char* path,
                                     weft_node* const* variables,
                                     int32_t num_variables) {
  WEFT_RETURN_IF_ERROR(weft::CheckArguments(session, path));
  return weft::Guard([&] {
    return weft::Restore(session, path, variables, num_variables);
  });
}

}  // extern "C"
