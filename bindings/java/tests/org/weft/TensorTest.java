package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Tensors from and to Java arrays and direct buffers, for every dtype. */
class TensorTest {
  static final long[] SHAPE = {2, 3};

  /** Six distinct values of {@code dtype} in its Java array type. */
  static Object sample(DataType dtype) {
    Class<?> type = dtype.arrayClass().getComponentType();
    Object array = Array.newInstance(type, 6);
    for (int i = 0; i < 6; ++i) {
      long v = dtype == DataType.BOOL ? i % 2 : i * 7L + (dtype.byteSize() == 1 ? 1 : -3);
      if (type == float.class) {
        Array.setFloat(array, i, v * 0.5f);
      } else if (type == double.class) {
        Array.setDouble(array, i, v * 0.25);
      } else if (type == long.class) {
        Array.setLong(array, i, v << 40);
      } else if (type == int.class) {
        Array.setInt(array, i, (int) v * 100000);
      } else if (type == short.class) {
        Array.setShort(array, i, (short) (v * 1000));
      } else {
        Array.setByte(array, i, (byte) v);
      }
    }
    return array;
  }

  static void assertSameArray(Object expected, Object actual) {
    assertEquals(Array.getLength(expected), Array.getLength(actual));
    for (int i = 0; i < Array.getLength(expected); ++i) {
      assertEquals(Array.get(expected, i), Array.get(actual, i), "element " + i);
    }
  }

  @ParameterizedTest
  @EnumSource(DataType.class)
  void arrayRoundTrip(DataType dtype) {
    Object values = sample(dtype);
    try (Tensor t = Tensor.of(dtype, values, SHAPE)) {
      assertEquals(dtype, t.dtype());
      assertArrayEquals(SHAPE, t.shape());
      assertEquals(6, t.elementCount());
      assertEquals(6L * dtype.byteSize(), t.byteSize());
      Object back = Array.newInstance(dtype.arrayClass().getComponentType(), 6);
      t.copyTo(back);
      assertSameArray(values, back);
    }
  }

  @ParameterizedTest
  @EnumSource(DataType.class)
  void directBufferRoundTrip(DataType dtype) {
    try (Tensor source = Tensor.of(dtype, sample(dtype), SHAPE)) {
      ByteBuffer bytes = source.toByteBuffer();
      assertEquals(6 * dtype.byteSize(), bytes.remaining());
      try (Tensor wrapped = Tensor.fromBuffer(dtype, bytes, SHAPE);
           Tensor copied = Tensor.copyOf(dtype, bytes, SHAPE)) {
        assertEquals(dtype, wrapped.dtype());
        ByteBuffer out = ByteBuffer.allocateDirect(bytes.remaining());
        wrapped.copyTo(out);
        assertEquals(bytes, out.flip());
        assertEquals(bytes, copied.toByteBuffer());
      }
    }
  }

  /** Every dtype through a session: fed, passed through Identity, fetched. */
  @ParameterizedTest
  @EnumSource(DataType.class)
  void sessionRoundTrip(DataType dtype) {
    Object values = sample(dtype);
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", dtype, Shape.of(SHAPE));
      Output y = g.apply("Identity", "y", x);
      assertEquals(dtype, y.dtype());
      assertEquals(Shape.of(SHAPE), y.shape());
      try (Session s = new Session(g);
           Tensor fromArray = Tensor.of(dtype, values, SHAPE);
           Tensor fromBuffer = Tensor.fromBuffer(dtype, fromArray.toByteBuffer(), SHAPE)) {
        for (Tensor feed : new Tensor[] {fromArray, fromBuffer}) {
          try (Session.Result r = s.runner().feed(x, feed).fetch(y).run()) {
            Object back = Array.newInstance(dtype.arrayClass().getComponentType(), 6);
            r.get(0).copyTo(back);
            assertSameArray(values, back);
          }
        }
      }
    }
  }

  @Test
  void typedArraysAndScalars() {
    try (Tensor f = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
         Tensor b = Tensor.of(new boolean[] {true, false, true}, 3);
         Tensor s = Tensor.scalar(2.5);
         Tensor i = Tensor.scalar(7);
         Tensor l = Tensor.scalar(1L << 40);
         Tensor z = Tensor.zeros(DataType.INT16, 0, 5)) {
      assertArrayEquals(new float[] {1, 2, 3, 4}, f.toFloatArray());
      assertArrayEquals(new boolean[] {true, false, true}, b.toBooleanArray());
      assertEquals(DataType.BOOL, b.dtype());
      assertEquals(2.5, s.doubleValue());
      assertEquals(0, s.rank());
      assertEquals(7, i.intValue());
      assertEquals(1L << 40, l.longValue());
      assertEquals(0, z.elementCount());
      assertEquals(0, z.toShortArray().length);
      assertNull(f.buffer());
    }
  }

  @Test
  void badArraysAndBuffersAreRefusedBeforeNativeCode() {
    assertThrows(IllegalArgumentException.class, () -> Tensor.of(new float[5], 2, 3));
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(DataType.FLOAT64, new float[6], 2, 3));
    assertThrows(IllegalArgumentException.class, () -> Tensor.of(new float[0], -1));
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.fromBuffer(DataType.FLOAT32, ByteBuffer.allocate(24), 2, 3));
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.fromBuffer(DataType.FLOAT32, ByteBuffer.allocateDirect(20), 2, 3));
    try (Tensor t = Tensor.of(new int[] {1, 2}, 2)) {
      assertThrows(IllegalArgumentException.class, () -> t.copyTo(new float[2]));
      assertThrows(IllegalStateException.class, t::intValue);
    }
  }

  @Test
  void rankAboveTheLimitIsAWeftException() {
    long[] shape = new long[40];
    java.util.Arrays.fill(shape, 1);
    WeftException e = assertThrows(WeftException.class,
        () -> Tensor.zeros(DataType.FLOAT32, shape));
    assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
  }

  @Test
  void heapBufferCopyAndByteOrder() {
    ByteBuffer heap = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
    heap.putFloat(1.5f).putFloat(-2f).flip();
    try (Tensor t = Tensor.copyOf(DataType.FLOAT32, heap, 2)) {
      assertArrayEquals(new float[] {1.5f, -2f}, t.toFloatArray());
      ByteBuffer out = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
      t.copyTo(out);
      assertEquals(-2f, out.getFloat(4));
    }
  }
}
