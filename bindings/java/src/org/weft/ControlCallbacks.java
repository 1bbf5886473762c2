package org.weft;

/**
 * The Java side of one {@link Graph#cond} or {@link Graph#whileLoop} call:
 * the JNI glue calls these methods from the C builder's callbacks, on the
 * thread that called the builder.  A lambda's exception cannot cross the C
 * frames, so it is kept here, reported to C as the callback's error status,
 * and attached as the cause of the builder's exception afterwards.
 */
final class ControlCallbacks {
  private final Graph graph;
  private final Graph.Branch thenBranch;
  private final Graph.Branch elseBranch;
  private final Graph.LoopCondition condition;
  private final Graph.LoopBody body;
  private Throwable failure;

  ControlCallbacks(Graph graph, Graph.Branch thenBranch, Graph.Branch elseBranch,
      Graph.LoopCondition condition, Graph.LoopBody body) {
    this.graph = graph;
    this.thenBranch = thenBranch;
    this.elseBranch = elseBranch;
    this.condition = condition;
    this.body = body;
  }

  /** Branch 1 (then) or 0 (else): (node, index) pairs, or null on failure. */
  long[] branch(int which, int count) {
    try {
      return pack((which != 0 ? thenBranch : elseBranch).build(), count, "branch");
    } catch (Throwable t) {
      return fail(t);
    }
  }

  long[] loopCondition(long[] nodes, int[] indices) {
    try {
      return pack(new Output[] {condition.build(outputs(nodes, indices))}, 1,
          "loop condition");
    } catch (Throwable t) {
      return fail(t);
    }
  }

  long[] loopBody(long[] nodes, int[] indices) {
    try {
      return pack(body.build(outputs(nodes, indices)), nodes.length, "loop body");
    } catch (Throwable t) {
      return fail(t);
    }
  }

  /** The C code for the kept failure: a WeftException's own, else UNKNOWN. */
  int failureCode() {
    return failure instanceof WeftException w ? w.code().value()
        : WeftException.Code.UNKNOWN.value();
  }

  String failureMessage() {
    if (failure instanceof WeftException w) {
      return w.statusMessage();
    }
    String m = failure.getMessage();
    return failure.getClass().getName() + (m == null ? "" : ": " + m);
  }

  /** Gives the builder's exception the lambda's as its cause. */
  RuntimeException withCause(RuntimeException e) {
    if (failure != null && e.getCause() == null && failure != e) {
      e.initCause(failure);
    }
    return e;
  }

  private long[] fail(Throwable t) {
    if (failure == null) {
      failure = t;
    }
    return null;
  }

  private Output[] outputs(long[] nodes, int[] indices) {
    Output[] vars = new Output[nodes.length];
    for (int i = 0; i < nodes.length; ++i) {
      vars[i] = new Output(new Node(graph, nodes[i]), indices[i]);
    }
    return vars;
  }

  private long[] pack(Output[] outs, int count, String what) {
    if (outs == null || outs.length != count) {
      throw new IllegalArgumentException("the " + what + " returned "
          + (outs == null ? "null" : outs.length + " outputs") + ", expected " + count);
    }
    long[] pairs = new long[2 * count];
    for (int i = 0; i < count; ++i) {
      if (outs[i] == null) {
        throw new IllegalArgumentException("the " + what + "'s output " + i + " is null");
      }
      pairs[2 * i] = outs[i].node().handleIn(graph);
      pairs[2 * i + 1] = outs[i].index();
    }
    return pairs;
  }
}
