package org.weft;

/**
 * Builds one node of any op: inputs, input lists, control inputs, a device
 * constraint and attributes of every type, then {@link #finish()}.  Setters
 * never fail on their own; finish() reports every problem (unknown op, wrong
 * arity, dtype or shape, missing attribute) as a {@link WeftException}
 * naming the node.  Closing a builder that was not finished discards it.
 * A builder belongs to one thread at a time.
 *
 * <pre>{@code
 * Node sum = graph.opBuilder("Sum", "total").input(x).input(axes)
 *     .attr("keep_dims", true).finish();
 * }</pre>
 */
public final class OpBuilder extends NativeObject {
  private final Graph graph;

  OpBuilder(Graph graph, long handle) {
    super(handle, Native::opAbandon);
    this.graph = graph;
  }

  private long builder() {
    graph.checkOpen();
    checkOpen();
    return acquireAndRelease();
  }

  /** The handle for a setter; the builder is confined to one thread. */
  private long acquireAndRelease() {
    long h = acquire();
    release();
    return h;
  }

  /**
   * Adds the next data input.
   *
   * @param input the output it reads
   * @return this builder
   */
  public OpBuilder input(Output input) {
    Native.opAddInput(builder(), input.node().handleIn(graph), input.index());
    return this;
  }

  /**
   * A list input, for ops whose schema takes one (Concat, AddN, ...).
   *
   * @param inputs the outputs of the list, in order
   * @return this builder
   */
  public OpBuilder inputList(Output... inputs) {
    long b = builder();
    long[] nodes = new long[inputs.length];
    int[] indices = new int[inputs.length];
    Graph.unpack(graph, inputs, nodes, indices);
    Native.opAddInputList(b, nodes, indices);
    return this;
  }

  /**
   * Makes the node wait for {@code node} without taking data from it.
   *
   * @param node the node to wait for
   * @return this builder
   */
  public OpBuilder controlInput(Node node) {
    Native.opAddControlInput(builder(), node.handleIn(graph));
    return this;
  }

  /**
   * Constrains placement: "/device:CPU:0", "/device:OPENCL:*", "CPU".
   *
   * @param device a device pattern
   * @return this builder
   */
  public OpBuilder device(String device) {
    Native.opSetDevice(builder(), device);
    return this;
  }

  /**
   * An int attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, long value) {
    Native.opSetAttrInt(builder(), name, value);
    return this;
  }

  /**
   * An int attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, int value) {
    return attr(name, (long) value);
  }

  /**
   * A float attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, double value) {
    Native.opSetAttrFloat(builder(), name, value);
    return this;
  }

  /**
   * A float attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, float value) {
    return attr(name, (double) value);
  }

  /**
   * A bool attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, boolean value) {
    Native.opSetAttrBool(builder(), name, value);
    return this;
  }

  /**
   * A type attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, DataType value) {
    Native.opSetAttrDtype(builder(), name, value.value());
    return this;
  }

  /**
   * A string attribute.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, String value) {
    Native.opSetAttrString(builder(), name, value);
    return this;
  }

  /**
   * An int-list attribute.
   *
   * @param name the attribute
   * @param values its values
   * @return this builder
   */
  public OpBuilder attr(String name, long[] values) {
    Native.opSetAttrIntList(builder(), name, values);
    return this;
  }

  /**
   * A float-list attribute.
   *
   * @param name the attribute
   * @param values its values
   * @return this builder
   */
  public OpBuilder attr(String name, double[] values) {
    Native.opSetAttrFloatList(builder(), name, values);
    return this;
  }

  /**
   * A shape attribute.
   *
   * @param name the attribute
   * @param shape its value (of unknown rank, or with -1 sizes)
   * @return this builder
   */
  public OpBuilder attr(String name, Shape shape) {
    Native.opSetAttrShape(builder(), name, shape.dimsOrEmpty(), shape.rank());
    return this;
  }

  /**
   * A tensor attribute; the node keeps its own reference to the values.
   *
   * @param name the attribute
   * @param value its value
   * @return this builder
   */
  public OpBuilder attr(String name, Tensor value) {
    long b = builder();
    long t = value.acquire();
    try {
      Native.opSetAttrTensor(b, name, t);
    } finally {
      value.release();
    }
    return this;
  }

  /**
   * Validates and adds the node; the builder is used up either way.
   *
   * @return the new node
   */
  public Node finish() {
    graph.acquire();
    try {
      long b = acquireAndRelease();
      disown();
      return new Node(graph, Native.opFinish(b));
    } finally {
      graph.release();
    }
  }

  /**
   * output 0 of {@link #finish()}.
   *
   * @return the new node's first output
   */
  public Output finishOutput() {
    return finish().output(0);
  }
}
