package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Model files from Java: save a trained graph, load it, serve it by signature. */
class ModelTest {
  /** y = softmax(x w + b) trained a few steps; returns the bundle's path. */
  private static float[] trainAndSave(Path dir, float[] input) {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(-1, 3));
      Output labels = g.placeholder("labels", DataType.FLOAT32, Shape.of(-1, 2));
      Variable w = g.variable("w", Tensor.of(new float[] {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f},
          3, 2));
      Variable b = g.variable("b", Tensor.of(new float[] {0.05f, -0.05f}, 2));
      Output probs = g.apply("Softmax", "probs",
          g.apply("Add", "logits", g.apply("MatMul", "mm", x, w.value()), b.value()));
      Output diff = g.apply("Sub", "diff", probs, labels);
      Node train = g.minimize(g.apply("Mean", "loss", g.apply("Square", "sq", diff)),
          OptimizerOptions.adam(0.1), null);
      Node init = g.initializeAll("init");
      try (Session s = new Session(g);
           Tensor xs = Tensor.of(new float[] {1, 0, 2, 0, 1, -1}, 2, 3);
           Tensor ys = Tensor.of(new float[] {1, 0, 0, 1}, 2, 2)) {
        s.run(init);
        for (int i = 0; i < 5; ++i) {
          s.runner().feed(x, xs).feed(labels, ys).target(train).run().close();
        }
        try (Model m = Model.create(g, s,
                 new Signature(Signature.DEFAULT).input("x", x).output("probs", probs));
             Tensor in = Tensor.of(input, 1, 3);
             Model.Result r = m.run(Map.of("x", in))) {
          m.save(dir.toString());
          return r.get("probs").toFloatArray();
        }
      }
    }
  }

  @Test
  void aSavedModelPredictsTheSameAfterLoading(@TempDir Path tmp) {
    Path bundle = tmp.resolve("model");
    float[] input = {0.5f, -1f, 2f};
    float[] before = trainAndSave(bundle, input);
    assertTrue(Files.isRegularFile(bundle.resolve("graph.weft")));
    try (Model m = Model.load(bundle.toString());
         Tensor in = Tensor.of(input, 1, 3);
         Model.Result r = m.run(Map.of("x", in))) {
      assertEquals(List.of(Signature.DEFAULT), m.signatures());
      assertEquals(List.of("x"), m.inputKeys(null));
      assertEquals(List.of("probs"), m.outputKeys(null));
      assertArrayEquals(before, r.get("probs").toFloatArray());
      assertEquals(List.of("probs"), r.keys());
    }
  }

  @Test
  void errorsNameWhatIsWrong(@TempDir Path tmp) {
    WeftException missing = assertThrows(WeftException.class,
        () -> Model.load(tmp.resolve("nothing").toString()));
    assertEquals(WeftException.Code.NOT_FOUND, missing.code());
    WeftException notBundle = assertThrows(WeftException.class,
        () -> Model.load(tmp.toString()));
    assertEquals(WeftException.Code.FAILED_PRECONDITION, notBundle.code());
    assertTrue(notBundle.getMessage().contains("not a model bundle"), notBundle.getMessage());

    Path bundle = tmp.resolve("model");
    trainAndSave(bundle, new float[] {0, 0, 0});
    try (Model m = Model.load(bundle.toString());
         Tensor in = Tensor.of(new float[] {1, 2, 3}, 1, 3)) {
      WeftException key = assertThrows(WeftException.class,
          () -> m.run(Map.of("images", in)));
      assertEquals(WeftException.Code.NOT_FOUND, key.code());
      assertTrue(key.getMessage().contains("no input 'images'"), key.getMessage());
      WeftException sig = assertThrows(WeftException.class,
          () -> m.run("predict", Map.of("x", in)));
      assertTrue(sig.getMessage().contains("no signature 'predict'"), sig.getMessage());
      try (Tensor wrong = Tensor.of(new float[] {1, 2}, 1, 2)) {
        WeftException shape = assertThrows(WeftException.class,
            () -> m.run(Map.of("x", wrong)));
        assertEquals(WeftException.Code.INVALID_ARGUMENT, shape.code());
      }
    }
    Model closed = Model.load(bundle.toString());
    closed.close();
    assertThrows(IllegalStateException.class, closed::signatures);
  }
}
