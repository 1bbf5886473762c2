// Streams and transfers of a run: syncing a device's stream and freeing
// what waited for it, copies between devices, and the Send/Recv pair the
// placer puts on an edge between devices.  Part of the executor
// (executor.cc); the frame executor calls them too.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "distributed/transfer.h"
#include "session/executor.h"
#include "session/run.h"

namespace weft {
namespace exec {

weft_status* Run::DrainStream(Device* d) {
  RunStream* rs = StreamFor(d);
  if (rs == nullptr) return nullptr;
  // Buffers deferred for this stream before the sync starts: everything
  // that reads them is queued already, so the sync makes them free.
  std::vector<Deferred> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto keep = std::partition(
        deferred_.begin(), deferred_.end(),
        [d](const Deferred& x) { return x.stream_device != d; });
    for (auto it = keep; it != deferred_.end(); ++it) {
      deferred_bytes_ -= it->buffer->bytes;
      done.push_back(std::move(*it));
    }
    deferred_.erase(keep, deferred_.end());
  }
  weft_status* st;
  {
    std::lock_guard<std::mutex> lock(rs->mu);
    st = d->api->stream_synchronize(d->handle, rs->stream);
  }
  if (st != nullptr) {
    // Not known to be done: keep them until the end of the run.
    std::lock_guard<std::mutex> lock(mu_);
    for (Deferred& x : done) {
      deferred_bytes_ += x.buffer->bytes;
      deferred_.push_back(std::move(x));
    }
  }
  return st;
}

void Run::Defer(Device* stream_device, BufferRef buffer) {
  if (!buffer) return;
  std::lock_guard<std::mutex> lock(mu_);
  deferred_bytes_ += buffer->bytes;
  deferred_.push_back(Deferred{stream_device, std::move(buffer)});
  if (deferred_bytes_ > kDeferredLimit)
    drain_wanted_.store(true, std::memory_order_relaxed);
}

weft_status* Run::DrainDeferred() {
  std::vector<Device*> devices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Deferred& d : deferred_)
      if (std::find(devices.begin(), devices.end(), d.stream_device) ==
          devices.end())
        devices.push_back(d.stream_device);
  }
  for (Device* d : devices) WEFT_RETURN_IF_ERROR(DrainStream(d));
  return nullptr;
}

weft_status* Run::CopyInto(const TensorValue& v, Device* d, RunStream* rs,
                           TensorValue* out, bool mark_state) {
  out->dtype = v.dtype;
  out->dims = v.dims;
  out->offset = 0;
  size_t bytes = v.byte_size();
  WEFT_RETURN_IF_ERROR(d->Allocate(bytes, &out->buffer));
  if (bytes == 0) return nullptr;
  if (mark_state) out->buffer->is_state = true;
  weft_plugin_stream* stream = rs ? rs->stream : nullptr;
  Device* src = v.device();
  if (src == d) {
    // Other threads of this run may be queuing kernels on the same stream,
    // and a stream takes one host thread at a time.
    std::unique_lock<std::mutex> lock;
    if (rs) lock = std::unique_lock<std::mutex>(rs->mu);
    return d->api->copy_device_to_device(d->handle, stream, v.buffer->handle,
                                         v.offset, out->buffer->handle, 0,
                                         bytes);
  }
  if (src != nullptr && !src->host_memory()) {
    // Another device: make its pending work visible, then stage via host.
    if (RunStream* srs = StreamFor(src)) {
      std::lock_guard<std::mutex> lock(srs->mu);
      WEFT_RETURN_IF_ERROR(
          src->api->stream_synchronize(src->handle, srs->stream));
    }
    BufferRef staging = AllocateHostBuffer(bytes);
    if (!staging) return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
    WEFT_RETURN_IF_ERROR(src->api->copy_device_to_host(
        src->handle, nullptr, v.buffer->handle, v.offset, staging->handle,
        bytes));
    return d->api->copy_host_to_device(d->handle, nullptr, staging->handle,
                                       out->buffer->handle, 0, bytes);
  }
  if (d->host_memory()) {
    std::memcpy(out->buffer->handle, v.host_data(), bytes);
    return nullptr;
  }
  // Host memory to a device: synchronous, so the source may go right after.
  return d->api->copy_host_to_device(d->handle, nullptr, v.host_data(),
                                     out->buffer->handle, 0, bytes);
}

