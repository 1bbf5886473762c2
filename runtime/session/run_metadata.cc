#include "session/run_metadata.h"

#include <cinttypes>
#include <cstdio>
#include <new>

#include "base/status.h"

void weft_run_metadata::Clear() {
  nodes.clear();
  transfers.clear();
  frames.clear();
  merged.clear();
  fused.clear();
  recomputed.clear();
  in_place.clear();
  devices.clear();
  peak_bytes.clear();
  schedule_edges = 0;
  intra_op_threads = 0;
  text.clear();
  trace.clear();
  traced = false;
  chrome_trace.clear();
}

void weft_run_metadata::Describe(const weft::Plan& plan) {
  Clear();
  for (const weft::PlanNode& p : plan.nodes) {
    if (p.kind == weft::ExecKind::kSend || p.kind == weft::ExecKind::kRecv)
      continue;
    nodes.push_back({p.node->name, p.node->op_type, p.device->name,
                     p.reason,
                     p.frame == 0 ? std::string() : plan.frames[p.frame].name});
  }
  for (size_t f = 1; f < plan.frames.size(); ++f) {
    const weft::PlanFrame& pf = plan.frames[f];
    frames.push_back({pf.name,
                      pf.parent == 0 ? std::string()
                                     : plan.frames[pf.parent].name,
                      pf.parallel_iterations, 0, 0});
  }
  for (const weft::Transfer& t : plan.transfers)
    transfers.push_back({t.value, t.src ? t.src->name : "host (feed)",
                         t.dst->name, t.wire_dtype, t.bytes});
  for (const auto& m : plan.merged)
    merged.emplace_back(m.first->name, m.second->name);
  fused = plan.fused;
  recomputed = plan.recomputed;
  for (weft::Device* d : plan.devices) devices.push_back(d->name);
  peak_bytes.assign(devices.size(), 0);
  schedule_edges = plan.schedule_edges;
}

void weft_run_metadata::SetPeaks(const weft::Plan& plan,
                                 const weft::RunStats& stats) {
  for (size_t i = 0; i < plan.devices.size() && i < stats.peak_bytes.size();
       ++i)
    peak_bytes[i] = stats.peak_bytes[i];
  intra_op_threads = stats.intra_op_threads;
  in_place.clear();
  for (const auto& x : stats.in_place)
    in_place.emplace_back(x.first->name, x.second->name);
  for (size_t f = 0; f < frames.size(); ++f) {
    if (f + 1 < stats.frame_iterations.size())
      frames[f].iterations = stats.frame_iterations[f + 1];
    if (f + 1 < stats.frame_max_in_flight.size())
      frames[f].max_in_flight = stats.frame_max_in_flight[f + 1];
  }
}

namespace {

template <typename T>
bool InRange(const std::vector<T>& v, int32_t i) {
  return i >= 0 && static_cast<size_t>(i) < v.size();
}

const weft_run_metadata::Node* NodeAt(const weft_run_metadata* m, int32_t i) {
  return m && InRange(m->nodes, i) ? &m->nodes[i] : nullptr;
}

}  // namespace

extern "C" {

weft_run_metadata* weft_run_metadata_create(void) {
  return new (std::nothrow) weft_run_metadata;
}

void weft_run_metadata_destroy(weft_run_metadata* m) { delete m; }

int32_t weft_run_metadata_num_nodes(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->nodes.size()) : 0;
}

const char* weft_run_metadata_node_name(const weft_run_metadata* m,
                                        int32_t i) {
  const auto* n = NodeAt(m, i);
  return n ? n->name.c_str() : nullptr;
}

const char* weft_run_metadata_node_op(const weft_run_metadata* m, int32_t i) {
  const auto* n = NodeAt(m, i);
  return n ? n->op.c_str() : nullptr;
}

const char* weft_run_metadata_node_device(const weft_run_metadata* m,
                                          int32_t i) {
  const auto* n = NodeAt(m, i);
  return n ? n->device.c_str() : nullptr;
}

