package org.weft;

import java.util.ArrayList;
import java.util.List;

/**
 * A node (an operation) of a graph.  It lives as long as its graph: once the
 * graph is closed every method throws {@link IllegalStateException}.
 */
public final class Node {
  private final Graph graph;
  private final long handle;

  Node(Graph graph, long handle) {
    this.graph = graph;
    this.handle = handle;
  }

  /**
   * The graph that holds this node.
   *
   * @return the graph
   */
  public Graph graph() {
    return graph;
  }

  /** The C pointer; only valid while the graph is open. */
  long handle() {
    return handle;
  }

  /** The handle, checking that the graph is open and that it is {@code expected}. */
  long handleIn(Graph expected) {
    if (graph != expected) {
      throw new IllegalArgumentException("node '" + name() + "' belongs to another graph");
    }
    graph.checkOpen();
    return handle;
  }

  private String text(int which) {
    graph.acquire();
    try {
      switch (which) {
        case 0: return Native.nodeName(handle);
        case 1: return Native.nodeOpType(handle);
        default: return Native.nodeDevice(handle);
      }
    } finally {
      graph.release();
    }
  }

  /**
   * The node's name, unique in its graph.
   *
   * @return the name
   */
  public String name() {
    return text(0);
  }

  /**
   * The op the node runs.
   *
   * @return the op's name, such as "MatMul"
   */
  public String opType() {
    return text(1);
  }

  /**
   * The device constraint given when it was built.
   *
   * @return the device pattern; "" when none
   */
  public String device() {
    return text(2);
  }

  /**
   * The number of outputs.
   *
   * @return how many values the node produces
   */
  public int numOutputs() {
    graph.acquire();
    try {
      return Native.nodeNumOutputs(handle);
    } finally {
      graph.release();
    }
  }

  /**
   * One of the node's outputs.
   *
   * @param index which output, from 0
   * @return output {@code index}
   */
  public Output output(int index) {
    return new Output(this, index);
  }

  /**
   * The data inputs, in order.
   *
   * @return the outputs of other nodes this node reads
   */
  public List<Output> inputs() {
    graph.acquire();
    try {
      int n = Native.nodeNumInputs(handle);
      List<Output> inputs = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        long[] in = Native.nodeInput(handle, i);
        inputs.add(new Output(new Node(graph, in[0]), (int) in[1]));
      }
      return inputs;
    } finally {
      graph.release();
    }
  }

  /**
   * The number of control inputs.
   *
   * @return how many nodes must run before this one without feeding it
   */
  public int numControlInputs() {
    graph.acquire();
    try {
      return Native.nodeNumControlInputs(handle);
    } finally {
      graph.release();
    }
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Node && ((Node) other).handle == handle
        && ((Node) other).graph == graph;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(handle);
  }

  @Override
  public String toString() {
    return graph.isClosed() ? "Node(graph closed)" : "Node(" + name() + ": " + opType() + ")";
  }
}
