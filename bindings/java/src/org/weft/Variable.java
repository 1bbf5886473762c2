package org.weft;

/**
 * A variable made by {@link Graph#variable}: {@code value} reads it, and
 * {@code initializer} (an Assign node) writes its initial value when run as a
 * target.
 */
public record Variable(Output value, Node initializer) {
  /**
   * The Variable node itself, as checkpoints and trainable lists name it.
   *
   * @return the Variable node
   */
  public Node node() {
    return value.node();
  }
}
