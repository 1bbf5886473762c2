package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The MPI job from Java, outside mpirun: one rank, where data-parallel
 * training and the variable broadcast change nothing.  (The multi-rank
 * behaviour is tested from C under mpirun: tests/mpi/.)
 */
class ClusterTest {
  @Test
  void aProgramAloneIsRankZeroOfOne() {
    assertEquals(new Weft.ClusterWorld(0, 1), Weft.clusterWorld());
  }

  /** w after three gradient-descent steps on (w - 3)^2, from w = 1. */
  private static float[] train(boolean dataParallel, boolean broadcast) {
    try (Graph g = new Graph()) {
      Variable w = g.variable("w", Tensor.of(new float[] {1f, -1f}, 2));
      Output target = g.constant("target", Tensor.of(new float[] {3f, 3f}, 2));
      Output loss = g.apply("Sum", "loss",
          g.apply("Square", "sq", g.apply("Sub", "d", w.value(), target)));
      Node step = g.minimize(loss,
          OptimizerOptions.gradientDescent(0.1).withDataParallel(dataParallel), null);
      Node init = g.initializeAll("init");
      Node sync = broadcast ? g.broadcastVariables(0, null) : null;
      try (Session s = new Session(g)) {
        s.run(init);
        if (sync != null) s.run(sync);
        for (int i = 0; i < 3; ++i) s.run(step);
        try (Session.Result r = s.runner().fetch(w.value()).run()) {
          return r.get(0).toFloatArray();
        }
      }
    }
  }

  @Test
  void bucketsAloneTrainAsUsual() {
    try (Graph g = new Graph()) {
      Variable w = g.variable("w", Tensor.of(new float[] {1f, -1f}, 2));
      Variable v = g.variable("v", Tensor.of(new float[] {0.5f}, 1));
      Output loss = g.apply("Add", "loss",
          g.apply("Sum", "sw", g.apply("Square", "sq", w.value())),
          g.apply("Sum", "sv", g.apply("Square", "sqv", v.value())));
      OptimizerOptions o = OptimizerOptions.gradientDescent(0.25).withDataParallel(true)
          .withBucketBytes(1 << 20);
      assertEquals(1 << 20, o.bucketBytes());
      Node step = g.minimize(loss, o, null);
      int reductions = 0;
      for (Node n : g.nodes()) reductions += n.opType().equals("AllReduce") ? 1 : 0;
      assertEquals(1, reductions, "both gradients in one bucket");
      Node init = g.initializeAll("init");
      try (Session s = new Session(g)) {
        s.run(init);
        s.run(step);
        try (Session.Result r = s.runner().fetch(w.value()).fetch(v.value()).run()) {
          // w <- w - 0.25 * 2w = w / 2, alone (the mean over one rank).
          assertArrayEquals(new float[] {0.5f, -0.5f}, r.get(0).toFloatArray(), 0f);
          assertArrayEquals(new float[] {0.25f}, r.get(1).toFloatArray(), 0f);
        }
      }
    }
  }

  @Test
  void dataParallelAloneTrainsAsUsual() {
    float[] plain = train(false, false);
    // w <- w - 0.1 * 2 (w - 3), three times: 3 - (3 - w0) * 0.8^3.
    assertArrayEquals(new float[] {3f - 2f * 0.512f, 3f - 4f * 0.512f}, plain, 1e-5f);
    assertArrayEquals(plain, train(true, true), 0f);
  }

  /** A one-task cluster session, with a variable put on that task by a
   * device scope, trains as an ordinary session does. */
  @Test
  void aClusterSessionOfOneTaskTrainsAsUsual() {
    try (Graph g = new Graph()) {
      g.setDevice("/job:worker/task:0");
      Variable w = g.variable("w", Tensor.of(new float[] {1f, -1f}, 2));
      g.setDevice(null);
      assertEquals("/job:worker/task:0", w.value().node().device());
      Output target = g.constant("target", Tensor.of(new float[] {3f, 3f}, 2));
      assertEquals("", target.node().device());
      Output loss = g.apply("Sum", "loss",
          g.apply("Square", "sq", g.apply("Sub", "d", w.value(), target)));
      Node step = g.minimize(loss, OptimizerOptions.gradientDescent(0.1), null);
      Node init = g.initializeAll("init");
      try (Session s = new Session(g, new SessionOptions().cluster("worker"))) {
        s.run(init);
        for (int i = 0; i < 3; ++i) s.run(step);
        try (Session.Result r = s.runner().fetch(w.value()).run()) {
          assertArrayEquals(train(false, false), r.get(0).toFloatArray(), 0f);
        }
      }
    }
  }

  @Test
  void aClusterOfMoreTasksThanRanksIsRefused() {
    try (Graph g = new Graph()) {
      WeftException e = assertThrows(WeftException.class,
          () -> new Session(g, new SessionOptions().cluster("ps:1,worker:2")));
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("has 3 task(s) but this job has 1"),
          e.getMessage());
    }
  }

  @Test
  void aClusterWhoseEveryTaskServesIsRefused() {
    try (Graph g = new Graph()) {
      WeftException e = assertThrows(WeftException.class,
          () -> new Session(g, new SessionOptions().cluster("ps").servingJobs("ps")));
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("covers every task"), e.getMessage());
    }
  }

  @Test
  void anOrdinarySessionDoesNotServe() {
    try (Graph g = new Graph(); Session s = new Session(g)) {
      WeftException e = assertThrows(WeftException.class, s::serve);
      assertEquals(WeftException.Code.FAILED_PRECONDITION, e.code());
      assertTrue(e.getMessage().contains("not an asynchronous cluster session"),
          e.getMessage());
    }
  }

  @Test
  void abortingAloneIsRefused() {
    WeftException e = assertThrows(WeftException.class, () -> Weft.clusterAbort(3));
    assertEquals(WeftException.Code.FAILED_PRECONDITION, e.code());
    assertTrue(e.getMessage().contains("not started by an MPI launcher"), e.getMessage());
  }
}
