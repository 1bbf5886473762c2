package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Graph.cond and Graph.whileLoop with lambdas, and lambdas that fail. */
class ControlFlowTest {
  private static float runScalar(Graph g, Output x, float value, Output fetch) {
    try (Session s = new Session(g);
         Tensor v = Tensor.of(new float[] {value});
         Session.Result r = s.runner().feed(x, v).fetch(fetch).run()) {
      return r.get(0).toFloatArray()[0];
    }
  }

  @Test
  void condRunsTheTakenBranch() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.scalar());
      Output pred = g.apply("Greater", null, x, g.constant(null, 0.0f));
      Output y = g.cond(pred, () -> g.apply("Mul", null, x, g.constant(null, 2.0f)),
          () -> g.apply("Neg", null, x));
      assertEquals(6.0f, runScalar(g, x, 3.0f, y));
      assertEquals(4.0f, runScalar(g, x, -4.0f, y));
    }
  }

  /** s = 0 + 1 + 2 + 3 + 4 by a loop over (i, s). */
  @Test
  void whileLoopSums() {
    try (Graph g = new Graph()) {
      Output[] out = g.whileLoop(
          v -> g.apply("Less", null, v[0], g.constant(null, 5)),
          v -> new Output[] {g.apply("Add", null, v[0], g.constant(null, 1)),
                             g.apply("Add", null, v[1], v[0])},
          new Output[] {g.constant("i0", 0), g.constant("s0", 0)},
          WhileOptions.named("sum"));
      try (Session s = new Session(g);
           Session.Result r = s.runner().fetch(out[0]).fetch(out[1]).run()) {
        assertArrayEquals(new int[] {5}, r.get(0).toIntArray());
        assertArrayEquals(new int[] {10}, r.get(1).toIntArray());
      }
    }
  }

  @Test
  void maximumIterationsStopsAnEndlessLoop() {
    try (Graph g = new Graph()) {
      Output[] out = g.whileLoop(
          v -> g.apply("Less", null, v[0], g.constant(null, 1000)),
          v -> new Output[] {g.apply("Add", null, v[0], g.constant(null, 1))},
          new Output[] {g.constant("i0", 0)}, new WhileOptions(null, 1, 3, null));
      try (Session s = new Session(g);
           Session.Result r = s.runner().fetch(out[0]).run()) {
        assertArrayEquals(new int[] {3}, r.get(0).toIntArray());
      }
    }
  }

  @Test
  void aLambdasExceptionIsTheBuildersCause() {
    try (Graph g = new Graph()) {
      IllegalStateException boom = new IllegalStateException("boom");
      WeftException e = assertThrows(WeftException.class, () -> g.whileLoop(
          v -> g.apply("Less", null, v[0], g.constant(null, 3)),
          v -> {
            throw boom;
          },
          new Output[] {g.constant("i0", 0)}, null));
      assertSame(boom, e.getCause());
      assertTrue(e.getMessage().contains("boom"), e.getMessage());
    }
  }

  @Test
  void aWeftExceptionKeepsItsCode() {
    try (Graph g = new Graph()) {
      Output pred = g.constant("p", 1.0f);
      Output isPositive = g.apply("Greater", null, pred, g.constant(null, 0.0f));
      WeftException e = assertThrows(WeftException.class, () -> g.cond(isPositive,
          () -> {
            throw new WeftException(WeftException.Code.OUT_OF_RANGE, "index 9 of 3");
          },
          () -> pred));
      assertEquals(WeftException.Code.OUT_OF_RANGE, e.code());
      assertTrue(e.statusMessage().contains("index 9 of 3"), e.statusMessage());
    }
  }

  @Test
  void aBodyWithTheWrongNumberOfOutputsIsRefused() {
    try (Graph g = new Graph()) {
      WeftException e = assertThrows(WeftException.class, () -> g.whileLoop(
          v -> g.apply("Less", null, v[0], g.constant(null, 3)),
          v -> new Output[] {v[0]},
          new Output[] {g.constant("i0", 0), g.constant("j0", 0)}, null));
      assertInstanceOf(IllegalArgumentException.class, e.getCause());
      assertTrue(e.getMessage().contains("expected 2"), e.getMessage());
    }
  }
}
