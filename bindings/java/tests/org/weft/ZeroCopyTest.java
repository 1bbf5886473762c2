package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;

/** Tensors over direct buffers share the buffer's memory, and keep it alive. */
class ZeroCopyTest {
  @Test
  void aWriteThroughTheBufferIsWhatTheSessionComputesWith() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(4));
      Output y = g.apply("Add", "y", x, x);
      try (Session s = new Session(g);
           Tensor feed = Tensor.allocateDirect(DataType.FLOAT32, 4)) {
        FloatBuffer values = feed.buffer().asFloatBuffer();
        values.put(new float[] {1, 2, 3, 4});
        try (Session.Result r = s.runner().feed(x, feed).fetch(y).run()) {
          assertArrayEquals(new float[] {2, 4, 6, 8}, r.get(0).toFloatArray());
        }
        // Written after the tensor was made, through the buffer alone.
        values.put(2, 100);
        try (Session.Result r = s.runner().feed(x, feed).fetch(y).run()) {
          assertArrayEquals(new float[] {2, 4, 200, 8}, r.get(0).toFloatArray());
        }
      }
    }
  }

  @Test
  void theTensorReadsTheCallersBufferNotACopy() {
    ByteBuffer mine = ByteBuffer.allocateDirect(12).order(ByteOrder.nativeOrder());
    try (Tensor t = Tensor.fromBuffer(DataType.INT32, mine, 3)) {
      mine.putInt(4, 42);
      assertArrayEquals(new int[] {0, 42, 0}, t.toIntArray());
      assertEquals(42, t.buffer().getInt(4));
    }
  }

  private static WeakReference<ByteBuffer> constantOverForgottenBuffer(Graph g, String name) {
    ByteBuffer buffer = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    buffer.putFloat(0, 3f).putFloat(4, 4f);
    try (Tensor t = Tensor.fromBuffer(DataType.FLOAT32, buffer, 2)) {
      g.constant(name, t);
    }
    return new WeakReference<>(buffer);
  }

  private static void collect(WeakReference<?> ref, boolean expectCleared)
      throws InterruptedException {
    for (int i = 0; i < 50 && (ref.get() == null) != expectCleared; ++i) {
      System.gc();
      Thread.sleep(20);
    }
  }

  /**
   * The graph's constant keeps using the buffer after the Java tensor and
   * every Java reference to the buffer are gone: the global reference held
   * until the runtime's deleter keeps it alive, and the deleter releases it.
   */
  @Test
  void theBufferLivesAsLongAsTheRuntimeUsesIt() throws InterruptedException {
    WeakReference<ByteBuffer> ref;
    try (Graph g = new Graph()) {
      ref = constantOverForgottenBuffer(g, "c");
      collect(ref, false);
      assertNotNull(ref.get(), "the buffer was collected while a constant used it");
      Output doubled = g.apply("Add", "d", g.node("c").output(0), g.node("c").output(0));
      try (Session s = new Session(g);
           Session.Result r = s.runner().fetch(doubled).run()) {
        assertArrayEquals(new float[] {6, 8}, r.get(0).toFloatArray());
      }
    }
    collect(ref, true);
    assertTrue(ref.get() == null, "the buffer was never released after the graph closed");
  }
}
