package org.weft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Runs with a deadline and cancelled runs, on a dequeue that waits on an empty queue. */
class QueueTest {
  private static Node dequeueOfEmptyQueue(Graph g) {
    Node q = g.opBuilder("FIFOQueue", "q")
        .attr("component_types", new long[] {DataType.FLOAT32.value()})
        .finish();
    return g.opBuilder("QueueDequeue", "dequeue").input(q.output(0)).finish();
  }

  @Test
  void deadlineEndsAWaitingRun() {
    try (Graph g = new Graph()) {
      Node dequeue = dequeueOfEmptyQueue(g);
      try (Session s = new Session(g)) {
        long t0 = System.nanoTime();
        WeftException e = assertThrows(WeftException.class,
            () -> s.runner().fetch(dequeue.output(0)).timeout(100).run());
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertEquals(WeftException.Code.DEADLINE_EXCEEDED, e.code(), e.getMessage());
        assertTrue(seconds >= 0.09 && seconds < 5, "took " + seconds + " s");
        assertThrows(IllegalArgumentException.class,
            () -> s.runner().fetch(dequeue.output(0)).timeout(-1).run());
      }
    }
  }

  @Test
  void cancelEndsARunOnAnotherThread() throws Exception {
    try (Graph g = new Graph()) {
      Node dequeue = dequeueOfEmptyQueue(g);
      try (Session s = new Session(g)) {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
          try (Session.Result r = s.runner().fetch(dequeue.output(0)).run()) {
            thrown.set(new AssertionError("the run returned"));
          } catch (Throwable e) {
            thrown.set(e);
          }
        });
        t.start();
        int reached = 0;
        for (int i = 0; i < 500 && reached == 0; ++i) {
          Thread.sleep(10);
          reached = s.cancel();
        }
        t.join(10000);
        assertEquals(1, reached);
        assertTrue(thrown.get() instanceof WeftException, String.valueOf(thrown.get()));
        assertEquals(WeftException.Code.CANCELLED, ((WeftException) thrown.get()).code());
        assertEquals(0, s.cancel(), "no run left to cancel");
      }
    }
  }
}
