package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Gradients, optimizers, variables and checkpoints from Java. */
class TrainTest {
  @Test
  void gradientOfASquare() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(3));
      Output y = g.apply("Square", "y", x);
      Output unrelated = g.placeholder("z", DataType.FLOAT32, Shape.of(3));
      Output[] grads = g.gradients(y, x, unrelated);
      assertNull(grads[1], "no y depends on z");
      try (Session s = new Session(g);
           Tensor feed = Tensor.of(new float[] {1, -2, 3}, 3);
           Session.Result r = s.runner().feed(x, feed).fetch(grads[0]).run()) {
        assertArrayEquals(new float[] {2, -4, 6}, r.get(0).toFloatArray());
      }
    }
  }

  @Test
  void gradientsWithIncomingGradients() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2));
      Output y = g.apply("Neg", "y", x);
      Output seed = g.constant("seed", Tensor.of(new float[] {10, 20}, 2));
      Output[] grads = g.gradients(new Output[] {y}, new Output[] {x}, new Output[] {seed});
      try (Session s = new Session(g);
           Tensor feed = Tensor.of(new float[] {1, 1}, 2);
           Session.Result r = s.runner().feed(x, feed).fetch(grads[0]).run()) {
        assertArrayEquals(new float[] {-10, -20}, r.get(0).toFloatArray());
      }
      assertEquals(1, Weft.gradientStatus("Neg"));
      assertEquals(0, Weft.gradientStatus("Equal"));
    }
  }

  /** Fits w in y = w x by least squares with each optimizer. */
  @Test
  void minimizeWithEveryOptimizer() {
    for (OptimizerOptions options : new OptimizerOptions[] {
        OptimizerOptions.gradientDescent(0.05),
        OptimizerOptions.momentum(0.02, 0.9).withNesterov(true),
        OptimizerOptions.adam(0.1)}) {
      try (Graph g = new Graph();
           Tensor xs = Tensor.of(new float[] {1, 2, 3, 4}, 4);
           Tensor ys = Tensor.of(new float[] {3, 6, 9, 12}, 4)) {
        Output x = g.constant("x", xs);
        Output target = g.constant("target", ys);
        Variable w = g.variable("w", g.constant("w0", 0f));
        Output diff = g.apply("Sub", "diff", g.apply("Mul", "pred", x, w.value()), target);
        Output loss = g.apply("Mean", "loss", g.apply("Square", "sq", diff));
        Node train = g.minimize(loss, options, null);
        assertEquals("train", train.name());
        assertEquals(List.of(w.node()), g.trainableVariables());
        Node init = g.initializeAll("init");
        try (Session s = new Session(g)) {
          s.run(init);
          for (int i = 0; i < 300; ++i) {
            s.run(train);
          }
          try (Session.Result r = s.runner().fetch(w.value()).run()) {
            assertEquals(3f, r.get(0).floatValue(), 0.05f, options.optimizer().toString());
          }
        }
      }
    }
  }

  @Test
  void optimizerDefaultsComeFromTheLibrary() {
    OptimizerOptions adam = OptimizerOptions.defaults(Optimizer.ADAM);
    assertEquals(0.01, adam.learningRate());
    assertEquals(0.9, adam.beta1());
    assertEquals(0.999, adam.beta2());
    assertEquals(0.9, OptimizerOptions.defaults(Optimizer.MOMENTUM).momentum());
  }

  @Test
  void checkpointRoundTrip(@TempDir Path dir) {
    String path = dir.resolve("model.ckpt").toString();
    try (Graph g = new Graph();
         Tensor initial = Tensor.of(new float[] {1, 2, 3}, 3)) {
      Variable v = g.variable("v", initial);
      Variable step = g.variable("step", g.constant("zero", 0));
      g.setTrainable(step.node(), false);
      assertEquals(List.of(v.node()), g.trainableVariables());
      Output doubled = g.apply("Add", "doubled", v.value(), v.value());
      Node grow = g.opBuilder("Assign", "grow").input(v.value()).input(doubled).finish();
      Node init = g.initializeAll(null);
      try (Session s = new Session(g)) {
        s.run(init);
        s.run(grow);
        s.saveCheckpoint(path);
        assertTrue(Files.exists(Path.of(path)));
        s.run(grow);
        try (Session.Result r = s.runner().fetch(v.value()).run()) {
          assertArrayEquals(new float[] {4, 8, 12}, r.get(0).toFloatArray());
        }
        s.restoreCheckpoint(path, v.node());
        try (Session.Result r = s.runner().fetch(v.value()).run()) {
          assertArrayEquals(new float[] {2, 4, 6}, r.get(0).toFloatArray());
        }
      }
      // A fresh session starts from the file, every variable at once.
      try (Session s = new Session(g)) {
        s.restoreCheckpoint(path);
        try (Session.Result r = s.runner().fetch(v.value()).fetch(step.value()).run()) {
          assertArrayEquals(new float[] {2, 4, 6}, r.get(0).toFloatArray());
          assertEquals(0, r.get(1).intValue());
        }
      }
    }
  }
}
