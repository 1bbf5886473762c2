package org.weft;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs a graph on a set of devices and holds the state that lives across
 * runs (variables).
 *
 * <pre>{@code
 * try (Session s = new Session(graph);
 *      Session.Result r = s.runner().feed(x, input).fetch(y).run()) {
 *   float[] values = r.get(0).toFloatArray();
 * }
 * }</pre>
 *
 * <p>Threads: {@link #run} and the runners may be used from many threads at
 * once on one session.  Closing waits for no one: runs in flight finish and
 * the native session is freed after the last.  The session's graph must stay
 * open while the session runs (its nodes name the feeds and fetches).
 */
public final class Session extends NativeObject {
  private final Graph graph;

  /**
   * A session over {@code graph} with the default options.
   *
   * @param graph the graph it runs; keep it open while the session is
   */
  public Session(Graph graph) {
    this(graph, new SessionOptions());
  }

  /**
   * A session over {@code graph}.
   *
   * @param graph the graph it runs; keep it open while the session is
   * @param options its options
   */
  public Session(Graph graph, SessionOptions options) {
    super(create(graph, options), Native::sessionDestroy);
    this.graph = graph;
  }

  private static long create(Graph graph, SessionOptions options) {
    long g = graph.acquire();
    try {
      return options.create(g);
    } finally {
      graph.release();
    }
  }

  /**
   * The graph this session runs.
   *
   * @return the graph
   */
  public Graph graph() {
    return graph;
  }

  /**
   * A new runner: feeds, fetches and targets for one run (or many).
   *
   * @return an empty runner
   */
  public Runner runner() {
    return new Runner();
  }

  /**
   * Runs {@code targets} for their effect.
   *
   * @param targets the nodes to run
   */
  public void run(Node... targets) {
    Runner r = runner();
    for (Node t : targets) {
      r.target(t);
    }
    r.run().close();
  }

  /**
   * Runs the graph: {@code feeds[i]} replaced by {@code feedValues[i]}
   * (which must not be written until the call returns), the values of
   * {@code fetches} returned, {@code targets} run for their effect, and
   * {@code metadata} (may be null) filled.
   *
   * @param feeds the outputs to replace
   * @param feedValues their values, one per feed
   * @param fetches the outputs whose values to return
   * @param targets the nodes to run for their effect
   * @param metadata filled with what the run did, or null
   * @return the fetched values, in order
   */
  public Result run(Output[] feeds, Tensor[] feedValues, Output[] fetches, Node[] targets,
      RunMetadata metadata) {
    return run(feeds, feedValues, fetches, targets, metadata, 0);
  }

  /**
   * As {@link #run(Output[], Tensor[], Output[], Node[], RunMetadata)}, ending the run with
   * a {@link WeftException} of code DEADLINE_EXCEEDED when it is still going after
   * {@code timeoutMillis} (0: no deadline): a dequeue waiting on an empty queue, say.
   *
   * @param feeds the outputs to replace
   * @param feedValues their values, one per feed
   * @param fetches the outputs whose values to return
   * @param targets the nodes to run for their effect
   * @param metadata filled with what the run did, or null
   * @param timeoutMillis the deadline; 0 for none
   * @return the fetched values, in order
   */
  public Result run(Output[] feeds, Tensor[] feedValues, Output[] fetches, Node[] targets,
      RunMetadata metadata, long timeoutMillis) {
    if (timeoutMillis < 0) {
      throw new IllegalArgumentException("timeoutMillis is " + timeoutMillis);
    }
    if (feeds.length != feedValues.length) {
      throw new IllegalArgumentException(feeds.length + " feeds but " + feedValues.length
          + " values");
    }
    long[] feedNodes = new long[feeds.length];
    int[] feedIndices = new int[feeds.length];
    long[] feedTensors = new long[feeds.length];
    long[] fetchNodes = new long[fetches.length];
    int[] fetchIndices = new int[fetches.length];
    long[] targetNodes = new long[targets.length];
    int acquired = 0;
    long s = acquire();
    graph.acquire();
    try {
      Graph.unpack(graph, feeds, feedNodes, feedIndices);
      Graph.unpack(graph, fetches, fetchNodes, fetchIndices);
      for (int i = 0; i < targets.length; ++i) {
        targetNodes[i] = targets[i].handleIn(graph);
      }
      for (; acquired < feedValues.length; ++acquired) {
        feedTensors[acquired] = feedValues[acquired].acquire();
      }
      long metadataHandle = 0;
      if (metadata != null) {
        metadataHandle = metadata.acquire();
      }
      try {
        long[] out = Native.sessionRun(s, feedNodes, feedIndices, feedTensors, fetchNodes,
            fetchIndices, targetNodes, metadataHandle, timeoutMillis);
        return new Result(fetches, out);
      } finally {
        if (metadata != null) {
          metadata.release();
        }
      }
    } finally {
      for (int i = 0; i < acquired; ++i) {
        feedValues[i].release();
      }
      graph.release();
      release();
    }
  }

  /**
   * On a serving task of an asynchronous cluster ({@link SessionOptions#servingJobs}):
   * executes this task's part of the other tasks' runs until each has closed its
   * session.  Initialize what this task holds first, with runs of its own.  Throws a
   * {@link WeftException} (UNAVAILABLE) naming tasks that stopped answering without
   * closing theirs, or (FAILED_PRECONDITION) when this task does not serve.
   */
  public void serve() {
    long s = acquire();
    try {
      Native.sessionServe(s);
    } finally {
      release();
    }
  }

  /**
   * Ends every run of this session in flight on other threads with a {@link WeftException}
   * of code CANCELLED; later runs are not affected.  Returns how many runs it reached.
   *
   * @return the number of runs cancelled
   */
  public int cancel() {
    long s = acquire();
    try {
      return Native.sessionCancel(s);
    } finally {
      release();
    }
  }

  /**
   * Saves the values of {@code variables} (none given: every initialized one).
   *
   * @param path the checkpoint file
   * @param variables the Variable nodes to save
   */
  public void saveCheckpoint(String path, Node... variables) {
    checkpoint(true, path, variables);
  }

  /**
   * Restores {@code variables} (none given: every variable the file holds),
   * initializing them; nothing changes unless all restore.
   *
   * @param path the checkpoint file
   * @param variables the Variable nodes to restore
   */
  public void restoreCheckpoint(String path, Node... variables) {
    checkpoint(false, path, variables);
  }

  private void checkpoint(boolean save, String path, Node[] variables) {
    long[] nodes = new long[variables.length];
    long s = acquire();
    graph.acquire();
    try {
      for (int i = 0; i < variables.length; ++i) {
        nodes[i] = variables[i].handleIn(graph);
      }
      if (save) {
        Native.checkpointSave(s, path, nodes);
      } else {
        Native.checkpointRestore(s, path, nodes);
      }
    } finally {
      graph.release();
      release();
    }
  }

  /**
   * What one run needs: collect feeds, fetches and targets, then {@link
   * #run()} (as often as wanted).  A runner belongs to one thread at a time.
   */
  public final class Runner {
    private final List<Output> feeds = new ArrayList<>();
    private final List<Tensor> feedValues = new ArrayList<>();
    private final List<Output> fetches = new ArrayList<>();
    private final List<Node> targets = new ArrayList<>();
    private RunMetadata metadata;
    private long timeoutMillis;

    /**
     * Ends the run with DEADLINE_EXCEEDED after {@code millis} (0: no deadline).
     *
     * @param millis the deadline in milliseconds
     * @return this runner
     */
    public Runner timeout(long millis) {
      timeoutMillis = millis;
      return this;
    }

    /**
     * Replaces {@code output} by {@code value} in the run.
     *
     * @param output the output to replace
     * @param value its value; not to be written until the run returns
     * @return this runner
     */
    public Runner feed(Output output, Tensor value) {
      feeds.add(output);
      feedValues.add(value);
      return this;
    }

    /**
     * Feeds output 0 of the node called {@code name}.
     *
     * @param name the node's name
     * @param value its value; not to be written until the run returns
     * @return this runner
     */
    public Runner feed(String name, Tensor value) {
      return feed(named(name).output(0), value);
    }

    /**
     * Returns the value of {@code output}, after those fetched before.
     *
     * @param output the output
     * @return this runner
     */
    public Runner fetch(Output output) {
      fetches.add(output);
      return this;
    }

    /**
     * Returns the value of output 0 of the node called {@code name}.
     *
     * @param name the node's name
     * @return this runner
     */
    public Runner fetch(String name) {
      return fetch(named(name).output(0));
    }

    /**
     * Runs {@code node} for its effect.
     *
     * @param node the node
     * @return this runner
     */
    public Runner target(Node node) {
      targets.add(node);
      return this;
    }

    /**
     * Runs the node called {@code name} for its effect.
     *
     * @param name the node's name
     * @return this runner
     */
    public Runner target(String name) {
      return target(named(name));
    }

    /**
     * Fills {@code value} with what the run did (placement, transfers, memory).
     *
     * @param value the metadata object
     * @return this runner
     */
    public Runner metadata(RunMetadata value) {
      metadata = value;
      return this;
    }

    private Node named(String name) {
      Node node = graph.node(name);
      if (node == null) {
        throw new IllegalArgumentException("the graph has no node '" + name + "'");
      }
      return node;
    }

    /**
     * Runs the graph once with these feeds, fetches and targets; the runner
     * may run again.
     *
     * @return the fetched values, in the order of the fetches
     */
    public Result run() {
      return Session.this.run(feeds.toArray(new Output[0]), feedValues.toArray(new Tensor[0]),
          fetches.toArray(new Output[0]), targets.toArray(new Node[0]), metadata,
          timeoutMillis);
    }
  }

  /**
   * The fetched values of one run, in the order of the fetches.  Closing it
   * closes every tensor it holds, unless taken out with {@link #take}.
   */
  public static final class Result implements AutoCloseable {
    private final Output[] fetches;
    private final Tensor[] tensors;

    Result(Output[] fetches, long[] handles) {
      this.fetches = fetches;
      this.tensors = new Tensor[handles.length];
      for (int i = 0; i < handles.length; ++i) {
        tensors[i] = new Tensor(handles[i], null);
      }
    }

    /**
     * The number of fetched values.
     *
     * @return how many values it holds
     */
    public int size() {
      return tensors.length;
    }

    /**
     * The value of fetch {@code index}, owned by this result.
     *
     * @param index which fetch, from 0
     * @return its value
     */
    public Tensor get(int index) {
      Tensor t = tensors[index];
      if (t == null) {
        throw new IllegalStateException("value " + index + " was taken out of the result");
      }
      t.checkOpen();
      return t;
    }

    /**
     * The value of {@code fetch} (the first fetch of it).
     *
     * @param fetch one of the run's fetches
     * @return its value
     */
    public Tensor get(Output fetch) {
      int i = Arrays.asList(fetches).indexOf(fetch);
      if (i < 0) {
        throw new IllegalArgumentException(fetch + " was not fetched");
      }
      return get(i);
    }

    /**
     * Takes value {@code index} out: the caller now closes it.
     *
     * @param index which fetch, from 0
     * @return its value, which the caller closes
     */
    public Tensor take(int index) {
      Tensor t = get(index);
      tensors[index] = null;
      return t;
    }

    @Override
    public void close() {
      for (Tensor t : tensors) {
        if (t != null) {
          t.close();
        }
      }
    }
  }
}