const char* weft_run_metadata_node_reason(const weft_run_metadata* m,
                                          int32_t i) {
  const auto* n = NodeAt(m, i);
  return n ? n->reason.c_str() : nullptr;
}

const char* weft_run_metadata_device_of(const weft_run_metadata* m,
                                        const char* node_name) {
  if (m == nullptr || node_name == nullptr) return nullptr;
  for (const auto& n : m->nodes)
    if (n.name == node_name) return n.device.c_str();
  return nullptr;
}

int32_t weft_run_metadata_num_transfers(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->transfers.size()) : 0;
}

weft_status* weft_run_metadata_transfer(const weft_run_metadata* m, int32_t i,
                                        const char** value,
                                        const char** src_device,
                                        const char** dst_device,
                                        int32_t* wire_dtype,
                                        uint64_t* bytes) {
  if (m == nullptr || !InRange(m->transfers, i))
    return weft::Errorf(WEFT_OUT_OF_RANGE, "no transfer %d (the run had %d)",
                        i, weft_run_metadata_num_transfers(m));
  const auto& t = m->transfers[i];
  if (value) *value = t.value.c_str();
  if (src_device) *src_device = t.src.c_str();
  if (dst_device) *dst_device = t.dst.c_str();
  if (wire_dtype) *wire_dtype = t.wire_dtype;
  if (bytes) *bytes = t.bytes;
  return nullptr;
}

int32_t weft_run_metadata_num_fused(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->fused.size()) : 0;
}

weft_status* weft_run_metadata_fused(const weft_run_metadata* m, int32_t i,
                                     const char** node, const char** what) {
  if (m == nullptr || !InRange(m->fused, i))
    return weft::Errorf(WEFT_OUT_OF_RANGE, "fusion %d of %d", i,
                        weft_run_metadata_num_fused(m));
  if (node) *node = m->fused[i].first.c_str();
  if (what) *what = m->fused[i].second.c_str();
  return nullptr;
}

int32_t weft_run_metadata_num_recomputed(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->recomputed.size()) : 0;
}

weft_status* weft_run_metadata_recomputed(const weft_run_metadata* m,
                                          int32_t i, const char** node,
                                          const char** what) {
  if (m == nullptr || !InRange(m->recomputed, i))
    return weft::Errorf(WEFT_OUT_OF_RANGE, "recomputation %d of %d", i,
                        weft_run_metadata_num_recomputed(m));
  if (node) *node = m->recomputed[i].first.c_str();
  if (what) *what = m->recomputed[i].second.c_str();
  return nullptr;
}

int32_t weft_run_metadata_intra_op_threads(const weft_run_metadata* m) {
  return m ? m->intra_op_threads : 0;
}

int32_t weft_run_metadata_num_in_place(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->in_place.size()) : 0;
}

weft_status* weft_run_metadata_in_place(const weft_run_metadata* m, int32_t i,
                                        const char** update,
                                        const char** variable) {
  if (m == nullptr || !InRange(m->in_place, i))
    return weft::Errorf(WEFT_OUT_OF_RANGE, "in-place update %d of %d", i,
                        weft_run_metadata_num_in_place(m));
  if (update) *update = m->in_place[i].first.c_str();
  if (variable) *variable = m->in_place[i].second.c_str();
  return nullptr;
}

int32_t weft_run_metadata_num_merged(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->merged.size()) : 0;
}

weft_status* weft_run_metadata_merged(const weft_run_metadata* m, int32_t i,
                                      const char** removed,
                                      const char** kept) {
  if (m == nullptr || !InRange(m->merged, i))
    return weft::Errorf(WEFT_OUT_OF_RANGE, "no merge %d (the run had %d)", i,
                        weft_run_metadata_num_merged(m));
  if (removed) *removed = m->merged[i].first.c_str();
  if (kept) *kept = m->merged[i].second.c_str();
  return nullptr;
}

int32_t weft_run_metadata_num_devices(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->devices.size()) : 0;
}

const char* weft_run_metadata_device_name(const weft_run_metadata* m,
                                          int32_t i) {
  return m && InRange(m->devices, i) ? m->devices[i].c_str() : nullptr;
}

