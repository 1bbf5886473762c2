package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Closing is idempotent and use after close is an exception, never a crash. */
class ResourceTest {
  @Test
  void tensorUseAfterClose() {
    Tensor t = Tensor.of(new float[] {1, 2}, 2);
    t.close();
    t.close();
    assertTrue(t.isClosed());
    assertThrows(IllegalStateException.class, t::toFloatArray);
    assertThrows(IllegalStateException.class, t::dtype);
    assertThrows(IllegalStateException.class, t::buffer);
    try (Graph g = new Graph()) {
      assertThrows(IllegalStateException.class, () -> g.constant("c", t));
    }
    assertEquals("Tensor(closed)", t.toString());
  }

  @Test
  void graphAndNodesUseAfterClose() {
    Graph g = new Graph();
    Output x = g.constant("x", 2f);
    OpBuilder pending = g.opBuilder("Neg", "n");
    g.close();
    g.close();
    assertThrows(IllegalStateException.class, () -> g.constant("y", 1f));
    assertThrows(IllegalStateException.class, () -> x.node().name());
    assertThrows(IllegalStateException.class, x::dtype);
    assertThrows(IllegalStateException.class, () -> pending.input(x));
    assertThrows(IllegalStateException.class, pending::finish);
    pending.close();
    assertThrows(IllegalStateException.class, () -> new Session(g));
  }

  @Test
  void opBuilderIsUsedUpByFinish() {
    try (Graph g = new Graph()) {
      Output x = g.constant("x", 2f);
      OpBuilder b = g.opBuilder("Neg", "n").input(x);
      Node n = b.finish();
      assertEquals("Neg", n.opType());
      assertThrows(IllegalStateException.class, b::finish);
      assertThrows(IllegalStateException.class, () -> b.attr("a", 1));
      b.close();
      // Abandoned: closed before finish; nothing is added.
      try (OpBuilder abandoned = g.opBuilder("Neg", "m")) {
        abandoned.input(x);
      }
      assertEquals(null, g.node("m"));
    }
  }

  @Test
  void sessionResultAndMetadataUseAfterClose() {
    try (Graph g = new Graph()) {
      Output x = g.constant("x", 3f);
      Output y = g.apply("Neg", "y", x);
      Session s = new Session(g);
      RunMetadata m = new RunMetadata();
      Session.Result r = s.runner().fetch(y).metadata(m).run();
      Tensor value = r.get(0);
      assertEquals(-3f, value.floatValue());
      r.close();
      r.close();
      assertThrows(IllegalStateException.class, value::floatValue);
      assertThrows(IllegalStateException.class, () -> r.get(0));
      m.close();
      m.close();
      assertThrows(IllegalStateException.class, m::placements);
      assertThrows(IllegalStateException.class, () -> s.runner().fetch(y).metadata(m).run());
      s.close();
      s.close();
      assertThrows(IllegalStateException.class, () -> s.runner().fetch(y).run());
      assertThrows(IllegalStateException.class, () -> s.saveCheckpoint("/tmp/x"));
    }
  }

  @Test
  void takenTensorsOutliveTheResult() {
    try (Graph g = new Graph()) {
      Output y = g.apply("Neg", "y", g.constant("x", 3f));
      try (Session s = new Session(g)) {
        Tensor kept;
        try (Session.Result r = s.runner().fetch(y).fetch(y).run()) {
          kept = r.take(0);
          assertThrows(IllegalStateException.class, () -> r.get(0));
          assertEquals(-3f, r.get(1).floatValue());
        }
        try (kept) {
          assertArrayEquals(new float[] {-3f}, kept.toFloatArray());
        }
      }
    }
  }

  @Test
  void nodesOfAnotherGraphAreRefused() {
    try (Graph a = new Graph(); Graph b = new Graph()) {
      Output x = a.constant("x", 1f);
      assertThrows(IllegalArgumentException.class, () -> b.apply("Neg", "n", x));
      try (Session s = new Session(b)) {
        assertThrows(IllegalArgumentException.class, () -> s.runner().fetch(x).run());
      }
    }
  }

  /** Closing a session while runs are in flight waits for them to end. */
  @Test
  void closeDuringRunsNeverCrashes() throws Exception {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(256, 256));
      Output y = g.apply("MatMul", "y", x, x);
      Session s = new Session(g);
      Thread[] threads = new Thread[4];
      int[] refused = new int[threads.length];
      for (int i = 0; i < threads.length; ++i) {
        final int me = i;
        threads[i] = new Thread(() -> {
          try (Tensor feed = Tensor.zeros(DataType.FLOAT32, 256, 256)) {
            for (;;) {
              try (Session.Result r = s.runner().feed(x, feed).fetch(y).run()) {
                r.get(0);
              } catch (IllegalStateException closed) {
                refused[me]++;
                return;
              }
            }
          }
        });
        threads[i].start();
      }
      Thread.sleep(100);
      s.close();
      for (Thread t : threads) {
        t.join(30_000);
      }
      for (int r : refused) {
        assertEquals(1, r);
      }
    }
  }
}