// Send, on the value's device: narrows it for a lossy transfer, and marks
// the point in the device's stream after which the value is complete.
weft_status* Run::Send(const PlanNode& p, TensorValue* in, TensorValue* out) {
  const TensorValue& v = in[p.input_slots[0]];
  if (p.cast_node != nullptr) {
    const TensorValue* narrowed = &v;
    WEFT_RETURN_IF_ERROR(RunKernel(p, p.cast_node, p.kernel, &narrowed, 1, out, 1));
  } else {
    *out = v;
  }
  RunStream* rs = StreamFor(p.device);
  if (rs == nullptr) return nullptr;
  // In a loop a transfer runs once per iteration, and iterations overlap:
  // one event per transfer cannot tell them apart, so the Send waits for
  // its value instead.
  if (plan_.control_flow) return DrainStream(p.device);
  Device* d = p.device;
  weft_plugin_event* e = nullptr;
  WEFT_RETURN_IF_ERROR(d->api->event_create(d->handle, &e));
  events_[p.transfer] = e;  // destroyed in Finish, after the streams sync
  std::lock_guard<std::mutex> lock(rs->mu);
  return d->api->event_record(d->handle, e, rs->stream);
}

// Recv, on the destination device: waits for the Send's point, copies the
// value over (through host memory between two devices that both have their
// own), and widens a lossy value back.
weft_status* Run::Recv(const PlanNode& p, TensorValue* in, TensorValue* out) {
  const Transfer& t = plan_.transfers[p.transfer];
  const TensorValue& wire = in[p.input_slots[0]];
  Device* src = t.src;
  Device* dst = p.device;
  if (weft_plugin_event* e = events_[p.transfer])
    WEFT_RETURN_IF_ERROR(Annotate(src->api->event_synchronize(src->handle, e),
                                  "work on " + src->name + " before a Send"));
  TensorValue received;
  TensorValue* into = p.cast_node ? &received : out;
  into->dtype = wire.dtype;
  into->dims = wire.dims;
  into->offset = 0;
  size_t bytes = wire.byte_size();
  WEFT_RETURN_IF_ERROR(dst->Allocate(bytes, &into->buffer));
  if (bytes > 0) {
    const void* host_src = nullptr;
    BufferRef keep;  // host memory an asynchronous copy reads from
    if (src == nullptr || src->host_memory()) {
      host_src = wire.host_data();
      keep = wire.buffer;
    } else {
      keep = AllocateHostBuffer(bytes);
      if (!keep) return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
      WEFT_RETURN_IF_ERROR(src->api->copy_device_to_host(
          src->handle, nullptr, wire.buffer->handle, wire.offset,
          keep->handle, bytes));
      host_src = keep->handle;
    }
    if (dst->host_memory()) {
      std::memcpy(into->buffer->handle, host_src, bytes);
    } else {
      RunStream* rs = StreamFor(dst);
      std::unique_lock<std::mutex> lock;
      if (rs) lock = std::unique_lock<std::mutex>(rs->mu);
      WEFT_RETURN_IF_ERROR(dst->api->copy_host_to_device(
          dst->handle, rs ? rs->stream : nullptr, host_src,
          into->buffer->handle, 0, bytes));
      // The copy reads host memory until the stream passes it.
      if (rs) {
        lock.unlock();
        Defer(dst, std::move(keep));
      }
    }
  }
  if (p.cast_node == nullptr) return nullptr;
  const TensorValue* widened = &received;
  weft_status* st = RunKernel(p, p.cast_node, p.kernel, &widened, 1, out, 1);
  Release(received);
  return st;
}

}  // namespace exec
}  // namespace weft
