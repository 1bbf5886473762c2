package org.weft;

import java.util.ArrayList;
import java.util.List;

/**
 * A dataflow graph: nodes are only ever added, so sessions keep working
 * while it grows.  Closing the graph releases the Java handle; sessions
 * already made on it keep what they need, but its nodes (and outputs) can no
 * longer be used from Java.
 *
 * <p>Threads: every method may be called from any thread.
 */
public final class Graph extends NativeObject {
  static {
    Native.ensureLoaded();
  }

  /**
   * An empty graph.
   */
  public Graph() {
    super(Native.graphCreate(), Native::graphDestroy);
  }

  /** Splits outputs of this graph into the two arrays the C API takes. */
  static void unpack(Graph graph, Output[] outputs, long[] nodes, int[] indices) {
    for (int i = 0; i < outputs.length; ++i) {
      nodes[i] = outputs[i].node().handleIn(graph);
      indices[i] = outputs[i].index();
    }
  }

  private Node node(long handle) {
    return handle == 0 ? null : new Node(this, handle);
  }

  /** The graph whose gradients this thread is building, for Java gradients. */
  private static final ThreadLocal<Graph> DIFFERENTIATING = new ThreadLocal<>();

  static Graph differentiating() {
    return DIFFERENTIATING.get();
  }

  Node nodeOf(long handle) {
    return node(handle);
  }

  /**
   * Starts a node of op {@code opType}; {@code name} null or "" picks a
   * unique one.
   *
   * @param opType the op
   * @param name the node's name; null or "" picks a unique one
   * @return the builder; {@link OpBuilder#finish} adds the node
   */
  public OpBuilder opBuilder(String opType, String name) {
    long g = acquire();
    try {
      return new OpBuilder(this, Native.opBegin(g, opType, name));
    } finally {
      release();
    }
  }

  /**
   * The device constraint of every node made from now on that sets none of
   * its own (the gradients' and optimizers' included), as TensorFlow's
   * {@code with tf.device(...)}; null or "" ends it.  In a cluster session
   * it may name a task: {@code "/job:ps/task:0"}.
   *
   * @param device a device pattern, or null
   */
  public void setDevice(String device) {
    long g = acquire();
    try {
      Native.graphSetDevice(g, device);
    } finally {
      release();
    }
  }

  /**
   * A Const node holding {@code value} (the graph keeps its own reference).
   *
   * @param name the node's name; null or "" picks a unique one
   * @param value the value
   * @return its output
   */
  public Output constant(String name, Tensor value) {
    long g = acquire();
    long t = value.acquire();
    try {
      return node(Native.graphConstant(g, name, t)).output(0);
    } finally {
      value.release();
      release();
    }
  }

  /**
   * A FLOAT32 scalar Const node.
   *
   * @param name the node's name; null or "" picks a unique one
   * @param value the value
   * @return its output
   */
  public Output constant(String name, float value) {
    try (Tensor t = Tensor.scalar(value)) {
      return constant(name, t);
    }
  }

  /**
   * An INT32 scalar Const node.
   *
   * @param name the node's name; null or "" picks a unique one
   * @param value the value
   * @return its output
   */
  public Output constant(String name, int value) {
    try (Tensor t = Tensor.scalar(value)) {
      return constant(name, t);
    }
  }

  /**
   * A Placeholder, fed at run time; -1 in {@code shape} for unknown sizes.
   *
   * @param name the node's name; null or "" picks a unique one
   * @param dtype the type of the value fed
   * @param shape its shape, as far as known
   * @return its output
   */
  public Output placeholder(String name, DataType dtype, Shape shape) {
    long g = acquire();
    try {
      return node(Native.graphPlaceholder(g, name, dtype.value(), shape.dimsOrEmpty(),
          shape.rank())).output(0);
    } finally {
      release();
    }
  }

  /**
   * A node of an op that takes only data inputs and no attributes; its output 0.
   *
   * @param opType the op
   * @param name the node's name; null or "" picks a unique one
   * @param inputs its inputs, in order
   * @return output 0 of the new node
   */
  public Output apply(String opType, String name, Output... inputs) {
    long[] nodes = new long[inputs.length];
    int[] indices = new int[inputs.length];
    long g = acquire();
    try {
      unpack(this, inputs, nodes, indices);
      return node(Native.graphApply(g, opType, name, nodes, indices)).output(0);
    } finally {
      release();
    }
  }

  /**
   * A variable initialized from {@code initialValue} (fully known shape).
   *
   * @param name the variable's name
   * @param initialValue what the initializer assigns
   * @return the variable
   */
  public Variable variable(String name, Output initialValue) {
    long g = acquire();
    try {
      long[] v = Native.graphVariable(g, name, initialValue.node().handleIn(this),
          initialValue.index());
      return new Variable(new Output(node(v[0]), (int) v[1]), node(v[2]));
    } finally {
      release();
    }
  }

  /**
   * A variable initialized from a constant "{@code name}/initial_value".
   *
   * @param name the variable's name
   * @param initialValue what the initializer assigns
   * @return the variable
   */
  public Variable variable(String name, Tensor initialValue) {
    return variable(name, constant(name + "/initial_value", initialValue));
  }

