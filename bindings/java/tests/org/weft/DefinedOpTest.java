package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Ops defined outside the runtime, from Java: an op whose kernel and
 * gradient are Java code, and the SDK's op template plugin (Acme>Gelu, a
 * C plugin of ops only); both checked against values computed here and
 * trained through {@link Graph#minimize}.
 */
class DefinedOpTest {
  /** y = x^3, kernel and gradient (3 x^2 dy) in Java; defined once. */
  static {
    OpDefinition.named("JavaTest>Cube")
        .summary("x cubed, computed in Java")
        .input("x: T")
        .outputLike("y: T", 0)
        .attr("T: {float32, float64}")
        .attr("scale: float = 1.0")
        .kernel(call -> {
          Tensor x = call.input(0);
          double scale = call.attrFloat("scale");
          if (x.dtype() == DataType.FLOAT64) {
            double[] v = x.toDoubleArray();
            for (int i = 0; i < v.length; ++i) {
              v[i] = scale * v[i] * v[i] * v[i];
            }
            return new Tensor[] {Tensor.of(v, x.shape())};
          }
          float[] v = x.toFloatArray();
          for (int i = 0; i < v.length; ++i) {
            v[i] = (float) (scale * v[i] * v[i] * v[i]);
          }
          return new Tensor[] {Tensor.of(v, x.shape())};
        })
        .gradient((graph, node, dy) -> {
          Output x = node.inputs().get(0);
          Output x2 = graph.apply("Square", null, x);
          Output k = x.dtype() == DataType.FLOAT64
              ? graph.constant(null, Tensor.scalar(3.0))
              : graph.constant(null, 3f);
          return new Output[] {graph.apply("Mul", null, graph.apply("Mul", null, x2, k), dy[0])};
        })
        .register();
  }

  @Test
  void javaKernelRunsAndTheOpSaysItCameFromTheProgram() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2, 2));
      Output y = g.opBuilder("JavaTest>Cube", "cube").input(x).attr("scale", 2.0)
          .finishOutput();
      assertArrayEquals(new long[] {2, 2}, y.shape().dims(), "the shape rule ran");
      try (Session s = new Session(g);
           Tensor feed = Tensor.of(new float[] {1, -2, 0.5f, 3}, 2, 2);
           Session.Result r = s.runner().feed(x, feed).fetch(y).run()) {
        assertArrayEquals(new float[] {2, -16, 0.25f, 54}, r.get(0).toFloatArray());
      }
    }
    OpInfo info = Weft.ops().stream().filter(o -> o.name().equals("JavaTest>Cube"))
        .findFirst().orElseThrow();
    assertEquals("program", info.origin());
    assertEquals("x: T", info.inputs());
    assertEquals(1, Weft.gradientStatus("JavaTest>Cube"));
  }

  /** Trains w so that cube(w * x) meets t: one step checked by hand, then to a small loss. */
  private static void trainThrough(String op, java.util.function.DoubleUnaryOperator f,
      java.util.function.DoubleUnaryOperator df, float[] wTrue) {
    float[] x = {1, -1, 0.5f, 1.5f};
    float[] t = new float[4];
    for (int i = 0; i < 4; ++i) {
      t[i] = (float) f.applyAsDouble(wTrue[i] * x[i]);
    }
    double lr = 0.05;
    try (Graph g = new Graph();
         Tensor xt = Tensor.of(x, 4);
         Tensor tt = Tensor.of(t, 4);
         Tensor w0 = Tensor.of(new float[] {0.5f, 0.5f, 0.5f, 0.5f}, 4)) {
      Variable w = g.variable("w", w0);
      Output wx = g.apply("Mul", "wx", w.value(), g.constant("x", xt));
      Output y = g.apply(op, "act", wx);
      Output d = g.apply("Sub", "d", y, g.constant("t", tt));
      Output loss = g.apply("Sum", "loss", g.apply("Square", "sq", d));
      Node train = g.minimize(loss, OptimizerOptions.gradientDescent(lr), "train");
      Node init = g.initializeAll("init");
      try (Session s = new Session(g)) {
        s.run(init);
        s.run(train);
        double[] expected = new double[4];
        for (int i = 0; i < 4; ++i) {
          double z = 0.5 * x[i];
          expected[i] = 0.5 - lr * 2 * (f.applyAsDouble(z) - t[i]) * df.applyAsDouble(z) * x[i];
        }
        try (Session.Result r = s.runner().fetch(w.value()).run()) {
          float[] got = r.get(0).toFloatArray();
          for (int i = 0; i < 4; ++i) {
            assertEquals(expected[i], got[i], 1e-5, op + ": w[" + i + "] after one step");
          }
        }
        for (int step = 0; step < 3000; ++step) {
          s.run(train);
        }
        try (Session.Result r = s.runner().fetch(loss).run()) {
          float l = r.get(0).floatValue();
          assertTrue(l < 1e-4, op + ": loss " + l + " after 3001 steps");
        }
      }
    }
  }

  @Test
  void javaOpTrainsThroughMinimize() {
    trainThrough("JavaTest>Cube", z -> z * z * z, z -> 3 * z * z,
        new float[] {0.8f, 0.3f, 0.9f, 0.6f});
  }

  /** erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7). */
  private static double erf(double x) {
    double s = Math.signum(x);
    double a = Math.abs(x);
    double t = 1 / (1 + 0.3275911 * a);
    double p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
        + t * (-1.453152027 + t * 1.061405429))));
    return s * (1 - p * Math.exp(-a * a));
  }

  private static double gelu(double z) {
    return z * 0.5 * (1 + erf(z / Math.sqrt(2)));
  }

  private static double geluGrad(double z) {
    return 0.5 * (1 + erf(z / Math.sqrt(2))) + z * Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
  }

  private static void loadAcme() {
    String path = System.getProperty("weft.test.acmePlugin");
    assertTrue(path != null && !path.isEmpty(), "-Dweft.test.acmePlugin is not set");
    Weft.loadPlugin(path);
  }

  @Test
  void pluginOpTrainsThroughMinimize() {
    loadAcme();
    OpInfo info = Weft.ops().stream().filter(o -> o.name().equals("Acme>Gelu"))
        .findFirst().orElseThrow();
    assertEquals("plugin weft-acme-gelu", info.origin());
    trainThrough("Acme>Gelu", DefinedOpTest::gelu, DefinedOpTest::geluGrad,
        new float[] {0.8f, 0.3f, -0.4f, 0.6f});
  }

  @Test
  void aFailingJavaKernelFailsTheRunWithItsMessage() {
    OpDefinition.named("JavaTest>Fails")
        .input("x: float32")
        .output("y: float32")
        .kernel(call -> {
          throw new IllegalArgumentException("planted kernel failure");
        })
        .register();
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2));
      Output y = g.apply("JavaTest>Fails", "fails", x);
      try (Session s = new Session(g); Tensor feed = Tensor.of(new float[] {1, 2}, 2)) {
        WeftException e = assertThrows(WeftException.class,
            () -> s.runner().feed(x, feed).fetch(y).run().close());
        assertTrue(e.getMessage().contains("planted kernel failure"), e.getMessage());
        assertTrue(e.getMessage().contains("fails"), e.getMessage());
      }
    }
  }

  @Test
  void badDefinitionsAreRefused() {
    WeftException e = assertThrows(WeftException.class,
        () -> OpDefinition.named("NoNamespace").input("x: float32").output("y: float32")
            .register());
    assertTrue(e.getMessage().contains("is not NAMESPACE>NAME"), e.getMessage());
    e = assertThrows(WeftException.class,
        () -> OpDefinition.named("JavaTest>Bad").input("x: U").output("y: float32")
            .register());
    assertTrue(e.getMessage().contains("'U' is neither a dtype name nor a dtype attribute"),
        e.getMessage());
    e = assertThrows(WeftException.class,
        () -> OpDefinition.named("JavaTest>Cube").input("x: float32").output("y: float32")
            .register());
    assertTrue(e.getMessage().contains("already defined by program"), e.getMessage());
  }
}
