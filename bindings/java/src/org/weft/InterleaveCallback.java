package org.weft;

/**
 * What the JNI glue calls for {@link Dataset#interleave}: runs the Java
 * function on one of Weft's pipeline threads and hands its dataset to C.
 */
final class InterleaveCallback {
  private final Dataset.InterleaveFunction function;

  InterleaveCallback(Dataset.InterleaveFunction function) {
    this.function = function;
  }

  /**
   * The handle of the dataset made for one input element, which C takes
   * over; {@code elementHandles} are copies this call owns.  An exception
   * becomes the pass's error (a WeftException keeps its code).
   */
  long make(long[] elementHandles) {
    Tensor[] element = new Tensor[elementHandles.length];
    for (int i = 0; i < element.length; ++i) {
      element[i] = new Tensor(elementHandles[i], null);
    }
    try {
      Dataset made = function.make(element);
      if (made == null) {
        throw new NullPointerException("the interleave function returned null");
      }
      return made.handOver();
    } finally {
      for (Tensor t : element) {
        t.close();
      }
    }
  }
}
