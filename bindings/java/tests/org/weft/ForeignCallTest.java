package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** ForeignCall from Java: a C routine (libm's erf) in a graph, no plugin or JNI code of its own. */
class ForeignCallTest {
  @Test
  void libmErfRunsInAGraph() {
    double[] in = {-1.5, -0.25, 0, 0.5, 2};
    try (Graph g = new Graph();
         Tensor x = Tensor.of(in, 5)) {
      Output erf = g.opBuilder("ForeignCall", "erf")
          .input(g.constant("x", x))
          .attr("library", "libm.so.6")
          .attr("symbol", "erf")
          .attr("signature", "float64(float64)")
          .finishOutput();
      assertEquals(DataType.FLOAT64, erf.dtype());
      try (Session s = new Session(g);
           Session.Result r = s.runner().fetch(erf).run()) {
        double[] got = r.get(0).toDoubleArray();
        // libm's own erf, computed here without Weft: erf(x) for these
        // arguments, to 1e-15.
        double[] want = {-0.9661051464753108, -0.2763263901682369, 0,
                         0.5204998778130465, 0.9953222650189527};
        assertArrayEquals(want, got, 1e-15);
      }
    }
  }

  @Test
  void aMissingSymbolIsRefusedWhenTheNodeIsBuilt() {
    try (Graph g = new Graph();
         Tensor x = Tensor.of(new double[] {1}, 1)) {
      WeftException e = assertThrows(WeftException.class,
          () -> g.opBuilder("ForeignCall", "nothing")
              .input(g.constant("x", x))
              .attr("library", "libm.so.6")
              .attr("symbol", "no_such_function_anywhere")
              .attr("signature", "float64(float64)")
              .finishOutput());
      assertEquals(WeftException.Code.NOT_FOUND, e.code());
      assertTrue(e.getMessage().contains("no_such_function_anywhere"), e.getMessage());
    }
  }
}