  /**
   * The node called {@code name}, or {@code null}.
   *
   * @param name the node's name
   * @return the node, or {@code null}
   */
  public Node node(String name) {
    long g = acquire();
    try {
      return node(Native.graphNodeByName(g, name));
    } finally {
      release();
    }
  }

  /**
   * The number of nodes.
   *
   * @return how many nodes the graph holds
   */
  public int nodeCount() {
    long g = acquire();
    try {
      return Native.graphNodeCount(g);
    } finally {
      release();
    }
  }

  /**
   * Every node, in creation order.
   *
   * @return the nodes
   */
  public List<Node> nodes() {
    long g = acquire();
    try {
      int n = Native.graphNodeCount(g);
      List<Node> nodes = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        nodes.add(node(Native.graphNodeAt(g, i)));
      }
      return nodes;
    } finally {
      release();
    }
  }

  // ---- control flow ----

  /** Builds one branch of {@link #cond}: its outputs, in order. */
  @FunctionalInterface
  public interface Branch {
    /**
     * Builds the branch.
     *
     * @return the branch's outputs
     */
    Output[] build();
  }

  /** Builds a loop's condition (a bool scalar) from the loop variables. */
  @FunctionalInterface
  public interface LoopCondition {
    /**
     * Builds the condition.
     *
     * @param vars the loop variables' values in this iteration
     * @return a bool scalar
     */
    Output build(Output[] vars);
  }

  /** Builds one iteration: the next value of each loop variable. */
  @FunctionalInterface
  public interface LoopBody {
    /**
     * Builds the body.
     *
     * @param vars the loop variables' values in this iteration
     * @return their next values
     */
    Output[] build(Output[] vars);
  }

  /**
   * {@code pred ? thenBranch() : elseBranch()}, built into the graph: only
   * the taken branch runs.  {@code pred} is a bool scalar; each branch
   * returns {@code numOutputs} outputs of matching dtypes.  The lambdas run
   * on this thread while the call lasts; values from outside a branch that
   * it reads are brought in automatically (see weft/control.h).
   *
   * @param name prefix of the nodes; null for "cond"
   * @param pred a bool scalar
   * @param numOutputs how many outputs each branch returns
   * @param thenBranch builds the branch taken when {@code pred} is true
   * @param elseBranch builds the other
   * @return the outputs of the branch taken
   * @throws WeftException for a refused graph, or when a lambda threw: the
   *     builder's error names the branch, and the lambda's exception is its
   *     cause (a WeftException from a lambda keeps its code).  Nodes added
   *     before the failure stay in the graph, unused.
   */
  public Output[] cond(String name, Output pred, int numOutputs, Branch thenBranch,
      Branch elseBranch) {
    ControlCallbacks cb = new ControlCallbacks(this, thenBranch, elseBranch, null, null);
    long g = acquire();
    try {
      return outputs(Native.cond(g, name, pred.node().handleIn(this), pred.index(), cb,
          numOutputs));
    } catch (RuntimeException e) {
      throw cb.withCause(e);
    } finally {
      release();
    }
  }

  /**
   * A one-output {@link #cond}.
   *
   * @param pred a bool scalar
   * @param thenBranch builds the output when {@code pred} is true
   * @param elseBranch builds the other
   * @return the output of the branch taken
   */
  public Output cond(Output pred, java.util.function.Supplier<Output> thenBranch,
      java.util.function.Supplier<Output> elseBranch) {
    return cond(null, pred, 1, () -> new Output[] {thenBranch.get()},
        () -> new Output[] {elseBranch.get()})[0];
  }

  /**
   * {@code while (condition(vars)) vars = body(vars)}, built into the graph
   * as one loop that runs inside a session run; returns the final values.
   * {@code options} may be null for the defaults.  Errors as {@link #cond}.
   *
   * @param condition builds the condition
   * @param body builds one iteration
   * @param vars the loop variables' initial values
   * @param options the options, or null
   * @return the loop variables' final values
   */
  public Output[] whileLoop(LoopCondition condition, LoopBody body, Output[] vars,
      WhileOptions options) {
    WhileOptions o = options == null ? new WhileOptions(null, 0, 0, null) : options;
    Shape[] inv = o.shapeInvariants();
    if (inv != null && inv.length != vars.length) {
      throw new IllegalArgumentException(inv.length + " shape invariants for " + vars.length
          + " loop variables");
    }
    long[][] shapes = null;
    if (inv != null) {
      shapes = new long[inv.length][];
      for (int i = 0; i < inv.length; ++i) {
        shapes[i] = inv[i].hasUnknownRank() ? null : inv[i].dims();
      }
    }
    long[] nodes = new long[vars.length];
    int[] indices = new int[vars.length];
    ControlCallbacks cb = new ControlCallbacks(this, null, null, condition, body);
    long g = acquire();
    try {
      unpack(this, vars, nodes, indices);
      return outputs(Native.whileLoop(g, cb, nodes, indices, o.name(),
          o.parallelIterations(), o.maximumIterations(), shapes));
    } catch (RuntimeException e) {
      throw cb.withCause(e);
    } finally {
      release();
    }
  }

  private Output[] outputs(long[] pairs) {
    Output[] outs = new Output[pairs.length / 2];
    for (int i = 0; i < outs.length; ++i) {
      outs[i] = new Output(node(pairs[2 * i]), (int) pairs[2 * i + 1]);
    }
    return outs;
  }

  // ---- training ----

  /**
   * Adds nodes computing d(sum of ys)/d(xs[i]).  {@code gradYs} may be null
   * (ones for each y).  An entry of the result is {@code null} where no y
   * depends on that x ("no gradient", to be treated as zeros).
   *
   * @param ys the values to differentiate
   * @param xs the values to differentiate by
   * @param gradYs the gradient of each y, or null
   * @return one gradient per x, or null
   */
  public Output[] gradients(Output[] ys, Output[] xs, Output[] gradYs) {
    if (gradYs != null && gradYs.length != ys.length) {
      throw new IllegalArgumentException(ys.length + " ys but " + gradYs.length + " gradYs");
    }
    long[] yn = new long[ys.length];
    int[] yi = new int[ys.length];
    long[] xn = new long[xs.length];
    int[] xi = new int[xs.length];
    long[] gn = gradYs == null ? null : new long[gradYs.length];
    int[] gi = gradYs == null ? null : new int[gradYs.length];
    long g = acquire();
    try {
      unpack(this, ys, yn, yi);
      unpack(this, xs, xn, xi);
      if (gradYs != null) {
        unpack(this, gradYs, gn, gi);
      }
      Graph outer = DIFFERENTIATING.get();
      DIFFERENTIATING.set(this);
      long[] out;
      try {
        out = Native.gradients(g, yn, yi, xn, xi, gn, gi);
      } finally {
        DIFFERENTIATING.set(outer);
      }
      Output[] grads = new Output[xs.length];
      for (int i = 0; i < xs.length; ++i) {
        grads[i] = out[2 * i] == 0 ? null : new Output(node(out[2 * i]), (int) out[2 * i + 1]);
      }
      return grads;
    } finally {
      release();
    }
  }

  /**
   * d(sum of y)/d(xs[i]).
   *
   * @param y the value to differentiate
   * @param xs the values to differentiate by
   * @return one gradient per x, or null
   */
  public Output[] gradients(Output y, Output... xs) {
    return gradients(new Output[] {y}, xs, null);
  }

  /**
   * Builds the gradients of {@code loss} for every trainable variable it
   * depends on and one update op each; returns the NoOp {@code name} (or
   * "train") to run as a target once per step.
   *
   * @param loss a scalar to minimize
   * @param options the optimizer and its parameters
   * @param name the NoOp's name, or null
   * @return the NoOp
   */
  public Node minimize(Output loss, OptimizerOptions options, String name) {
    long g = acquire();
    Graph outer = DIFFERENTIATING.get();
    DIFFERENTIATING.set(this);
    try {
      return node(Native.minimize(g, loss.node().handleIn(this), loss.index(),
          options.optimizer().value(), options.learningRate(), options.momentum(),
          options.nesterov(), options.beta1(), options.beta2(), options.epsilon(),
          options.dataParallel(), options.bucketBytes(), name));
    } finally {
      DIFFERENTIATING.set(outer);
      release();
    }
  }

  /**
   * A NoOp ({@code name}, or "broadcast_variables" when null) setting every
   * variable to rank {@code root}'s value in an MPI job; run it once after
   * initializing (weft_broadcast_variables).
   *
   * @param root the rank whose values every rank takes
   * @param name the NoOp's name, or null
   * @return the NoOp
   */
  public Node broadcastVariables(int root, String name) {
    long g = acquire();
    try {
      return node(Native.broadcastVariables(g, root, name));
    } finally {
      release();
    }
  }

  /**
   * A NoOp ({@code name}, or "init_all" when null) running every variable
   * initializer the graph has now; make it after {@link #minimize}.
   *
   * @param name the NoOp's name, or null
   * @return the NoOp
   */
  public Node initializeAll(String name) {
    long g = acquire();
    try {
      return node(Native.graphInitializeAll(g, name));
    } finally {
      release();
    }
  }

  /**
   * The variables {@link #minimize} updates, in creation order.
   *
   * @return the Variable nodes
   */
  public List<Node> trainableVariables() {
    long g = acquire();
    try {
      List<Node> nodes = new ArrayList<>();
      for (long n : Native.graphTrainableVariables(g)) {
        nodes.add(node(n));
      }
      return nodes;
    } finally {
      release();
    }
  }

  /**
   * Whether {@link #minimize} updates {@code variable} (variables are
   * trainable when made).
   *
   * @param variable a Variable node
   * @param trainable whether minimize updates it
   */
  public void setTrainable(Node variable, boolean trainable) {
    long g = acquire();
    try {
      Native.variableSetTrainable(g, variable.handleIn(this), trainable);
    } finally {
      release();
    }
  }
}
