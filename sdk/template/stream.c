/* Streams and events.
 *
 * A stream is a FIFO of work items drained by one worker thread, which is
 * what an accelerator's command queue looks like from the host: enqueueing
 * returns at once, items run in order, and their errors come back later,
 * from stream_synchronize or event_synchronize.  A real plugin maps these
 * slots onto its driver's queues and fences (cuStreamCreate, cuEventRecord,
 * clEnqueueMarker...); what must carry over is the error discipline:
 *
 *  - the first failure on a stream is kept, and later work on that stream is
 *    skipped (it would consume what the failed work never wrote) until
 *    stream_synchronize reports the failure and clears it;
 *  - an event remembers the stream's first error as of its point, so
 *    event_synchronize reports failures of the work before it and only
 *    those;
 *  - a stream waiting on an event inherits the event's error: its later
 *    work depends on work that failed.
 */
#include "template.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct weft_plugin_stream {
  weft_plugin_device* device;
  pthread_t worker;
  pthread_mutex_t mu;
  pthread_cond_t work_ready; /* the worker sleeps on it */
  pthread_cond_t work_done;  /* stream_synchronize sleeps on it */
  tpl_work* head;
  tpl_work* tail;
  uint64_t queued;    /* items ever queued */
  uint64_t completed; /* items finished, in queue order */
  int stopping;
  tpl_error error; /* the first since the last stream_synchronize */
};

struct weft_plugin_event {
  pthread_mutex_t mu;
  pthread_cond_t reached_changed;
  /* The host's reference, plus one per queued marker or wait: the host may
   * destroy an event whose marker has not run yet. */
  int refs;
  uint64_t recorded; /* sequence number of the latest event_record */
  uint64_t reached;  /* the highest sequence whose marker has run */
  tpl_error error;   /* the recording stream's error as of `reached` */
};

/* ---- Buffers in flight -------------------------------------------------- */

void tpl_work_use(tpl_work* work, tpl_buffer* buffer, int writes) {
  work->buffers[work->num_buffers] = buffer;
  work->writes[work->num_buffers] = (uint8_t)(writes != 0);
  work->num_buffers++;
}

int tpl_buffer_busy(const tpl_buffer* buffer, int any_use) {
  tpl_buffer* b = (tpl_buffer*)buffer;
  if (any_use) return atomic_load(&b->refs) > 1;
  return atomic_load(&b->queued_writes) > 0;
}

static void hold_buffers(tpl_work* work) {
  for (int32_t i = 0; i < work->num_buffers; ++i) {
    atomic_fetch_add(&work->buffers[i]->refs, 1);
    if (work->writes[i]) atomic_fetch_add(&work->buffers[i]->queued_writes, 1);
  }
}

static void event_unref(weft_plugin_event* event) {
  pthread_mutex_lock(&event->mu);
  int last = --event->refs == 0;
  pthread_mutex_unlock(&event->mu);
  if (!last) return;
  pthread_cond_destroy(&event->reached_changed);
  pthread_mutex_destroy(&event->mu);
  free(event);
}

static void release_work(tpl_work* work) {
  for (int32_t i = 0; i < work->num_buffers; ++i) {
    if (work->writes[i]) atomic_fetch_sub(&work->buffers[i]->queued_writes, 1);
    tpl_buffer_unref(work->buffers[i]);
  }
  if (work->event != NULL) event_unref(work->event);
  free(work);
}

/* ---- The worker --------------------------------------------------------- */

static void sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static void reach_marker(tpl_work* work, const tpl_error* stream_error) {
  weft_plugin_event* event = work->event;
  pthread_mutex_lock(&event->mu);
  /* Markers of one event recorded on different streams may run out of
   * order; the latest record is the one that counts. */
  if (work->sequence > event->reached) {
    event->reached = work->sequence;
    event->error = *stream_error;
    pthread_cond_broadcast(&event->reached_changed);
  }
  pthread_mutex_unlock(&event->mu);
}

static void wait_for_marker(tpl_work* work, tpl_error* error) {
  weft_plugin_event* event = work->event;
  pthread_mutex_lock(&event->mu);
  while (event->reached < work->sequence)
    pthread_cond_wait(&event->reached_changed, &event->mu);
  if (event->error.code != WEFT_OK) *error = event->error;
  pthread_mutex_unlock(&event->mu);
}

