package org.weft;

/**
 * Output {@code index} of a node: what an edge of the graph carries.
 *
 * @param node the node
 * @param index which of its outputs, from 0
 */
public record Output(Node node, int index) {
  /**
   * Output {@code index} of {@code node}.
   *
   * @param node the node
   * @param index which of its outputs, from 0
   * @throws NullPointerException when {@code node} is null
   */
  public Output {
    if (node == null) {
      throw new NullPointerException("node");
    }
  }

  /**
   * The graph of the node.
   *
   * @return the graph that holds this output
   */
  public Graph graph() {
    return node.graph();
  }

  /**
   * The element type the graph infers.
   *
   * @return the type of the values this output carries
   */
  public DataType dtype() {
    Graph g = node.graph();
    g.acquire();
    try {
      return DataType.fromValue(Native.outputDtype(node.handle(), index));
    } finally {
      g.release();
    }
  }

  /**
   * The shape the graph infers: partial where sizes are known only at run time.
   *
   * @return the shape, with -1 for sizes (or an unknown rank) known only at run
   *     time
   */
  public Shape shape() {
    Graph g = node.graph();
    g.acquire();
    try {
      long[] dims = Native.outputShape(node.handle(), index);
      return dims == null ? Shape.unknown() : Shape.of(dims);
    } finally {
      g.release();
    }
  }

  @Override
  public String toString() {
    return node.name() + ":" + index;
  }
}
