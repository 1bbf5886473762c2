package org.weft;

import java.util.ArrayList;
import java.util.List;

/**
 * An op defined by the program, with a kernel and a gradient written in
 * Java (weft_op_register underneath).  Its name is namespaced,
 * {@code "MyLib>Cube"}, so it can never shadow an op of the runtime; its
 * inputs, outputs and attributes are written as the C API's schema strings:
 *
 * <pre>{@code
 * OpDefinition.named("MyLib>Cube")
 *     .input("x: T").outputLike("y: T", 0).attr("T: {float32, float64}")
 *     .kernel(call -> ...)                 // runs on the CPU devices
 *     .gradient((graph, node, dy) -> ...)  // builds d(input) from d(output)
 *     .register();
 * }</pre>
 *
 * <p>Ops live for the process: registering the same name again is refused
 * unless nothing differs (see weft_op_register), so define each op once,
 * in a static initializer for instance.
 */
public final class OpDefinition {
  /** A kernel: computes the outputs from the inputs of one node's run. */
  @FunctionalInterface
  public interface Kernel {
    /**
     * Returns one tensor per output, of the op's output dtypes (the runtime
     * copies them; the call closes them and the inputs afterwards).
     *
     * @param call the node's inputs and attributes
     * @return the outputs
     * @throws Exception any: it fails the run, naming the node (a WeftException keeps its code)
     */
    Tensor[] compute(KernelCall call) throws Exception;
  }

  /** A gradient: the gradients of a node's inputs from those of its outputs. */
  @FunctionalInterface
  public interface Gradient {
    /**
     * Builds, in {@code graph}, the gradient of each input of {@code node}
     * from {@code outputGradients} (an entry is null where no gradient
     * arrives: zeros); returns one Output per input, null for none.
     *
     * @param graph the graph to add the gradient's nodes to
     * @param node the node whose inputs need gradients
     * @param outputGradients the gradient of each output, or null
     * @return the gradient of each input, or null
     */
    Output[] build(Graph graph, Node node, Output[] outputGradients);
  }

  private final String name;
  private String summary = "";
  private final List<String> inputs = new ArrayList<>();
  private final List<String> outputs = new ArrayList<>();
  private final List<Integer> shapeLike = new ArrayList<>();
  private final List<String> attrs = new ArrayList<>();
  private boolean stateful;
  private Kernel kernel;
  private Gradient gradient;

  private OpDefinition(String name) {
    this.name = name;
  }

  /**
   * A definition of op {@code name} ("Namespace>Name").
   *
   * @param name the op's name
   * @return an empty definition
   */
  public static OpDefinition named(String name) {
    return new OpDefinition(name);
  }

  /**
   * What the op does, for {@link Weft#ops()} and error messages.
   *
   * @param text one line
   * @return this definition
   */
  public OpDefinition summary(String text) {
    summary = text;
    return this;
  }

  /**
   * An input, "name: TYPE" (a dtype or a dtype attribute).
   *
   * @param spec the schema string
   * @return this definition
   */
  public OpDefinition input(String spec) {
    inputs.add(spec);
    return this;
  }

  /**
   * An output whose static shape is unknown until it runs.
   *
   * @param spec the schema string, "name: TYPE"
   * @return this definition
   */
  public OpDefinition output(String spec) {
    return outputLike(spec, -1);
  }

  /**
   * An output with the static shape of input {@code input}.
   *
   * @param spec the schema string, "name: TYPE"
   * @param input which input's shape it has, from 0
   * @return this definition
   */
  public OpDefinition outputLike(String spec, int input) {
    outputs.add(spec);
    shapeLike.add(input);
    return this;
  }

  /**
   * An attribute, "name: KIND" or "name: KIND = DEFAULT".
   *
   * @param spec the schema string
   * @return this definition
   */
  public OpDefinition attr(String spec) {
    attrs.add(spec);
    return this;
  }

  /**
   * Whether the op has state or side effects: it is then never merged with
   * another node or folded into a constant.
   *
   * @param value true for a stateful op
   * @return this definition
   */
  public OpDefinition stateful(boolean value) {
    stateful = value;
    return this;
  }

  /**
   * The kernel, for the CPU devices.
   *
   * @param value the kernel
   * @return this definition
   */
  public OpDefinition kernel(Kernel value) {
    kernel = value;
    return this;
  }

  /**
   * The gradient, built as graph nodes.
   *
   * @param value the gradient builder
   * @return this definition
   */
  public OpDefinition gradient(Gradient value) {
    gradient = value;
    return this;
  }

  /** Adds the op (and its kernel) to the library; a WeftException says why not. */
  public void register() {
    int[] like = new int[shapeLike.size()];
    for (int i = 0; i < like.length; ++i) {
      like[i] = shapeLike.get(i);
    }
    Native.opRegister(name, summary, inputs.toArray(new String[0]),
        outputs.toArray(new String[0]), attrs.toArray(new String[0]), stateful, like, this,
        kernel != null, gradient != null);
  }

  // ---- called by the JNI glue ----

  /** Runs the kernel; owns the input handles (copies) from here on. */
  void runKernel(long call, long[] inputHandles) throws Exception {
    Tensor[] in = new Tensor[inputHandles.length];
    for (int i = 0; i < in.length; ++i) {
      in[i] = new Tensor(inputHandles[i], null);
    }
    Tensor[] out = null;
    try {
      out = kernel.compute(new KernelCall(call, in));
      if (out == null || out.length != outputs.size()) {
        throw new IllegalStateException(name + " kernel returned "
            + (out == null ? "null" : out.length + " tensors") + " for " + outputs.size()
            + " outputs");
      }
      for (int i = 0; i < out.length; ++i) {
        long h = out[i].acquire();
        try {
          Native.kernelSetOutput(call, i, h);
        } finally {
          out[i].release();
        }
      }
    } finally {
      for (Tensor t : in) {
        t.close();
      }
      if (out != null) {
        for (Tensor t : out) {
          if (t != null) {
            t.close();
          }
        }
      }
    }
  }

  /** Runs the gradient on the graph being differentiated on this thread. */
  long[] runGradient(long node, long[] dyPairs) {
    Graph graph = Graph.differentiating();
    if (graph == null) {
      throw new IllegalStateException("the gradient of " + name + " was asked for outside "
          + "Graph.gradients or Graph.minimize");
    }
    Node n = graph.nodeOf(node);
    Output[] dy = new Output[dyPairs.length / 2];
    for (int i = 0; i < dy.length; ++i) {
      dy[i] = dyPairs[2 * i] == 0 ? null
                                  : new Output(graph.nodeOf(dyPairs[2 * i]), (int) dyPairs[2 * i + 1]);
    }
    Output[] dx = gradient.build(graph, n, dy);
    int numInputs = n.inputs().size();
    if (dx == null || dx.length != numInputs) {
      throw new IllegalStateException("the gradient of " + name + " returned "
          + (dx == null ? "null" : dx.length + " outputs") + " for " + numInputs + " inputs");
    }
    long[] pairs = new long[2 * numInputs];
    for (int i = 0; i < numInputs; ++i) {
      if (dx[i] != null) {
        pairs[2 * i] = dx[i].node().handleIn(graph);
        pairs[2 * i + 1] = dx[i].index();
      }
    }
    return pairs;
  }
}
