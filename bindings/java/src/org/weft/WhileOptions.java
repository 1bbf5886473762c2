package org.weft;

/**
 * Options of {@link Graph#whileLoop}: {@code name} (null: "while") prefixes
 * the loop's nodes; {@code parallelIterations} (0: 10) iterations may run at
 * once; when {@code maximumIterations} is above 0 the loop stops after that
 * many; {@code shapeInvariants} is null or one shape per loop variable (a
 * dimension of -1 or {@link Shape#unknown()} lets it change across
 * iterations).
 */
public record WhileOptions(String name, int parallelIterations, long maximumIterations,
    Shape[] shapeInvariants) {
  /**
   * Options as described above.
   *
   * @param name prefix of the loop's nodes; null for "while"
   * @param parallelIterations how many iterations may run at once; 0 for 10
   * @param maximumIterations the most iterations when above 0; no limit otherwise
   * @param shapeInvariants null, or one shape per loop variable
   * @throws IllegalArgumentException when {@code parallelIterations} is negative
   */
  public WhileOptions {
    if (parallelIterations < 0) {
      throw new IllegalArgumentException("parallelIterations " + parallelIterations + " < 0");
    }
  }

  /**
   * The defaults, with a name.
   *
   * @param name prefix of the loop's nodes
   * @return the options
   */
  public static WhileOptions named(String name) {
    return new WhileOptions(name, 0, 0, null);
  }
}
