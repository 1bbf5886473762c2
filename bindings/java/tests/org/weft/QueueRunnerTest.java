package org.weft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Queue runners: threads that run an enqueue op, feeding a FIFOQueue that
 * runs on the test's thread dequeue from; stopping them; their errors.
 */
class QueueRunnerTest {
  private static final SessionOptions CPU = new SessionOptions().devices("CPU").interOpThreads(2);

  /** A FIFOQueue "q" of int64 scalars (component_types and shapes as the C API codes them). */
  private static Output queue(Graph g, long capacity) {
    return g.opBuilder("FIFOQueue", "q")
        .attr("component_types", new long[] {DataType.INT64.value()})
        .attr("shapes", new long[] {0})   // one component: rank 0
        .attr("capacity", capacity)
        .finishOutput();
  }

  private static Node queueOp(Graph g, String op, String name, Output queue, Output... inputs) {
    OpBuilder b = g.opBuilder(op, name).input(queue);
    for (Output in : inputs) {
      b.input(in);
    }
    return b.finish();
  }

  private static int size(Session s, Node size) {
    try (Session.Result r = s.runner().fetch(size.output(0)).run()) {
      return r.get(0).intValue();
    }
  }

  @Test
  void runnerFeedsAQueueFromADatasetThenClosesIt() throws Exception {
    try (Graph g = new Graph();
         Dataset range = Dataset.range(0, 10)) {
      Output q = queue(g, 2);
      DatasetIterator source = range.iterator(g, "source");
      Node enqueue = queueOp(g, "QueueEnqueue", "enqueue", q, source.component(0));
      Node dequeue = queueOp(g, "QueueDequeue", "dequeue", q);
      Node close = queueOp(g, "QueueClose", "close", q);
      try (Session s = new Session(g, CPU);
           QueueRunner runner = QueueRunner.start(s, enqueue, 2, close)) {
        assertTrue(runner.session() == s);
        List<Long> got = new ArrayList<>();
        WeftException end = null;
        while (end == null) {
          assertTrue(got.size() <= 10, "more elements than the source has");
          try (Session.Result r = s.runner().fetch(dequeue.output(0)).timeout(10_000).run()) {
            got.add(r.get(0).longValue());
          } catch (WeftException e) {
            end = e;
          }
        }
        assertEquals(WeftException.Code.OUT_OF_RANGE, end.code(), end.getMessage());
        assertTrue(end.statusMessage().contains("'q'"), end.statusMessage());
        Collections.sort(got);
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L), got);
        assertNull(runner.error(), "the exhausted source is no error");
        runner.stop();
        assertTrue(runner.isClosed());
        assertThrows(IllegalStateException.class, runner::stop);
        assertThrows(IllegalStateException.class, runner::error);
      }
    }
  }

  @Test
  void stopEndsAnEnqueueWaitingForRoom() throws Exception {
    try (Graph g = new Graph()) {
      Output q = queue(g, 3);
      try (Tensor one = Tensor.scalar(1L)) {
        Node fill = queueOp(g, "QueueEnqueue", "fill", q, g.constant("one", one));
        Node size = queueOp(g, "QueueSize", "size", q);
        Node closeCancel = g.opBuilder("QueueClose", "close_cancel").input(q)
            .attr("cancel_pending_enqueues", true).finish();
        Node dequeue = queueOp(g, "QueueDequeue", "dequeue", q);
        try (Session s = new Session(g, CPU)) {
          QueueRunner runner = QueueRunner.start(s, fill, 3);
          for (int i = 0; i < 400 && size(s, size) < 3; ++i) {
            Thread.sleep(5);
          }
          assertEquals(3, size(s, size), "the runner filled the queue");
          long t0 = System.nanoTime();
          runner.stop(closeCancel);
          double seconds = (System.nanoTime() - t0) / 1e9;
          assertTrue(seconds < 5, "stop took " + seconds + " s");
          assertTrue(runner.isClosed());
          runner.close();   // harmless after stop
          // The queue was closed: drained, then OUT_OF_RANGE.
          for (int i = 0; i < 3; ++i) {
            try (Session.Result r = s.runner().fetch(dequeue.output(0)).run()) {
              assertEquals(1L, r.get(0).longValue());
            }
          }
          WeftException e = assertThrows(WeftException.class,
              () -> s.runner().fetch(dequeue.output(0)).run());
          assertEquals(WeftException.Code.OUT_OF_RANGE, e.code());
        }
      }
    }
  }

  @Test
  void closeStopsARunnerQuietlyAndKeepsItsSessionUntilThen() throws Exception {
    try (Graph g = new Graph()) {
      Output q = queue(g, 1);
      try (Tensor one = Tensor.scalar(1L)) {
        Node fill = queueOp(g, "QueueEnqueue", "fill", q, g.constant("one", one));
        Session s = new Session(g, CPU);
        QueueRunner runner = QueueRunner.start(s, fill, 2);
        s.close();   // deferred: the runner's threads still run in it
        assertThrows(IllegalStateException.class, () -> s.runner().fetch(q).run());
        Thread.sleep(20);
        assertNull(runner.error());
        runner.close();   // cancels the enqueues waiting for room and frees both
        assertTrue(runner.isClosed());
        runner.close();
      }
    }
  }

  @Test
  void aFailingEnqueueIsTheRunnersError() throws Exception {
    try (Graph g = new Graph()) {
      Output q = queue(g, 3);
      // A target that fails every run: it needs placeholder zp, which the
      // runner cannot feed.
      Output zp = g.placeholder("zp", DataType.INT64, Shape.scalar());
      try (Tensor ten = Tensor.scalar(10L)) {
        Output quotient = g.apply("Div", "quotient", g.constant("ten", ten), zp);
        Node bad = g.opBuilder("NoOp", "bad").controlInput(quotient.node()).finish();
        Node close = queueOp(g, "QueueClose", "close", q);
        Node dequeue = queueOp(g, "QueueDequeue", "dequeue", q);
        try (Session s = new Session(g, CPU)) {
          WeftException e = assertThrows(WeftException.class,
              () -> QueueRunner.start(s, bad, 0, close));
          assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
          assertTrue(e.statusMessage().contains("num_threads"), e.statusMessage());
          try (Graph other = new Graph()) {
            Node foreign = other.opBuilder("NoOp", "elsewhere").finish();
            assertThrows(IllegalArgumentException.class, () -> QueueRunner.start(s, foreign, 1));
          }

          QueueRunner runner = QueueRunner.start(s, bad, 1, close);
          WeftException error = null;
          for (int i = 0; i < 400 && error == null; ++i) {
            Thread.sleep(5);
            error = runner.error();
          }
          assertNotNull(error, "the runner reported no error");
          assertEquals(WeftException.Code.INVALID_ARGUMENT, error.code(), error.getMessage());
          assertNotNull(runner.error(), "the error stays while the runner lives");
          WeftException stopped = assertThrows(WeftException.class, runner::stop);
          assertEquals(WeftException.Code.INVALID_ARGUMENT, stopped.code());
          assertTrue(stopped.statusMessage().contains("zp"), stopped.statusMessage());
          assertTrue(runner.isClosed());
          // The failure ran close: a dequeue ends at once.
          e = assertThrows(WeftException.class,
              () -> s.runner().fetch(dequeue.output(0)).timeout(10_000).run());
          assertEquals(WeftException.Code.OUT_OF_RANGE, e.code());
          assertTrue(e.statusMessage().contains("closed"), e.statusMessage());
        }
      }
    }
  }
}
