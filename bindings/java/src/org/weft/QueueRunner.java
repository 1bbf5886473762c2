package org.weft;

/**
 * Threads that run a queue's enqueue op over and over in a session, so that
 * a graph's input stage fills a queue while training dequeues from it
 * (weft_queue_runner_* in weft/session.h).
 *
 * <pre>{@code
 * try (QueueRunner runner = QueueRunner.start(session, enqueue, 2, close)) {
 *   // runs that dequeue; once the input is exhausted and the queue drained,
 *   // a dequeue throws a WeftException of code OUT_OF_RANGE
 *   runner.stop(); // throws the first error a runner thread met
 * }
 * }</pre>
 *
 * <p>A thread's run that ends with OUT_OF_RANGE (its input is exhausted) or
 * CANCELLED (the queue was closed) ends that thread quietly; when the last
 * thread ends so, {@code close} runs.  Any other error is kept (the first),
 * runs {@code close} and stops every thread.
 *
 * <p>The runner holds its session: closing the session while the runner
 * runs defers freeing it until the runner stops.  {@link #close()} stops
 * the runner without reporting its error; {@link #stop()} reports it.
 * Threads: every method may be called from any thread.
 */
public final class QueueRunner extends NativeObject {
  /** What {@link #stop(Node)} asks of the release, and what it met. */
  private static final class StopRequest {
    volatile long cancel;
    volatile WeftException error;
  }

  private final Session session;
  private final StopRequest request;

  private QueueRunner(long handle, Session session, StopRequest request) {
    // Stops the runner (close, stop or the Cleaner) and lets go of the
    // session; it holds the session and the request, never the runner.
    super(handle, h -> {
      try {
        Native.queueRunnerStop(h, request.cancel);
      } catch (WeftException e) {
        request.error = e;
      } finally {
        session.release();
      }
    });
    this.session = session;
    this.request = request;
  }

  /**
   * Starts {@code numThreads} threads (1 to 64), each running target {@code
   * enqueue} in {@code session} until a run fails.  {@code close} (a
   * QueueClose node, or null) runs when the threads have ended, so that
   * consumers drain the queue and then see OUT_OF_RANGE.
   *
   * @param session the session the threads run in
   * @param enqueue the target each thread runs again and again
   * @param numThreads how many threads, 1 to 64
   * @param close a QueueClose node, or null
   * @return the running runner; {@link #stop(Node)} ends it
   */
  public static QueueRunner start(Session session, Node enqueue, int numThreads, Node close) {
    Graph graph = session.graph();
    long s = session.acquire();
    boolean started = false;
    graph.acquire();
    try {
      long e = enqueue.handleIn(graph);
      long c = close == null ? 0 : close.handleIn(graph);
      QueueRunner runner = new QueueRunner(Native.queueRunnerStart(s, e, numThreads, c),
          session, new StopRequest());
      started = true;
      return runner;
    } finally {
      graph.release();
      if (!started) {
        session.release();
      }
    }
  }

  /**
   * {@link #start(Session, Node, int, Node)} without a close node.
   *
   * @param session the session the threads run in
   * @param enqueue the target each thread runs again and again
   * @param numThreads how many threads, 1 to 64
   * @return the running runner
   */
  public static QueueRunner start(Session session, Node enqueue, int numThreads) {
    return start(session, enqueue, numThreads, null);
  }

  /**
   * The session the runner was started in.
   *
   * @return the session its threads run in
   */
  public Session session() {
    return session;
  }

  /**
   * The first error a runner thread met, or {@code null} while there is
   * none; the runner goes on running.
   *
   * @return the error, or {@code null}
   */
  public synchronized WeftException error() {
    long r = acquire();
    try {
      return Native.queueRunnerError(r);
    } finally {
      release();
    }
  }

  /**
   * Stops the threads and waits for them: their runs in flight are
   * cancelled (an enqueue waiting for room ends at once); {@code cancel} (a
   * QueueClose with cancel_pending_enqueues, or null) runs first.  The
   * runner is closed afterwards.
   *
   * @param cancel a QueueClose node to run first, or null
   * @throws WeftException the first error a runner thread met (the
   *     cancellation by the stop itself is not one), or the error of {@code
   *     cancel}
   * @throws IllegalStateException when the runner was already stopped
   */
  public synchronized void stop(Node cancel) {
    checkOpen();
    Graph graph = session.graph();
    graph.acquire();
    try {
      request.cancel = cancel == null ? 0 : cancel.handleIn(graph);
    } finally {
      graph.release();
    }
    // error() is synchronized too, so no call is in flight: close() stops
    // the runner now, on this thread.
    close();
    WeftException e = request.error;
    request.error = null;
    if (e != null) {
      throw e;
    }
  }

  /** {@link #stop(Node)} without a cancel node. */
  public void stop() {
    stop(null);
  }
}
