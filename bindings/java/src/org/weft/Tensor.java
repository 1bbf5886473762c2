package org.weft;

import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A dense, row-major n-dimensional array in native memory, with an element
 * type and a shape.
 *
 * <p>Made from a Java array, a tensor holds a copy.  Made from a direct
 * {@link ByteBuffer} with {@link #fromBuffer}, it shares the buffer's memory
 * (no copy): writes through the buffer are what a session reads, and the
 * buffer is kept reachable until the runtime lets go of the memory, even
 * after this tensor is closed.  Values are in the machine's byte order
 * ({@link ByteOrder#nativeOrder()}).
 *
 * <p>Threads: a tensor may be read from many threads at once; writing it
 * while a session reads it is a data race, as with any array.
 */
public final class Tensor extends NativeObject {
  static {
    Native.ensureLoaded();
  }

  private final ByteBuffer buffer;
  private DataType dtype;
  private long[] dims;

  Tensor(long handle, ByteBuffer buffer) {
    super(handle, Native::tensorDestroy);
    this.buffer = buffer;
  }

  /**
   * A tensor of zeros.
   *
   * @param dtype the element type
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor zeros(DataType dtype, long... shape) {
    return new Tensor(Native.tensorCreate(dtype.value(), shape.clone()), null);
  }

  /**
   * A copy of {@code array}, a primitive array that holds {@code dtype}'s
   * values: float[] for FLOAT32, double[] for FLOAT64, int[] for INT32 and
   * UINT32, long[] for INT64 and UINT64, short[] for INT16, UINT16, FLOAT16
   * and BFLOAT16 (their bits), byte[] for UINT8, INT8 and BOOL, boolean[]
   * for BOOL.  Its length must be the product of {@code shape}.
   *
   * @param dtype the element type
   * @param array the values, row-major
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor of(DataType dtype, Object array, long... shape) {
    long bytes = checkArray(dtype, array, shape);
    return new Tensor(Native.tensorFromArray(dtype.value(), shape.clone(), array, bytes), null);
  }

  /**
   * A FLOAT32 tensor holding a copy of {@code values}.
   *
   * @param values the values, row-major; as many as the shape has elements
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor of(float[] values, long... shape) {
    return of(DataType.FLOAT32, values, shape);
  }

  /**
   * A FLOAT64 tensor holding a copy of {@code values}.
   *
   * @param values the values, row-major; as many as the shape has elements
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor of(double[] values, long... shape) {
    return of(DataType.FLOAT64, values, shape);
  }

  /**
   * A INT32 tensor holding a copy of {@code values}.
   *
   * @param values the values, row-major; as many as the shape has elements
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor of(int[] values, long... shape) {
    return of(DataType.INT32, values, shape);
  }

  /**
   * A INT64 tensor holding a copy of {@code values}.
   *
   * @param values the values, row-major; as many as the shape has elements
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor of(long[] values, long... shape) {
    return of(DataType.INT64, values, shape);
  }

  /**
   * A BOOL tensor holding a copy of {@code values}.
   *
   * @param values the values, row-major; as many as the shape has elements
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor of(boolean[] values, long... shape) {
    return of(DataType.BOOL, values, shape);
  }

  /**
   * A FLOAT32 scalar.
   *
   * @param value the value
   * @return the new tensor, which the caller closes
   */
  public static Tensor scalar(float value) {
    return of(new float[] {value});
  }

  /**
   * A FLOAT64 scalar.
   *
   * @param value the value
   * @return the new tensor, which the caller closes
   */
  public static Tensor scalar(double value) {
    return of(new double[] {value});
  }

  /**
   * A INT32 scalar.
   *
   * @param value the value
   * @return the new tensor, which the caller closes
   */
  public static Tensor scalar(int value) {
    return of(new int[] {value});
  }

  /**
   * A INT64 scalar.
   *
   * @param value the value
   * @return the new tensor, which the caller closes
   */
  public static Tensor scalar(long value) {
    return of(new long[] {value});
  }

  /**
   * A BOOL scalar.
   *
   * @param value the value
   * @return the new tensor, which the caller closes
   */
  public static Tensor scalar(boolean value) {
    return of(new boolean[] {value});
  }

  /**
   * A tensor over the memory of a direct buffer, from its position to its
   * limit, which must hold exactly the tensor's bytes.  No copy is made.
   * The buffer stays reachable as long as the runtime uses its memory.
   *
   * @param dtype the element type
   * @param buffer a direct buffer
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor fromBuffer(DataType dtype, ByteBuffer buffer, long... shape) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException(
          "a zero-copy tensor needs a direct buffer (ByteBuffer.allocateDirect); "
              + "use Tensor.copyOf for a heap buffer");
    }
    long bytes = checkBytes(dtype, buffer.remaining(), shape);
    long handle = Native.tensorFromBuffer(dtype.value(), shape.clone(), buffer,
        buffer.position(), bytes);
    return new Tensor(handle, buffer);
  }

  /**
   * A new direct buffer in native byte order, sized for {@code shape}, and a
   * zero-copy tensor over it: fill {@link #buffer()} and feed the tensor.
   *
   * @param dtype the element type
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor allocateDirect(DataType dtype, long... shape) {
    long bytes = checkBytes(dtype, -1, shape);
    if (bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "a ByteBuffer holds at most 2 GiB; shape " + Arrays.toString(shape) + " needs " + bytes);
    }
    ByteBuffer buffer = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
    return fromBuffer(dtype, buffer, shape);
  }

  /**
   * A tensor holding a copy of the bytes from the buffer's position to its limit.
   *
   * @param dtype the element type
   * @param buffer any buffer
   * @param shape the dimensions
   * @return the new tensor, which the caller closes
   */
  public static Tensor copyOf(DataType dtype, ByteBuffer buffer, long... shape) {
    long bytes = checkBytes(dtype, buffer.remaining(), shape);
    if (buffer.isDirect()) {
      return new Tensor(Native.tensorCopyBuffer(dtype.value(), shape.clone(), buffer,
          buffer.position(), bytes), null);
    }
    byte[] copy = new byte[(int) bytes];
    buffer.duplicate().get(copy);
    return new Tensor(Native.tensorFromArray(dtype.value(), shape.clone(), copy, bytes), null);
  }

  // ---- checks ----

  private static long elementCount(long[] shape) {
    long n = 1;
    for (long d : shape) {
      if (d < 0) {
        throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
      }
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  /** The byte size of {@code shape}; when {@code available} >= 0, it must match. */
  private static long checkBytes(DataType dtype, long available, long[] shape) {
    long bytes = Math.multiplyExact(elementCount(shape), (long) dtype.byteSize());
    if (available >= 0 && available != bytes) {
      throw new IllegalArgumentException("a " + dtype + " tensor of shape "
          + Arrays.toString(shape) + " holds " + bytes + " bytes; the buffer has " + available);
    }
    return bytes;
  }

  private static long checkArray(DataType dtype, Object array, long[] shape) {
    if (array == null || !dtype.acceptsArray(array.getClass())) {
      throw new IllegalArgumentException(dtype + " values are held in a "
          + dtype.arrayClass().getSimpleName() + ", not "
          + (array == null ? "null" : array.getClass().getSimpleName()));
    }
    long count = elementCount(shape);
    int length = Array.getLength(array);
    if (length != count) {
      throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " has " + count
          + " elements; the array has " + length);
    }
    return count * dtype.byteSize();
  }

  // ---- properties ----

  private void loadInfo() {
    if (dims == null) {
      long[] info;
      long h = acquire();
      try {
        info = Native.tensorInfo(h);
      } finally {
        release();
      }
      dtype = DataType.fromValue((int) info[0]);
      dims = Arrays.copyOfRange(info, 1, info.length);
    }
  }

  /**
   * The element type.
   *
   * @return the type of its elements
   */
  public DataType dtype() {
    loadInfo();
    return dtype;
  }

  /**
   * The dimensions (a copy).
   *
   * @return the size of each dimension
   */
  public long[] shape() {
    loadInfo();
    return dims.clone();
  }

  /**
   * The number of dimensions.
   *
   * @return how many dimensions it has; 0 for a scalar
   */
  public int rank() {
    loadInfo();
    return dims.length;
  }

  /**
   * The number of elements.
   *
   * @return the product of the dimensions
   */
  public long elementCount() {
    loadInfo();
    return elementCount(dims);
  }

  /**
   * The size of the values in bytes.
   *
   * @return the element count times the element size
   */
  public long byteSize() {
    return elementCount() * dtype().byteSize();
  }

  /**
   * The buffer a zero-copy tensor was made over (a duplicate: its own
   * position and limit), or {@code null} for a tensor that owns its memory.
   *
   * @return the buffer, or {@code null}
   */
  public ByteBuffer buffer() {
    checkOpen();
    return buffer == null ? null : buffer.duplicate().order(buffer.order());
  }

  // ---- reading ----

  /**
   * Copies the values into {@code array}, which must match as in {@link #of}.
   *
   * @param array a primitive array of the right type and length
   */
  public void copyTo(Object array) {
    loadInfo();
    long bytes = checkArray(dtype, array, dims);
    long h = acquire();
    try {
      Native.tensorToArray(h, array, bytes);
    } finally {
      release();
    }
  }

  /**
   * Copies the bytes into {@code target} from its position, which advances;
   * the values are in native byte order.
   *
   * @param target a buffer with room for the bytes
   */
  public void copyTo(ByteBuffer target) {
    long bytes = byteSize();
    if (target.remaining() < bytes) {
      throw new IllegalArgumentException("the tensor has " + bytes + " bytes; the buffer has room for "
          + target.remaining());
    }
    if (target.isDirect()) {
      long h = acquire();
      try {
        Native.tensorToBuffer(h, target, target.position(), bytes);
      } finally {
        release();
      }
      target.position(target.position() + (int) bytes);
    } else {
      byte[] copy = new byte[(int) bytes];
      copyBytes(copy);
      target.put(copy);
    }
  }

  /** Reads the bytes of any dtype. */
  private void copyBytes(byte[] bytes) {
    long h = acquire();
    try {
      Native.tensorToArray(h, bytes, bytes.length);
    } finally {
      release();
    }
  }

  private <T> T read(T array) {
    copyTo(array);
    return array;
  }

  private int length() {
    return Math.toIntExact(elementCount());
  }

  /**
   * A copy of the values of a FLOAT32 tensor.
   *
   * @return a new array of every element, row-major
   */
  public float[] toFloatArray() {
    return read(new float[length()]);
  }

  /**
   * A copy of the values of a FLOAT64 tensor.
   *
   * @return a new array of every element, row-major
   */
  public double[] toDoubleArray() {
    return read(new double[length()]);
  }

  /**
   * A copy of the values of a INT32 or UINT32 tensor.
   *
   * @return a new array of every element, row-major
   */
  public int[] toIntArray() {
    return read(new int[length()]);
  }

  /**
   * A copy of the values of a INT64 or UINT64 tensor.
   *
   * @return a new array of every element, row-major
   */
  public long[] toLongArray() {
    return read(new long[length()]);
  }

  /**
   * A copy of the values of a INT16, UINT16, FLOAT16 or BFLOAT16 (their bits) tensor.
   *
   * @return a new array of every element, row-major
   */
  public short[] toShortArray() {
    return read(new short[length()]);
  }

  /**
   * A copy of the values of a UINT8, INT8 or BOOL tensor.
   *
   * @return a new array of every element, row-major
   */
  public byte[] toByteArray() {
    return read(new byte[length()]);
  }

  /**
   * A copy of the values of a BOOL tensor.
   *
   * @return a new array of every element, row-major
   */
  public boolean[] toBooleanArray() {
    return read(new boolean[length()]);
  }

  /**
   * The bytes, in a new direct buffer in native byte order.
   *
   * @return the new buffer
   */
  public ByteBuffer toByteBuffer() {
    ByteBuffer out = ByteBuffer.allocateDirect(Math.toIntExact(byteSize()))
        .order(ByteOrder.nativeOrder());
    copyTo(out);
    return out.flip();
  }

  /**
   * The value of a one-element FLOAT32 tensor.
   *
   * @return the element
   */
  public float floatValue() {
    float[] v = toFloatArray();
    return scalarOf(v.length == 1 ? v[0] : null);
  }

  /**
   * The value of a one-element FLOAT64 tensor.
   *
   * @return the element
   */
  public double doubleValue() {
    double[] v = toDoubleArray();
    return scalarOf(v.length == 1 ? v[0] : null);
  }

  /**
   * The value of a one-element INT32 tensor.
   *
   * @return the element
   */
  public int intValue() {
    int[] v = toIntArray();
    return scalarOf(v.length == 1 ? v[0] : null);
  }

  /**
   * The value of a one-element INT64 tensor.
   *
   * @return the element
   */
  public long longValue() {
    long[] v = toLongArray();
    return scalarOf(v.length == 1 ? v[0] : null);
  }

  private <T> T scalarOf(T value) {
    if (value == null) {
      throw new IllegalStateException("not a one-element tensor: shape " + Arrays.toString(dims));
    }
    return value;
  }

  @Override
  public String toString() {
    if (isClosed()) {
      return "Tensor(closed)";
    }
    return "Tensor(" + dtype() + ", " + Arrays.toString(dims) + ")";
  }
}
