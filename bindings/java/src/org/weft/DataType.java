package org.weft;

/** Element types; the values are weft_dtype's and never change. */
public enum DataType {
  /** IEEE 754 binary32: Java {@code float}. */
  FLOAT32(1, 4),
  /** IEEE 754 binary64: Java {@code double}. */
  FLOAT64(2, 8),
  /** Signed 32-bit integers: Java {@code int}. */
  INT32(3, 4),
  /** Signed 64-bit integers: Java {@code long}. */
  INT64(4, 8),
  /** Unsigned bytes, held in Java as {@code byte} (the same bits). */
  UINT8(5, 1),
  /** One byte per element, 0 or 1. */
  BOOL(6, 1),
  /** IEEE 754 binary16, held in Java as the bits in a short. */
  FLOAT16(7, 2),
  /** The upper 16 bits of a binary32, held in Java as a short. */
  BFLOAT16(8, 2),
  /** Signed bytes: Java {@code byte}. */
  INT8(9, 1),
  /** Signed 16-bit integers: Java {@code short}. */
  INT16(10, 2),
  /** Unsigned 16-bit integers, held in Java as {@code short} (the same bits). */
  UINT16(11, 2),
  /** Unsigned 32-bit integers, held in Java as {@code int} (the same bits). */
  UINT32(12, 4),
  /** Unsigned 64-bit integers, held in Java as {@code long} (the same bits). */
  UINT64(13, 8);

  private final int value;
  private final int byteSize;

  DataType(int value, int byteSize) {
    this.value = value;
    this.byteSize = byteSize;
  }

  /**
   * The C value.
   *
   * @return weft_dtype's value for this type
   */
  public int value() {
    return value;
  }

  /**
   * Bytes per element.
   *
   * @return the size of one element in bytes
   */
  public int byteSize() {
    return byteSize;
  }

  /** The runtime's name, such as "float32". */
  @Override
  public String toString() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /**
   * The type of a C value.
   *
   * @param value a weft_dtype value
   * @return its type; {@code null} for WEFT_DTYPE_INVALID or a value this
   *     binding does not know
   */
  public static DataType fromValue(int value) {
    for (DataType t : values()) {
      if (t.value == value) {
        return t;
      }
    }
    return null;
  }

  /** The Java primitive array element type that holds this type's values. */
  Class<?> arrayClass() {
    switch (this) {
      case FLOAT32: return float[].class;
      case FLOAT64: return double[].class;
      case INT32: case UINT32: return int[].class;
      case INT64: case UINT64: return long[].class;
      case FLOAT16: case BFLOAT16: case INT16: case UINT16: return short[].class;
      default: return byte[].class;
    }
  }

  /** Whether a Java array of {@code arrayType} holds values of this type. */
  boolean acceptsArray(Class<?> arrayType) {
    return arrayType == arrayClass() || (this == BOOL && arrayType == boolean[].class);
  }
}
