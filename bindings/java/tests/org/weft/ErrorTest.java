package org.weft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** C statuses become WeftExceptions with the code and the message. */
class ErrorTest {
  @Test
  void unknownOp() {
    try (Graph g = new Graph()) {
      Output x = g.constant("x", 1f);
      WeftException e = assertThrows(WeftException.class,
          () -> g.opBuilder("NoSuchOp", "n").input(x).finish());
      assertEquals(WeftException.Code.NOT_FOUND, e.code());
      assertTrue(e.statusMessage().contains("NoSuchOp"), e.getMessage());
      assertTrue(e.getMessage().startsWith("NOT_FOUND: "), e.getMessage());
      assertEquals(null, g.node("n"), "a failed node is not added");
    }
  }

  @Test
  void wrongShape() {
    try (Graph g = new Graph();
         Tensor a = Tensor.of(new float[6], 2, 3)) {
      Output c = g.constant("a", a);
      WeftException e = assertThrows(WeftException.class, () -> g.apply("MatMul", "mm", c, c));
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.statusMessage().contains("mm"), e.statusMessage());
    }
  }

  @Test
  void wrongFeedShapeAndDtype() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2));
      Output y = g.apply("Neg", "y", x);
      try (Session s = new Session(g);
           Tensor three = Tensor.of(new float[3], 3);
           Tensor ints = Tensor.of(new int[2], 2)) {
        WeftException e = assertThrows(WeftException.class,
            () -> s.runner().feed(x, three).fetch(y).run());
        assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
        e = assertThrows(WeftException.class, () -> s.runner().feed(x, ints).fetch(y).run());
        assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      }
    }
  }

  @Test
  void missingFeedNamesThePlaceholder() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("images", DataType.FLOAT32, Shape.of(-1, 4));
      Output y = g.apply("Relu", "y", x);
      try (Session s = new Session(g)) {
        WeftException e = assertThrows(WeftException.class, () -> s.runner().fetch(y).run());
        assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
        assertTrue(e.statusMessage().contains("images"), e.statusMessage());
      }
    }
  }

  @Test
  void uninitializedVariable() {
    try (Graph g = new Graph()) {
      Variable v = g.variable("v", g.constant("init", 1f));
      try (Session s = new Session(g)) {
        WeftException e = assertThrows(WeftException.class,
            () -> s.runner().fetch(v.value()).run());
        assertEquals(WeftException.Code.FAILED_PRECONDITION, e.code());
      }
    }
  }

  @Test
  void missingCheckpointAndUnknownDevice(@TempDir Path dir) {
    try (Graph g = new Graph()) {
      g.variable("v", g.constant("init", 1f));
      try (Session s = new Session(g)) {
        WeftException e = assertThrows(WeftException.class,
            () -> s.restoreCheckpoint(dir.resolve("absent.ckpt").toString()));
        assertTrue(e.statusMessage().contains("absent.ckpt"), e.statusMessage());
      }
      WeftException e = assertThrows(WeftException.class,
          () -> new Session(g, new SessionOptions().devices("/device:NOSUCH:0")).close());
      assertEquals(WeftException.Code.NOT_FOUND, e.code());
    }
  }

  @Test
  void codesMatchTheCNumbering() {
    assertEquals(3, WeftException.Code.INVALID_ARGUMENT.value());
    assertEquals(16, WeftException.Code.UNAUTHENTICATED.value());
    assertEquals(WeftException.Code.UNKNOWN, WeftException.Code.fromValue(99));
  }
}
