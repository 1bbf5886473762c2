package org.weft;

/** Output {@code index} of a node: what an edge of the graph carries. */
public record Output(Node node, int index) {
  public Output {
    if (node == null) {
      throw new NullPointerException("node");
    }
  }

  public Graph graph() {
    return node.graph();
  }

  /** The element type the graph infers. */
  public DataType dtype() {
    Graph g = node.graph();
    g.acquire();
    try {
      return DataType.fromValue(Native.outputDtype(node.handle(), index));
    } finally {
      g.release();
    }
  }

  /** The shape the graph infers: partial where sizes are known only at run time. */
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
