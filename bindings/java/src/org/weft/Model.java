package org.weft;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model in a file: a graph with its variables and named signatures,
 * written by any program that uses Weft (C, Java, Julia) and served here.
 *
 * <pre>{@code
 * try (Model m = Model.load("fashion-mnist-mlp-model");
 *      Model.Result r = m.run(Map.of("images", batch))) {
 *   int[] classes = r.get("classes").toIntArray();
 * }
 * }</pre>
 *
 * <p>{@link #load} reads a bundle directory, a Weft graph file, an ONNX
 * model ({@code .onnx}) or a frozen TensorFlow GraphDef ({@code .pb});
 * {@link #create} describes a graph built here so that {@link #save} can
 * write it.  Threads: {@link #run} may be called from many threads at once.
 */
public final class Model extends NativeObject {
  static {
    Native.ensureLoaded();
  }

  /* A model made here borrows its graph and session: kept reachable (and
   * acquired during calls) so neither is freed under the native model. */
  private final Graph graph;
  private final Session session;

  private Model(long handle, Graph graph, Session session) {
    super(handle, Native::modelDestroy);
    this.graph = graph;
    this.session = session;
  }

  /**
   * Loads the model at {@code path} with default session options.
   *
   * @param path the file or bundle directory
   * @return the model, ready to run
   */
  public static Model load(String path) {
    return load(path, new SessionOptions());
  }

  /**
   * Loads the model at {@code path} into a session with {@code options}.
   *
   * @param path the file or bundle directory
   * @param options the options of its session
   * @return the model, ready to run
   */
  public static Model load(String path, SessionOptions options) {
    return new Model(options.loadModel(path, null, null), null, null);
  }

  /**
   * Loads a file of another format ("weft", "onnx", "graphdef"; null: by
   * the path).  For a GraphDef, {@code graphdefOutputs} names the nodes its
   * signature fetches (none: every node whose outputs nothing reads).
   *
   * @param path the file or bundle directory
   * @param format "weft", "onnx", "graphdef", or null
   * @param options the options of its session
   * @param graphdefOutputs the GraphDef nodes to fetch
   * @return the model, ready to run
   */
  public static Model load(String path, String format, SessionOptions options,
      String... graphdefOutputs) {
    return new Model(options.loadModel(path, format, graphdefOutputs), null, null);
  }

  /**
   * Describes a graph built in this program, for {@link #save}: {@code
   * session} (may be null when there are no variables) holds the values
   * saved.  Close the model before the graph and the session.
   *
   * @param graph the graph
   * @param session the session with the variables' values, or null
   * @param signatures how the model is called
   * @return the model
   */
  public static Model create(Graph graph, Session session, Signature... signatures) {
    List<String> names = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    List<Output> outputs = new ArrayList<>();
    int[] counts = new int[2 * signatures.length];
    for (int i = 0; i < signatures.length; ++i) {
      Signature s = signatures[i];
      names.add(s.name());
      counts[2 * i] = s.inputs().size();
      counts[2 * i + 1] = s.outputs().size();
      for (Map.Entry<String, Output> e : s.inputs().entrySet()) {
        keys.add(e.getKey());
        outputs.add(e.getValue());
      }
      for (Map.Entry<String, Output> e : s.outputs().entrySet()) {
        keys.add(e.getKey());
        outputs.add(e.getValue());
      }
    }
    Output[] all = outputs.toArray(new Output[0]);
    long[] nodes = new long[all.length];
    int[] indices = new int[all.length];
    long g = graph.acquire();
    try {
      long s = session == null ? 0 : session.acquire();
      try {
        if (session != null && session.graph() != graph) {
          throw new IllegalArgumentException("the session runs another graph");
        }
        Graph.unpack(graph, all, nodes, indices);
        long handle = Native.modelCreate(g, s, names.toArray(new String[0]), counts,
            keys.toArray(new String[0]), nodes, indices);
        return new Model(handle, graph, session);
      } finally {
        if (session != null) {
          session.release();
        }
      }
    } finally {
      graph.release();
    }
  }

  /**
   * Writes the model as a bundle in directory {@code dir} (replacing a bundle there).
   *
   * @param dir the bundle's directory
   */
  public void save(String dir) {
    callVoid(m -> Native.modelSave(m, dir));
  }

  /**
   * Writes signature {@code signature} (null: the default) as an ONNX model.
   *
   * @param signature the signature, or null
   * @param path the ONNX file
   */
  public void exportOnnx(String signature, String path) {
    callVoid(m -> Native.modelExportOnnx(m, signature, path));
  }

  /**
   * The signatures' names.
   *
   * @return the names
   */
  public List<String> signatures() {
    String[] names = call(m -> Native.modelSignatures(m));
    return Arrays.asList(names);
  }

  /**
   * The input keys of {@code signature} (null: the default), in order.
   *
   * @param signature the signature, or null
   * @return the keys
   */
  public List<String> inputKeys(String signature) {
    return Arrays.asList(call(m -> Native.modelSignatureKeys(m, signature, false)));
  }

  /**
   * The output keys of {@code signature} (null: the default), in order.
   *
   * @param signature the signature, or null
   * @return the keys
   */
  public List<String> outputKeys(String signature) {
    return Arrays.asList(call(m -> Native.modelSignatureKeys(m, signature, true)));
  }

  /**
   * Runs the default signature: every output, in signature order.
   *
   * @param inputs a value for each input key
   * @return the outputs, by key
   */
  public Result run(Map<String, Tensor> inputs) {
    return run(null, inputs);
  }

  /**
   * Runs {@code signature} (null: the default), feeding {@code inputs} by
   * key and fetching {@code outputKeys} (none: every output).
   *
   * @param signature the signature, or null
   * @param inputs a value for each input key
   * @param outputKeys the outputs to fetch
   * @return the outputs, by key
   */
  public Result run(String signature, Map<String, Tensor> inputs, String... outputKeys) {
    String[] inKeys = inputs.keySet().toArray(new String[0]);
    Tensor[] values = new Tensor[inKeys.length];
    for (int i = 0; i < inKeys.length; ++i) {
      values[i] = inputs.get(inKeys[i]);
      if (values[i] == null) {
        throw new IllegalArgumentException("input '" + inKeys[i] + "' is null");
      }
    }
    String[] outKeys = outputKeys.length > 0 ? outputKeys
        : outputKeys(signature).toArray(new String[0]);
    long[] tensors = new long[values.length];
    return call(m -> {
      int acquired = 0;
      try {
        for (; acquired < values.length; ++acquired) {
          tensors[acquired] = values[acquired].acquire();
        }
        return new Result(outKeys, Native.modelRun(m, signature, inKeys, tensors, outKeys));
      } finally {
        for (int i = 0; i < acquired; ++i) {
          values[i].release();
        }
      }
    });
  }

  private interface NativeCall<T> {
    T run(long model);
  }

  private interface NativeVoid {
    void run(long model);
  }

  /* Runs a native call on this model, with it (and the graph and session a
   * model made here borrows) acquired for the call. */
  private <T> T call(NativeCall<T> body) {
    long m = acquire();
    try {
      if (graph != null) {
        graph.acquire();
      }
      try {
        if (session != null) {
          session.acquire();
        }
        try {
          return body.run(m);
        } finally {
          if (session != null) {
            session.release();
          }
        }
      } finally {
        if (graph != null) {
          graph.release();
        }
      }
    } finally {
      release();
    }
  }

  private void callVoid(NativeVoid body) {
    call(m -> {
      body.run(m);
      return null;
    });
  }

  /**
   * The outputs of one run, by key.  Closing it closes every tensor it
   * holds, unless taken out with {@link #take}.
   */
  public static final class Result implements AutoCloseable {
    private final Map<String, Tensor> tensors = new LinkedHashMap<>();

    Result(String[] keys, long[] handles) {
      for (int i = 0; i < keys.length; ++i) {
        tensors.put(keys[i], new Tensor(handles[i], null));
      }
    }

    /**
     * The output keys this result holds.
     *
     * @return the keys, in the order of the run
     */
    public List<String> keys() {
      return new ArrayList<>(tensors.keySet());
    }

    /**
     * The value of output {@code key}, owned by this result.
     *
     * @param key an output key
     * @return its value
     */
    public Tensor get(String key) {
      Tensor t = tensors.get(key);
      if (t == null) {
        throw new IllegalArgumentException("no output '" + key + "' in this result");
      }
      t.checkOpen();
      return t;
    }

    /**
     * Takes output {@code key} out: the caller now closes it.
     *
     * @param key an output key
     * @return its value, which the caller closes
     */
    public Tensor take(String key) {
      Tensor t = get(key);
      tensors.remove(key);
      return t;
    }

    @Override
    public void close() {
      for (Tensor t : tensors.values()) {
        t.close();
      }
    }
  }
}
