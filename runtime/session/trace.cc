// Execution traces: the executor's records turned into run metadata's
// events (each given a lane: the thread, stream or async slot that ran
// it) and into Chrome trace-event JSON, and their C accessors.
#include "session/trace.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>

#include <unistd.h>

#include "base/status.h"
#include "checkpoint/checkpoint_format.h"
#include "session/run_metadata.h"

namespace weft {

uint32_t TraceThread() {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

namespace {

// A transfer between devices (Send, Recv) or tasks (_TaskSend,
// _TaskRecv).
bool IsTransfer(const PlanNode& p) {
  if (p.kind == ExecKind::kSend || p.kind == ExecKind::kRecv) return true;
  if (p.kind != ExecKind::kRuntime || p.node == nullptr) return false;
  return p.node->op_type == "_TaskSend" || p.node->op_type == "_TaskRecv";
}

}  // namespace

uint64_t TraceBytes(const PlanNode& p, const TensorValue* in,
                    const TensorValue* out) {
  if (IsTransfer(p)) {
    // What crossed: the value sent, or the value received.
    if (!p.input_slots.empty() && p.input_slots[0] >= 0)
      return in[p.input_slots[0]].byte_size();
    return p.num_outputs > 0 ? out[0].byte_size() : 0;
  }
  uint64_t bytes = 0;
  for (int32_t o = 0; out != nullptr && o < p.num_outputs; ++o) {
    const TensorValue& v = out[o];
    if (!v.buffer || v.buffer->is_state || v.device() != p.device) continue;
    bool forwarded = false;
    for (int32_t s : p.input_slots)
      if (s >= 0 && in[s].buffer.get() == v.buffer.get()) forwarded = true;
    if (!forwarded) bytes += v.byte_size();
  }
  return bytes;
}

}  // namespace weft

void weft_run_metadata::SetTrace(const weft::Plan& plan,
                                 const weft::TraceCollector& collector) {
  traced = true;
  trace.clear();
  chrome_trace.clear();
  std::vector<const weft::TraceRecord*> records;
  for (const weft::TraceRecord& r : collector.records()) records.push_back(&r);
  std::stable_sort(records.begin(), records.end(),
                   [](const weft::TraceRecord* a, const weft::TraceRecord* b) {
                     return a->start_ns < b->start_ns;
                   });
  // Threads numbered in the order they first ran something, the caller's
  // first; async slots per device, each reused once its last op ended
  // (so that a lane's events never overlap).
  std::map<uint32_t, int32_t> threads{{collector.caller(), 0}};
  std::map<const weft::Device*, std::vector<int64_t>> async_ends;
  for (const weft::TraceRecord* r : records) {
    const weft::PlanNode& p = *r->node;
    TraceEvent e;
    const bool transfer = weft::IsTransfer(p);
    e.kind = transfer ? WEFT_TRACE_EVENT_TRANSFER : WEFT_TRACE_EVENT_NODE;
    if (p.kind == weft::ExecKind::kSend || p.kind == weft::ExecKind::kRecv) {
      const weft::Transfer& t = plan.transfers[p.transfer];
      e.name = t.value;
      e.op = p.kind == weft::ExecKind::kSend ? "Send" : "Recv";
      e.from = t.src ? t.src->name : "host (feed)";
      e.to = t.dst->name;
    } else {
      e.name = p.node->name;
      e.op = p.node->op_type;
    }
    e.device = p.device->name;
    if (r->parked) {
      std::vector<int64_t>& ends = async_ends[p.device];
      size_t k = 0;
      while (k < ends.size() && ends[k] > r->start_ns) ++k;
      if (k == ends.size()) ends.push_back(0);
      ends[k] = r->end_ns;
      e.lane = "async " + std::to_string(k);
    } else if (r->on_stream) {
      e.lane = "stream";
    } else {
      auto it = threads.emplace(r->thread,
                                static_cast<int32_t>(threads.size()));
      e.lane = "thread " + std::to_string(it.first->second);
    }
    e.frame = r->frame == 0 ? std::string() : plan.frames[r->frame].name;
    e.iteration = r->iteration;
    e.start_ns = r->start_ns;
    e.end_ns = std::max(r->end_ns, r->start_ns);
    e.bytes = r->bytes;
    trace.push_back(std::move(e));
  }
}

namespace {

void AppendJsonString(std::string* out, const std::string& s) {
  out->push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

// Nanoseconds as the microseconds Chrome's ts and dur are in.
void AppendMicros(std::string* out, int64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  out->append(buf);
}

// Lanes in the order a viewer shows them: the stream, the threads by
// number, the async slots by number.
int LaneRank(const std::string& lane, int64_t* number) {
  *number = 0;
  size_t space = lane.find(' ');
  if (space != std::string::npos)
    *number = std::strtoll(lane.c_str() + space + 1, nullptr, 10);
  if (lane == "stream") return 0;
  return lane.compare(0, 6, "thread") == 0 ? 1 : 2;
}

void BuildChromeTrace(const weft_run_metadata& m, std::string* out) {
  // pid: one per device, in the run's device order; tid: one per lane of
  // a device.
  std::vector<std::string> devices = m.devices;
  for (const auto& e : m.trace)
    if (std::find(devices.begin(), devices.end(), e.device) == devices.end())
      devices.push_back(e.device);
  std::vector<std::vector<std::string>> lanes(devices.size());
  auto pid_of = [&](const std::string& device) {
    return static_cast<size_t>(
        std::find(devices.begin(), devices.end(), device) - devices.begin());
  };
  for (const auto& e : m.trace) {
    std::vector<std::string>& l = lanes[pid_of(e.device)];
    if (std::find(l.begin(), l.end(), e.lane) == l.end()) l.push_back(e.lane);
  }
  for (auto& l : lanes)
    std::sort(l.begin(), l.end(), [](const std::string& a,
                                     const std::string& b) {
      int64_t na, nb;
      int ra = LaneRank(a, &na), rb = LaneRank(b, &nb);
      return ra != rb ? ra < rb : na < nb;
    });
  auto tid_of = [&](size_t pid, const std::string& lane) {
    const std::vector<std::string>& l = lanes[pid];
    return static_cast<size_t>(std::find(l.begin(), l.end(), lane) -
                               l.begin()) + 1;
  };
  std::string& s = *out;
  s = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  auto begin_event = [&]() {
    s += first ? "\n" : ",\n";
    first = false;
  };
  for (size_t pid = 0; pid < devices.size(); ++pid) {
    if (lanes[pid].empty()) continue;
    begin_event();
    s += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" +
         std::to_string(pid + 1) + ",\"tid\":0,\"args\":{\"name\":";
    AppendJsonString(&s, devices[pid]);
    s += "}}";
    begin_event();
    s += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" +
         std::to_string(pid + 1) + ",\"tid\":0,\"args\":{\"sort_index\":" +
         std::to_string(pid + 1) + "}}";
    for (size_t t = 0; t < lanes[pid].size(); ++t) {
      begin_event();
      s += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" +
           std::to_string(pid + 1) + ",\"tid\":" + std::to_string(t + 1) +
           ",\"args\":{\"name\":";
      AppendJsonString(&s, lanes[pid][t]);
      s += "}}";
      begin_event();
      s += "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" +
           std::to_string(pid + 1) + ",\"tid\":" + std::to_string(t + 1) +
           ",\"args\":{\"sort_index\":" + std::to_string(t + 1) + "}}";
    }
  }
  for (const auto& e : m.trace) {
    const size_t pid = pid_of(e.device);
    begin_event();
    s += "{\"name\":";
    AppendJsonString(&s, e.name);
    s += e.kind == WEFT_TRACE_EVENT_TRANSFER ? ",\"cat\":\"transfer\""
                                             : ",\"cat\":\"node\"";
    s += ",\"ph\":\"X\",\"ts\":";
    AppendMicros(&s, e.start_ns);
    s += ",\"dur\":";
    AppendMicros(&s, e.end_ns - e.start_ns);
    s += ",\"pid\":" + std::to_string(pid + 1) +
         ",\"tid\":" + std::to_string(tid_of(pid, e.lane)) +
         ",\"args\":{\"op\":";
    AppendJsonString(&s, e.op);
    s += ",\"bytes\":" + std::to_string(e.bytes);
    if (!e.from.empty()) {
      s += ",\"from\":";
      AppendJsonString(&s, e.from);
      s += ",\"to\":";
      AppendJsonString(&s, e.to);
    }
    if (!e.frame.empty()) {
      s += ",\"frame\":";
      AppendJsonString(&s, e.frame);
      s += ",\"iteration\":" + std::to_string(e.iteration);
    }
    s += "}}";
  }
  s += "\n]}\n";
}

const weft_run_metadata::TraceEvent* EventAt(const weft_run_metadata* m,
                                             int32_t i) {
  if (m == nullptr || i < 0 || static_cast<size_t>(i) >= m->trace.size())
    return nullptr;
  return &m->trace[static_cast<size_t>(i)];
}

weft_status* OutOfRange(const weft_run_metadata* m, int32_t i) {
  return weft::Errorf(WEFT_OUT_OF_RANGE,
                      "trace event %d: the trace has %zu events", i,
                      m ? m->trace.size() : size_t{0});
}

}  // namespace

extern "C" {

int32_t weft_run_metadata_num_trace_events(const weft_run_metadata* m) {
  return m ? static_cast<int32_t>(m->trace.size()) : 0;
}

weft_status* weft_run_metadata_trace_event(const weft_run_metadata* m,
                                           int32_t i, int32_t* kind,
                                           const char** name, const char** op,
                                           const char** device,
                                           const char** lane,
                                           int64_t* start_ns, int64_t* end_ns,
                                           uint64_t* bytes) {
  const weft_run_metadata::TraceEvent* e = EventAt(m, i);
  if (e == nullptr) return OutOfRange(m, i);
  if (kind) *kind = e->kind;
  if (name) *name = e->name.c_str();
  if (op) *op = e->op.c_str();
  if (device) *device = e->device.c_str();
  if (lane) *lane = e->lane.c_str();
  if (start_ns) *start_ns = e->start_ns;
  if (end_ns) *end_ns = e->end_ns;
  if (bytes) *bytes = e->bytes;
  return nullptr;
}

weft_status* weft_run_metadata_trace_event_frame(const weft_run_metadata* m,
                                                 int32_t i,
                                                 const char** frame,
                                                 int64_t* iteration) {
  const weft_run_metadata::TraceEvent* e = EventAt(m, i);
  if (e == nullptr) return OutOfRange(m, i);
  if (frame) *frame = e->frame.c_str();
  if (iteration) *iteration = e->iteration;
  return nullptr;
}

const char* weft_run_metadata_chrome_trace(const weft_run_metadata* m) {
  if (m == nullptr) return nullptr;
  try {
    if (m->chrome_trace.empty()) BuildChromeTrace(*m, &m->chrome_trace);
  } catch (const std::bad_alloc&) {
    m->chrome_trace.clear();
    return nullptr;
  }
  return m->chrome_trace.c_str();
}

weft_status* weft_run_metadata_write_chrome_trace(const weft_run_metadata* m,
                                                  const char* path) {
  if (m == nullptr || path == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT,
                       m ? "path is NULL" : "metadata is NULL");
  if (!m->traced)
    return weft::Errorf(WEFT_FAILED_PRECONDITION,
                        "no trace to write to %s: the run was not traced "
                        "(set weft_run_options.trace_level)", path);
  const char* text = weft_run_metadata_chrome_trace(m);
  if (text == nullptr) return weft::Error(WEFT_RESOURCE_EXHAUSTED,
                                          "out of memory");
  // Whole or not at all, as checkpoints are written.
  const std::string target(path);
  auto where = [&](weft_status* st) {
    return st ? weft::Annotate(st, "writing the trace to '" + target + "'")
              : nullptr;
  };
  std::string temp;
  int fd = -1;
  WEFT_RETURN_IF_ERROR(where(weft::CreateTempBeside(target, &temp, &fd)));
  const size_t n = strlen(text);
  size_t done = 0;
  int err = 0;
  while (done < n) {
    ssize_t w = write(fd, text + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      err = errno;
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (err == 0 && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    unlink(temp.c_str());
    return where(weft::OsError(err, "cannot write", temp));
  }
  weft_status* st = weft::RenameIntoPlace(temp, target);
  if (st != nullptr) unlink(temp.c_str());
  return where(st);
}

}  // extern "C"
