package org.weft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** run() on one session from several threads at once. */
class ConcurrencyTest {
  @Test
  void concurrentRunsOnOneSession() throws Exception {
    final int threads = 8;
    final int runs = 400;
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(-1));
      Output w = g.variable("w", g.constant("w0", 3f)).value();
      Output y = g.apply("Mul", "y", x, w);
      Output total = g.opBuilder("Sum", "total").input(y).finishOutput();
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try (Session s = new Session(g)) {
        s.run(g.initializeAll(null));
        List<Future<Integer>> done = new ArrayList<>();
        for (int t = 0; t < threads; ++t) {
          final int me = t;
          done.add(pool.submit(() -> {
            int checked = 0;
            for (int i = 0; i < runs; ++i) {
              int n = 1 + (me * runs + i) % 50;
              float[] values = new float[n];
              java.util.Arrays.fill(values, me + 1);
              try (Tensor feed = Tensor.of(values, n);
                   Session.Result r = s.runner().feed(x, feed).fetch(total).fetch(y).run()) {
                assertEquals(3f * n * (me + 1), r.get(0).floatValue());
                assertEquals(n, r.get(1).shape()[0]);
                ++checked;
              }
            }
            return checked;
          }));
        }
        int checked = 0;
        for (Future<Integer> f : done) {
          checked += f.get();
        }
        assertEquals(threads * runs, checked);
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void concurrentGraphBuildingAndRuns() throws Exception {
    try (Graph g = new Graph()) {
      Output one = g.constant("one", 1f);
      try (Session s = new Session(g)) {
        Thread[] builders = new Thread[4];
        float[][] results = new float[builders.length][];
        for (int t = 0; t < builders.length; ++t) {
          final int me = t;
          builders[t] = new Thread(() -> {
            Output sum = one;
            for (int i = 0; i < 50; ++i) {
              sum = g.apply("Add", null, sum, one);
            }
            try (Session.Result r = s.runner().fetch(sum).run()) {
              results[me] = r.get(0).toFloatArray();
            }
          });
          builders[t].start();
        }
        for (Thread t : builders) {
          t.join();
        }
        for (float[] r : results) {
          assertEquals(51f, r[0]);
        }
      }
    }
  }
}