const char* weft_run_metadata_node_frame(const weft_run_metadata* m,
                                         int32_t i) {
  const auto* n = NodeAt(m, i);
  return n ? n->frame.c_str() : nullptr;
}

int32_t weft_run_metadata_num_frames(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->frames.size()) : 0;
}

weft_status* weft_run_metadata_frame(const weft_run_metadata* m, int32_t i,
                                     const char** name, const char** parent,
                                     int32_t* parallel_iterations,
                                     int64_t* iterations,
                                     int32_t* max_in_flight) {
  if (m == nullptr || !InRange(m->frames, i))
    return weft::Errorf(WEFT_OUT_OF_RANGE,
                        "frame %d of a run metadata with %d frames", i,
                        m ? static_cast<int32_t>(m->frames.size()) : 0);
  const auto& f = m->frames[i];
  if (name) *name = f.name.c_str();
  if (parent) *parent = f.parent.c_str();
  if (parallel_iterations) *parallel_iterations = f.parallel_iterations;
  if (iterations) *iterations = f.iterations;
  if (max_in_flight) *max_in_flight = f.max_in_flight;
  return nullptr;
}

uint64_t weft_run_metadata_peak_bytes(const weft_run_metadata* m, int32_t i) {
  return m && InRange(m->peak_bytes, i) ? m->peak_bytes[i] : 0;
}

const char* weft_run_metadata_to_string(const weft_run_metadata* m) {
  if (m == nullptr) return "";
  std::string& t = m->text;
  t.clear();
  char buf[64];
  t += "placement (" + std::to_string(m->nodes.size()) + " nodes):\n";
  for (const auto& n : m->nodes)
    t += "  " + n.name + " (" + n.op + ") -> " + n.device + ": " + n.reason +
         (n.frame.empty() ? "" : " [frame '" + n.frame + "']") + "\n";
  if (!m->frames.empty()) {
    t += "loop frames (" + std::to_string(m->frames.size()) + "):\n";
    for (const auto& f : m->frames)
      t += "  '" + f.name + "'" +
           (f.parent.empty() ? "" : " in '" + f.parent + "'") +
           ": parallel_iterations " + std::to_string(f.parallel_iterations) +
           ", " + std::to_string(f.iterations) + " iterations, at most " +
           std::to_string(f.max_in_flight) + " at once\n";
  }
  t += "transfers (" + std::to_string(m->transfers.size()) +
       " Send/Recv pairs):\n";
  for (const auto& x : m->transfers) {
    std::snprintf(buf, sizeof buf, "%" PRIu64, x.bytes);
    t += "  " + x.value + ": " + x.src + " -> " + x.dst + " as " +
         weft_dtype_name(static_cast<weft_dtype>(x.wire_dtype)) + ", " +
         (x.bytes ? std::string(buf) + " bytes" : "size known at run time") +
         "\n";
  }
  t += "common subexpressions merged: " + std::to_string(m->merged.size()) +
       "\n";
  for (const auto& x : m->merged)
    t += "  " + x.first + " -> " + x.second + "\n";
  t += "fused: " + std::to_string(m->fused.size()) + "\n";
  for (const auto& x : m->fused) t += "  " + x.first + " <- " + x.second + "\n";
  t += "recomputed: " + std::to_string(m->recomputed.size()) + "\n";
  for (const auto& x : m->recomputed)
    t += "  " + x.first + " <- " + x.second + "\n";
  t += "threads a kernel could use: " + std::to_string(m->intra_op_threads) +
       "\n";
  t += "updates written in place: " + std::to_string(m->in_place.size()) +
       "\n";
  for (const auto& x : m->in_place)
    t += "  " + x.first + " -> " + x.second + "\n";
  t += "memory scheduling edges: " + std::to_string(m->schedule_edges) +
       "\n";
  t += "peak run memory:\n";
  for (size_t i = 0; i < m->devices.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%" PRIu64, m->peak_bytes[i]);
    t += "  " + m->devices[i] + ": " + buf + " bytes\n";
  }
  return t.c_str();
}

}  // extern "C"