static void* worker_main(void* arg) {
  weft_plugin_stream* stream = arg;
  tpl_error snapshot;
  pthread_mutex_lock(&stream->mu);
  for (;;) {
    while (stream->head == NULL && !stream->stopping)
      pthread_cond_wait(&stream->work_ready, &stream->mu);
    tpl_work* work = stream->head;
    if (work == NULL) break; /* stopping, and everything queued has run */
    stream->head = work->next;
    if (stream->head == NULL) stream->tail = NULL;
    /* Every earlier item has stored its error by now, so this is the
     * stream's state at the item's place in the queue. */
    int failed = stream->error.code != WEFT_OK;
    if (work->kind == TPL_WORK_RECORD) snapshot = stream->error;
    pthread_mutex_unlock(&stream->mu);

    if (stream->device->delay_us > 0) sleep_us(stream->device->delay_us);
    tpl_error error;
    error.code = WEFT_OK;
    switch (work->kind) {
      case TPL_WORK_TASK:
        if (!failed) work->run(work, &error);
        break;
      case TPL_WORK_RECORD:
        reach_marker(work, &snapshot);
        break;
      case TPL_WORK_WAIT:
        wait_for_marker(work, &error);
        break;
    }
    /* Before `completed` moves: whoever synchronizes may free the memory
     * next, and must find no reference of ours left on it. */
    release_work(work);

    pthread_mutex_lock(&stream->mu);
    if (error.code != WEFT_OK && stream->error.code == WEFT_OK)
      stream->error = error;
    stream->completed++;
    pthread_cond_broadcast(&stream->work_done);
  }
  pthread_mutex_unlock(&stream->mu);
  return NULL;
}

static void enqueue(weft_plugin_stream* stream, tpl_work* work) {
  work->next = NULL;
  pthread_mutex_lock(&stream->mu);
  if (stream->tail != NULL) stream->tail->next = work;
  else stream->head = work;
  stream->tail = work;
  stream->queued++;
  pthread_cond_signal(&stream->work_ready);
  pthread_mutex_unlock(&stream->mu);
}

weft_status* tpl_submit(weft_plugin_stream* stream, tpl_work* work) {
  if (stream == NULL) {
    tpl_error error;
    error.code = WEFT_OK;
    work->run(work, &error);
    free(work);
    return tpl_status_from_error(&error);
  }
  hold_buffers(work);
  enqueue(stream, work);
  return NULL;
}

/* ---- Streams ------------------------------------------------------------ */

weft_status* tpl_stream_create(weft_plugin_device* device,
                               weft_plugin_stream** out) {
  if (device == NULL || out == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: stream_create: NULL argument");
  *out = NULL;
  weft_plugin_stream* stream = calloc(1, sizeof *stream);
  if (stream == NULL)
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of memory creating a stream");
  stream->device = device;
  stream->error.code = WEFT_OK;
  pthread_mutex_init(&stream->mu, NULL);
  pthread_cond_init(&stream->work_ready, NULL);
  pthread_cond_init(&stream->work_done, NULL);
  int rc = pthread_create(&stream->worker, NULL, worker_main, stream);
  if (rc != 0) {
    pthread_cond_destroy(&stream->work_done);
    pthread_cond_destroy(&stream->work_ready);
    pthread_mutex_destroy(&stream->mu);
    free(stream);
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: cannot start a stream's worker thread: "
                      "%s", strerror(rc));
  }
  *out = stream;
  return NULL;
}

/* Lets what is queued finish first, as a driver does: the host may destroy
 * a stream right after enqueueing its last copy. */
void tpl_stream_destroy(weft_plugin_device* device,
                        weft_plugin_stream* stream) {
  (void)device;
  if (stream == NULL) return;
  pthread_mutex_lock(&stream->mu);
  stream->stopping = 1;
  pthread_cond_signal(&stream->work_ready);
  pthread_mutex_unlock(&stream->mu);
  pthread_join(stream->worker, NULL);
  if (stream->error.code != WEFT_OK)
    tpl_log(WEFT_LOG_WARNING,
            "weft-template: a stream was destroyed with an error nobody "
            "synchronized to see: %s", stream->error.message);
  pthread_cond_destroy(&stream->work_done);
  pthread_cond_destroy(&stream->work_ready);
  pthread_mutex_destroy(&stream->mu);
  free(stream);
}

weft_status* tpl_stream_synchronize(weft_plugin_device* device,
                                    weft_plugin_stream* stream) {
  (void)device;
  if (stream == NULL) return NULL; /* NULL-stream work is already done */
  pthread_mutex_lock(&stream->mu);
  uint64_t target = stream->queued;
  while (stream->completed < target)
    pthread_cond_wait(&stream->work_done, &stream->mu);
  tpl_error error = stream->error;
  /* Reported once: the host pools streams, and the next run on this one
   * must not fail for the previous run's error. */
  stream->error.code = WEFT_OK;
  pthread_mutex_unlock(&stream->mu);
  return tpl_status_from_error(&error);
}

