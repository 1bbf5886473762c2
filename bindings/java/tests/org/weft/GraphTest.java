package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The generic op builder: inputs, lists, control inputs and every attribute type. */
class GraphTest {
  private static float[] run(Graph g, Output fetch) {
    try (Session s = new Session(g);
         Session.Result r = s.runner().fetch(fetch).run()) {
      return r.get(0).toFloatArray();
    }
  }

  @Test
  void inputListAndIntAttribute() {
    try (Graph g = new Graph();
         Tensor a = Tensor.of(new float[] {1, 2}, 1, 2);
         Tensor b = Tensor.of(new float[] {3, 4}, 1, 2)) {
      Output joined = g.opBuilder("Concat", "joined")
          .inputList(g.constant("a", a), g.constant("b", b)).attr("axis", 0).finishOutput();
      assertEquals(Shape.of(2, 2), joined.shape());
      assertArrayEquals(new float[] {1, 2, 3, 4}, run(g, joined));
      Node n = joined.node();
      assertEquals(2, n.inputs().size());
      assertEquals("a", n.inputs().get(0).node().name());
    }
  }

  @Test
  void intListBoolFloatDtypeAttributes() {
    try (Graph g = new Graph();
         Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
      Output x = g.constant("x", t);
      Output transposed = g.opBuilder("Transpose", "tr").input(x)
          .attr("perm", new long[] {1, 0}).finishOutput();
      assertEquals(Shape.of(3, 2), transposed.shape());
      Output summed = g.opBuilder("Sum", "rows").input(x).attr("axes", new long[] {1})
          .attr("keep_dims", true).finishOutput();
      assertEquals(Shape.of(2, 1), summed.shape());
      Output padded = g.opBuilder("Pad", "pad").input(x)
          .attr("paddings", new long[] {0, 0, 1, 0}).attr("constant_value", 9.0)
          .finishOutput();
      Output cast = g.opBuilder("Cast", "cast").input(x).attr("DstT", DataType.INT32)
          .finishOutput();
      assertEquals(DataType.INT32, cast.dtype());
      assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, run(g, transposed));
      assertArrayEquals(new float[] {6, 15}, run(g, summed));
      assertArrayEquals(new float[] {9, 1, 2, 3, 9, 4, 5, 6}, run(g, padded));
    }
  }

  @Test
  void shapeTensorAndStringAttributes() {
    try (Graph g = new Graph();
         Tensor value = Tensor.of(new float[] {7, 8}, 2)) {
      Output c = g.opBuilder("Const", "c").attr("value", value).finishOutput();
      Output p = g.opBuilder("Placeholder", "p").attr("dtype", DataType.FLOAT32)
          .attr("shape", Shape.of(-1, 3)).finishOutput();
      assertEquals(Shape.of(-1, 3), p.shape());
      Output q = g.opBuilder("Placeholder", "q").attr("dtype", DataType.FLOAT32)
          .attr("shape", Shape.unknown()).finishOutput();
      assertTrue(q.shape().hasUnknownRank());
      assertArrayEquals(new float[] {7, 8}, run(g, c));
      // A string attribute with a bad value, and a float list where none is
      // wanted, reach the runtime's checks.
      try (Tensor image = Tensor.zeros(DataType.FLOAT32, 1, 4, 4, 1);
           Tensor filter = Tensor.zeros(DataType.FLOAT32, 2, 2, 1, 1)) {
        Output conv = g.opBuilder("Conv2D", "conv").input(g.constant("img", image))
            .input(g.constant("f", filter)).attr("strides", new long[] {1, 1, 1, 1})
            .attr("padding", "SAME").finishOutput();
        assertEquals(Shape.of(1, 4, 4, 1), conv.shape());
        WeftException e = assertThrows(WeftException.class,
            () -> g.opBuilder("Conv2D", "bad").input(g.node("img").output(0))
                .input(g.node("f").output(0)).attr("strides", new long[] {1, 1, 1, 1})
                .attr("padding", "SIDEWAYS").finish());
        assertTrue(e.statusMessage().contains("SIDEWAYS") || e.statusMessage().contains("padding"),
            e.statusMessage());
        assertThrows(WeftException.class, () -> g.opBuilder("Neg", "fl")
            .input(g.node("c").output(0)).attr("weights", new double[] {0.5, 1.5}).finish());
      }
    }
  }

  @Test
  void controlInputsOrderEffects() {
    try (Graph g = new Graph()) {
      Variable v = g.variable("v", g.constant("v0", 1f));
      Output one = g.constant("one", 1f);
      Node bump = g.opBuilder("AssignAdd", "bump").input(v.value()).input(one).finish();
      // Fetching the marker runs the bump it waits for, though no data flows.
      Output marker = g.opBuilder("Identity", "marker").input(one).controlInput(bump)
          .finishOutput();
      assertEquals(1, marker.node().numControlInputs());
      try (Session s = new Session(g)) {
        s.run(v.initializer());
        s.runner().fetch(marker).run().close();
        s.runner().fetch(marker).run().close();
        try (Session.Result r = s.runner().fetch(v.value()).run()) {
          assertEquals(3f, r.get(0).floatValue());
        }
      }
    }
  }

  @Test
  void lookupAndListing() {
    try (Graph g = new Graph()) {
      Output x = g.constant("x", 1f);
      Output y = g.apply("Neg", null, x);
      assertTrue(y.node().name().startsWith("Neg"), y.node().name());
      assertEquals(x.node(), g.node("x"));
      assertNull(g.node("nope"));
      List<Node> nodes = g.nodes();
      assertEquals(2, g.nodeCount());
      assertEquals(List.of(x.node(), y.node()), nodes);
      assertEquals(1, y.node().numOutputs());
      assertEquals(DataType.FLOAT32, y.dtype());
      assertEquals(Shape.scalar(), y.shape());
      WeftException e = assertThrows(WeftException.class, () -> g.constant("x", 2f));
      assertEquals(WeftException.Code.ALREADY_EXISTS, e.code());
    }
  }

  @Test
  void runnerByName() {
    try (Graph g = new Graph()) {
      g.placeholder("in", DataType.FLOAT32, Shape.of(1));
      g.apply("Neg", "out", g.node("in").output(0));
      try (Session s = new Session(g);
           Tensor one = Tensor.of(new float[] {1}, 1);
           Session.Result r = s.runner().feed("in", one).fetch("out").run()) {
        assertEquals(-1f, r.get(0).floatValue());
        assertEquals(-1f, r.get(g.node("out").output(0)).floatValue());
      }
      assertThrows(IllegalArgumentException.class, () -> {
        try (Session s = new Session(g)) {
          s.runner().fetch("missing");
        }
      });
    }
  }
}
