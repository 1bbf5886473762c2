package org.weft;

import java.util.Arrays;

/**
 * A possibly partial shape: an unknown rank, or dimensions of which any may
 * be -1 (unknown size, such as a batch).
 */
public final class Shape {
  private static final Shape UNKNOWN = new Shape(null);
  private final long[] dims;

  private Shape(long[] dims) {
    this.dims = dims;
  }

  /**
   * A shape of known rank.
   *
   * @param dims the size of each dimension; -1 marks one of unknown size
   * @return the shape
   * @throws IllegalArgumentException for a size below -1
   */
  public static Shape of(long... dims) {
    for (long d : dims) {
      if (d < -1) {
        throw new IllegalArgumentException("dimension " + d + " in " + Arrays.toString(dims));
      }
    }
    return new Shape(dims.clone());
  }

  /**
   * The shape of a scalar.
   *
   * @return the shape of rank 0
   */
  public static Shape scalar() {
    return new Shape(new long[0]);
  }

  /**
   * A shape whose rank is unknown.
   *
   * @return the shape of unknown rank
   */
  public static Shape unknown() {
    return UNKNOWN;
  }

  /**
   * The number of dimensions.
   *
   * @return the rank; -1 when unknown
   */
  public int rank() {
    return dims == null ? -1 : dims.length;
  }

  /**
   * Whether even the rank is unknown.
   *
   * @return true for {@link #unknown()}
   */
  public boolean hasUnknownRank() {
    return dims == null;
  }

  /**
   * The size of one dimension.
   *
   * @param axis the dimension, from 0
   * @return its size; -1 when unknown
   * @throws IllegalStateException when the rank is unknown
   */
  public long size(int axis) {
    if (dims == null) {
      throw new IllegalStateException("the rank is unknown");
    }
    return dims[axis];
  }

  /**
   * The dimensions.
   *
   * @return a copy of the sizes (-1 for an unknown one), or {@code null} when
   *     the rank is unknown
   */
  public long[] dims() {
    return dims == null ? null : dims.clone();
  }

  /** Dimensions for the C API: never null (rank -1 is passed apart). */
  long[] dimsOrEmpty() {
    return dims == null ? new long[0] : dims;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Shape && Arrays.equals(dims, ((Shape) other).dims);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(dims);
  }

  @Override
  public String toString() {
    if (dims == null) {
      return "<unknown>";
    }
    StringBuilder s = new StringBuilder("[");
    for (int i = 0; i < dims.length; ++i) {
      s.append(i > 0 ? ", " : "").append(dims[i] < 0 ? "?" : Long.toString(dims[i]));
    }
    return s.append(']').toString();
  }
}