/* ---- Events ------------------------------------------------------------- */

weft_status* tpl_event_create(weft_plugin_device* device,
                              weft_plugin_event** out) {
  if (device == NULL || out == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: event_create: NULL argument");
  *out = NULL;
  weft_plugin_event* event = calloc(1, sizeof *event);
  if (event == NULL)
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of memory creating an event");
  pthread_mutex_init(&event->mu, NULL);
  pthread_cond_init(&event->reached_changed, NULL);
  event->refs = 1;
  event->error.code = WEFT_OK;
  *out = event;
  return NULL;
}

void tpl_event_destroy(weft_plugin_device* device, weft_plugin_event* event) {
  (void)device;
  if (event != NULL) event_unref(event);
}

/* A marker or a wait for `event`, holding a reference to it. */
static tpl_work* new_event_work(tpl_work_kind kind, weft_plugin_event* event,
                                uint64_t sequence) {
  tpl_work* work = calloc(1, sizeof *work);
  if (work == NULL) return NULL;
  work->kind = kind;
  work->event = event;
  work->sequence = sequence;
  pthread_mutex_lock(&event->mu);
  event->refs++;
  pthread_mutex_unlock(&event->mu);
  return work;
}

weft_status* tpl_event_record(weft_plugin_device* device,
                              weft_plugin_event* event,
                              weft_plugin_stream* stream) {
  (void)device;
  if (event == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: event_record: NULL event");
  pthread_mutex_lock(&event->mu);
  uint64_t sequence = ++event->recorded;
  if (stream == NULL) {
    /* Work without a stream is complete when it returns: the point is
     * reached already, and nothing before it can fail later. */
    event->reached = sequence;
    event->error.code = WEFT_OK;
    pthread_cond_broadcast(&event->reached_changed);
  }
  pthread_mutex_unlock(&event->mu);
  if (stream == NULL) return NULL;
  tpl_work* work = new_event_work(TPL_WORK_RECORD, event, sequence);
  if (work == NULL) {
    /* The sequence is taken; a marker that never comes would hang every
     * waiter, so mark it reached now and say the record failed. */
    pthread_mutex_lock(&event->mu);
    if (event->reached < sequence) event->reached = sequence;
    pthread_cond_broadcast(&event->reached_changed);
    pthread_mutex_unlock(&event->mu);
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of memory recording an event");
  }
  enqueue(stream, work);
  return NULL;
}

weft_status* tpl_event_synchronize(weft_plugin_device* device,
                                   weft_plugin_event* event) {
  (void)device;
  if (event == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: event_synchronize: NULL event");
  pthread_mutex_lock(&event->mu);
  /* An event never recorded is complete, as in CUDA and OpenCL. */
  uint64_t target = event->recorded;
  while (event->reached < target)
    pthread_cond_wait(&event->reached_changed, &event->mu);
  tpl_error error = event->error;
  pthread_mutex_unlock(&event->mu);
  return tpl_status_from_error(&error);
}

weft_status* tpl_stream_wait_event(weft_plugin_device* device,
                                   weft_plugin_stream* stream,
                                   weft_plugin_event* event) {
  (void)device;
  if (event == NULL)
    return tpl_status(WEFT_INVALID_ARGUMENT,
                      "weft-template: stream_wait_event: NULL event");
  pthread_mutex_lock(&event->mu);
  uint64_t sequence = event->recorded;
  pthread_mutex_unlock(&event->mu);
  if (sequence == 0) return NULL; /* nothing recorded: nothing to wait for */
  if (stream == NULL) {
    /* Later NULL-stream work starts when it is called: block here. */
    tpl_work probe;
    memset(&probe, 0, sizeof probe);
    probe.event = event;
    probe.sequence = sequence;
    tpl_error error;
    error.code = WEFT_OK;
    wait_for_marker(&probe, &error);
    return tpl_status_from_error(&error);
  }
  tpl_work* work = new_event_work(TPL_WORK_WAIT, event, sequence);
  if (work == NULL)
    return tpl_status(WEFT_RESOURCE_EXHAUSTED,
                      "weft-template: out of memory queuing an event wait");
  enqueue(stream, work);
  return NULL;
}
