package org.weft;

/** The optimizers {@link Graph#minimize} builds (weft_optimizer). */
public enum Optimizer {
  /** var -= lr * g. */
  GRADIENT_DESCENT,
  /** a = m * a + g; var -= lr * a. */
  MOMENTUM,
  /** Kingma and Ba, with bias correction. */
  ADAM;

  int value() {
    return ordinal();
  }
}
