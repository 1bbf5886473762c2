// The summary writer (weft/summary.h): TensorBoard event files.  Each
// addition is one Event record written whole with write(2), so TensorBoard
// reading the file while the program runs sees complete records only (it
// waits at a partial one anyway).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "base/status.h"
#include "graph/graph.h"
#include "io/record_io.h"
#include "session/run_metadata.h"
#include "summary/graph_def.h"
#include "summary/summary.h"
#include "tensor/tensor_value.h"
#include "tf_summary.pb.h"
#include "weft/summary.h"

struct weft_summary_writer {
  std::mutex mu;
  std::string path;
  int fd = -1;  // -1 once closed
};

namespace weft {
namespace {

double WallTime() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

weft_status* SystemError(const std::string& what, int err) {
  return Error(err == ENOSPC || err == EDQUOT ? WEFT_RESOURCE_EXHAUSTED
                                              : WEFT_UNAVAILABLE,
               what + ": " + std::strerror(err));
}

// Makes `dir` and its missing parents; each that exists must be a
// directory.
weft_status* MakeDirectories(const std::string& dir) {
  for (size_t at = 1;; ++at) {
    at = dir.find('/', at);
    const std::string part = dir.substr(0, at);
    struct stat st;
    if (!part.empty() && stat(part.c_str(), &st) != 0) {
      if (errno != ENOENT || (mkdir(part.c_str(), 0777) != 0 && errno != EEXIST))
        return SystemError("summary writer: cannot create directory '" +
                               part + "'", errno);
    } else if (!part.empty() && !S_ISDIR(st.st_mode)) {
      return Error(WEFT_FAILED_PRECONDITION, "summary writer: '" + part +
                                                 "' is not a directory");
    }
    if (at == std::string::npos) return nullptr;
  }
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
    return "localhost";
  std::string host = name;
  for (char& c : host)
    if (c == '/') c = '_';
  return host;
}

weft_status* WriteAll(int fd, const std::string& bytes,
                      const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError("writing '" + path + "'", errno);
    done += static_cast<size_t>(n);
  }
  return nullptr;
}

// Appends `event` (wall time set here) as one record, serialized straight
// after room for the record's header.
weft_status* Append(weft_summary_writer* w, tf::Event* event) {
  event->set_wall_time(WallTime());
  constexpr size_t kHeader = 12;
  std::string record(kHeader, '\0');
  if (!event->AppendToString(&record) ||
      record.size() - kHeader > io::kMaxRecordBytes)
    return Error(WEFT_INVALID_ARGUMENT,
                 "summary writer: an event larger than a record may be");
  unsigned char header[kHeader], footer[4];
  io::FrameTfRecord(record.data() + kHeader, record.size() - kHeader, header,
                    footer);
  record.replace(0, kHeader, reinterpret_cast<char*>(header), kHeader);
  record.append(reinterpret_cast<char*>(footer), sizeof footer);
  std::lock_guard<std::mutex> lock(w->mu);
  if (w->fd < 0)
    return Error(WEFT_FAILED_PRECONDITION,
                 "summary writer for '" + w->path + "' is closed");
  return WriteAll(w->fd, record, w->path);
}

// An event at `step` holding a Summary that `fill` makes (nothing is
// written when it fails).
template <typename Fill>
weft_status* AppendSummary(weft_summary_writer* w, int64_t step, Fill&& fill) {
  tf::Event event;
  event.set_step(step);
  WEFT_RETURN_IF_ERROR(fill(event.mutable_summary()));
  return Append(w, &event);
}

weft_status* CheckWriter(const weft_summary_writer* w, const char* what) {
  if (w == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: writer is NULL", what);
  return nullptr;
}

// The writer and the tag of an addition.
weft_status* CheckArgs(const weft_summary_writer* w, const char* tag,
                       const char* what) {
  WEFT_RETURN_IF_ERROR(CheckWriter(w, what));
  if (tag == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: tag is NULL", what);
  return summary::CheckTag(tag, what);
}

// The host bytes of `t` (which the C API's tensors always are).
weft_status* HostValue(const weft_tensor* t, const char* what,
                       const void** data) {
  if (t == nullptr)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: the tensor is NULL", what);
  *data = t->value.host_data();
  if (*data == nullptr && t->value.byte_size() != 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: the tensor is not in host "
                  "memory", what);
  return nullptr;
}

}  // namespace
}  // namespace weft

using weft::Error;

weft_status* weft_summary_writer_create(const char* logdir,
                                        const char* filename_suffix,
                                        weft_summary_writer** out) {
  if (out == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "weft_summary_writer_create: out is NULL");
  *out = nullptr;
  if (logdir == nullptr || logdir[0] == '\0')
    return Error(WEFT_INVALID_ARGUMENT,
                 "weft_summary_writer_create: the log directory is empty");
  const std::string suffix = filename_suffix ? filename_suffix : "";
  if (suffix.find('/') != std::string::npos)
    return Error(WEFT_INVALID_ARGUMENT, "weft_summary_writer_create: the "
                 "file name suffix '" + suffix + "' holds a '/'");
  WEFT_RETURN_IF_ERROR(weft::MakeDirectories(logdir));
  const std::string base = std::string(logdir) + "/events.out.tfevents." +
                           std::to_string(static_cast<long long>(time(nullptr))) +
                           "." + weft::HostName();
  // Two writers in one second on one host: the second file gets ".1".
  std::string path;
  int fd = -1;
  for (int k = 0; fd < 0 && k < 1000; ++k) {
    path = base + (k ? "." + std::to_string(k) : "") + suffix;
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      return weft::SystemError("summary writer: cannot create '" + path + "'",
                               errno);
  }
  if (fd < 0)
    return Error(WEFT_ALREADY_EXISTS, "summary writer: 1000 event files "
                 "named '" + base + "...' exist already");
  auto* w = new weft_summary_writer;
  w->path = path;
  w->fd = fd;
  weft::tf::Event first;
  first.set_file_version("brain.Event:2");
  weft_status* st = weft::Append(w, &first);
  if (st != nullptr) {
    weft_summary_writer_destroy(w);
    unlink(path.c_str());
    return st;
  }
  *out = w;
  return nullptr;
}

weft_status* weft_summary_writer_close(weft_summary_writer* writer) {
  if (writer == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "weft_summary_writer_close: NULL");
  std::lock_guard<std::mutex> lock(writer->mu);
  if (writer->fd < 0) return nullptr;
  const int fd = writer->fd;
  writer->fd = -1;
  const int synced = fsync(fd) == 0 ? 0 : errno;
  if (close(fd) != 0 || synced != 0)
    return weft::SystemError("closing '" + writer->path + "'",
                             synced ? synced : errno);
  return nullptr;
}

void weft_summary_writer_destroy(weft_summary_writer* writer) {
  if (writer == nullptr) return;
  weft_status_destroy(weft_summary_writer_close(writer));
  delete writer;
}

const char* weft_summary_writer_path(const weft_summary_writer* writer) {
  return writer != nullptr ? writer->path.c_str() : nullptr;
}

weft_status* weft_summary_writer_flush(weft_summary_writer* writer) {
  if (writer == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "weft_summary_writer_flush: NULL");
  std::lock_guard<std::mutex> lock(writer->mu);
  if (writer->fd < 0)
    return Error(WEFT_FAILED_PRECONDITION,
                 "summary writer for '" + writer->path + "' is closed");
  if (fdatasync(writer->fd) != 0)
    return weft::SystemError("flushing '" + writer->path + "'", errno);
  return nullptr;
}

weft_status* weft_summary_writer_add_scalar(weft_summary_writer* writer,
                                            const char* tag, int64_t step,
                                            double value) {
  WEFT_RETURN_IF_ERROR(
      weft::CheckArgs(writer, tag, "weft_summary_writer_add_scalar"));
  return weft::AppendSummary(writer, step, [&](weft::tf::Summary* s) {
    weft::summary::Scalar(tag, value, s);
    return static_cast<weft_status*>(nullptr);
  });
}

weft_status* weft_summary_writer_add_histogram(weft_summary_writer* writer,
                                               const char* tag, int64_t step,
                                               const weft_tensor* values) {
  const char* what = "weft_summary_writer_add_histogram";
  WEFT_RETURN_IF_ERROR(weft::CheckArgs(writer, tag, what));
  const void* data = nullptr;
  WEFT_RETURN_IF_ERROR(weft::HostValue(values, what, &data));
  return weft::AppendSummary(writer, step, [&](weft::tf::Summary* s) {
    return weft::Annotate(
        weft::summary::Histogram(tag, values->value.dtype, data,
                                 values->value.elements(), s),
        std::string(what) + " '" + tag + "'");
  });
}

weft_status* weft_summary_writer_add_image(weft_summary_writer* writer,
                                           const char* tag, int64_t step,
                                           const weft_tensor* images,
                                           int64_t max_images) {
  const char* what = "weft_summary_writer_add_image";
  WEFT_RETURN_IF_ERROR(weft::CheckArgs(writer, tag, what));
  const void* data = nullptr;
  WEFT_RETURN_IF_ERROR(weft::HostValue(images, what, &data));
  return weft::AppendSummary(writer, step, [&](weft::tf::Summary* s) {
    return weft::Annotate(
        weft::summary::Images(tag, images->value.dtype, images->value.dims,
                              data, max_images, s),
        std::string(what) + " '" + tag + "'");
  });
}

weft_status* weft_summary_writer_add_text(weft_summary_writer* writer,
                                          const char* tag, int64_t step,
                                          const char* text) {
  const char* what = "weft_summary_writer_add_text";
  WEFT_RETURN_IF_ERROR(weft::CheckArgs(writer, tag, what));
  if (text == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, std::string(what) + ": text is NULL");
  return weft::AppendSummary(writer, step, [&](weft::tf::Summary* s) {
    weft::summary::Text(tag, text, s);
    return static_cast<weft_status*>(nullptr);
  });
}

weft_status* weft_summary_writer_add_summary(weft_summary_writer* writer,
                                             int64_t step,
                                             const weft_tensor* summary) {
  const char* what = "weft_summary_writer_add_summary";
  WEFT_RETURN_IF_ERROR(weft::CheckWriter(writer, what));
  const void* data = nullptr;
  WEFT_RETURN_IF_ERROR(weft::HostValue(summary, what, &data));
  if (summary->value.dtype != WEFT_UINT8 || summary->value.dims.rank() != 1)
    return weft::Errorf(WEFT_INVALID_ARGUMENT, "%s: a summary is a uint8 "
                        "vector (a summary op's output), got %s %s", what,
                        weft_dtype_name(summary->value.dtype),
                        summary->value.dims.ToString().c_str());
  return weft::AppendSummary(writer, step, [&](weft::tf::Summary* s) {
    return weft::summary::ParseSummary(data, summary->value.byte_size(), what,
                                       s);
  });
}

weft_status* weft_summary_writer_add_graph(weft_summary_writer* writer,
                                           const weft_graph* graph,
                                           const weft_run_metadata* placement) {
  const char* what = "weft_summary_writer_add_graph";
  WEFT_RETURN_IF_ERROR(weft::CheckWriter(writer, what));
  if (graph == nullptr || graph->impl == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, std::string(what) + ": graph is NULL");
  std::function<const char*(const weft_node*)> device_of;
  if (placement != nullptr)
    device_of = [placement](const weft_node* n) {
      const char* d = weft_run_metadata_device_of(placement, n->name.c_str());
      return d != nullptr && d[0] != '\0' ? d : nullptr;
    };
  weft::tf::Event event;
  WEFT_RETURN_IF_ERROR(weft::summary::GraphDefBytes(
      *graph->impl, device_of, event.mutable_graph_def()));
  return weft::Append(writer, &event);
}

weft_status* weft_summary_writer_add_restart(weft_summary_writer* writer,
                                             int64_t step,
                                             const char* checkpoint_path) {
  WEFT_RETURN_IF_ERROR(
      weft::CheckWriter(writer, "weft_summary_writer_add_restart"));
  weft::tf::Event event;
  event.set_step(step);
  weft::tf::SessionLog* log = event.mutable_session_log();
  log->set_status(weft::tf::SessionLog::START);
  if (checkpoint_path != nullptr) log->set_checkpoint_path(checkpoint_path);
  return weft::Append(writer, &event);
}
