package org.weft;

/**
 * Options of a {@link Session} (weft_session_options).  Unset strings mean
 * the environment decides (WEFT_DEVICES, WEFT_DEVICE_GFLOPS); 0 threads
 * means the core count.
 */
public final class SessionOptions {
  /** What happens to a node constrained to a device without a kernel for it. */
  public enum Placement {
    /** It goes to another allowed device; the run metadata says so. */
    SOFT,
    /** An error naming the node, its op and the device. */
    STRICT
  }

  /** How float32 values cross from one device to another. */
  public enum TransferPrecision {
    /** As they are: 4 bytes each (the default). */
    EXACT,
    /** Narrowed to bfloat16 on the wire (about 3 significant digits). */
    BFLOAT16,
    /** Narrowed to IEEE float16 (range +-65504). */
    FLOAT16
  }

  /**
   * Memory by recomputation: values the gradient reads are dropped after
   * the forward pass and computed again in the backward pass.
   */
  public enum Recompute {
    /** Off (unless WEFT_RECOMPUTE says otherwise). */
    OFF,
    /** Cheap ops (element-wise, BiasAdd, pooling), chosen by the cost model. */
    CHEAP
  }

  /** Merge identical ops over identical inputs. */
  public static final int OPTIMIZE_CSE = 1;
  /** Run nodes as late as their consumers allow, so values live briefly. */
  public static final int OPTIMIZE_MEMORY_SCHEDULE = 2;
  /** Fuse Conv2D, BiasAdd and Relu chains into FusedConv2D. */
  public static final int OPTIMIZE_FUSION = 4;
  /** Every optimization, those of later versions too (the default). */
  public static final int OPTIMIZE_ALL = 0xffffffff;

  private String devices;
  private int interOpThreads;
  private int intraOpThreads;
  private Placement placement = Placement.SOFT;
  private TransferPrecision transferPrecision = TransferPrecision.EXACT;
  private int optimizations = OPTIMIZE_ALL;
  private String deviceGflops;
  private Recompute recompute = Recompute.OFF;
  private String cluster;
  private String servingJobs;

  /**
   * Devices the session may use: a comma-separated list of names or
   * patterns ("/device:CPU:0", "/device:OPENCL:*", "CPU").
   *
   * @param value the list
   * @return these options
   */
  public SessionOptions devices(String value) {
    devices = value;
    return this;
  }

  /**
   * Threads running independent nodes at once; 0 picks the core count when
   * kernels run on one thread, and 1 when they may use several.
   *
   * @param value the thread count
   * @return these options
   */
  public SessionOptions interOpThreads(int value) {
    interOpThreads = value;
    return this;
  }

  /**
   * Threads a single kernel may use; 0 picks the core count.
   *
   * @param value the thread count
   * @return these options
   */
  public SessionOptions intraOpThreads(int value) {
    intraOpThreads = value;
    return this;
  }

  /**
   * Both thread counts.
   *
   * @param value the thread count
   * @return these options
   */
  public SessionOptions threads(int value) {
    return interOpThreads(value).intraOpThreads(value);
  }

  /**
   * What happens to a node whose device constraint has no kernel for it.
   *
   * @param value SOFT (the default) or STRICT
   * @return these options
   */
  public SessionOptions placement(Placement value) {
    placement = value;
    return this;
  }

  /**
   * How float32 values cross between devices.
   *
   * @param value EXACT (the default) or a narrower type
   * @return these options
   */
  public SessionOptions transferPrecision(TransferPrecision value) {
    transferPrecision = value;
    return this;
  }

  /**
   * OPTIMIZE_* bits.
   *
   * @param bits a set of OPTIMIZE_* bits; 0 for none
   * @return these options
   */
  public SessionOptions optimizations(int bits) {
    optimizations = bits;
    return this;
  }

  /**
   * Compute estimates in GFLOP/s per device pattern: "OPENCL=500,CPU=20".
   *
   * @param value the list
   * @return these options
   */
  public SessionOptions deviceGflops(String value) {
    deviceGflops = value;
    return this;
  }

  /**
   * A cluster session under mpirun: the jobs of the MPI job
   * ("ps:1,worker:3", one task per rank; "worker" is every rank).  Device
   * constraints may then name tasks ({@link Graph#setDevice}); each rank
   * runs its task's nodes and values crossing tasks go over MPI.  Every
   * rank builds the same graph and makes the same runs.  Sessions only
   * (models load into a session of their own process).
   *
   * @param value the jobs
   * @return these options
   */
  public SessionOptions cluster(String value) {
    cluster = value;
    return this;
  }

  /**
   * With {@link #cluster}: an asynchronous cluster whose named jobs ("ps")
   * serve ({@link Session#serve}), as parameter servers do, while every other
   * task runs on its own, at its own pace.  Nodes constrained to a serving job
   * run there; the rest on the task that makes the run.
   *
   * @param value the serving jobs, comma-separated
   * @return these options
   */
  public SessionOptions servingJobs(String value) {
    servingJobs = value;
    return this;
  }

  /**
   * Which values to recompute in the backward pass instead of keeping.
   *
   * @param value OFF (the default) or CHEAP
   * @return these options
   */
  public SessionOptions recompute(Recompute value) {
    recompute = value;
    return this;
  }

  long create(long graph) {
    return Native.sessionCreate(graph, devices, interOpThreads, intraOpThreads,
        placement.ordinal(), transferPrecision.ordinal(), optimizations, deviceGflops,
        recompute.ordinal(), cluster, servingJobs);
  }

  /** Loads a model into a session made with these options (Model.load). */
  long loadModel(String path, String format, String[] graphdefOutputs) {
    return Native.modelLoad(path, format, graphdefOutputs, devices, interOpThreads,
        intraOpThreads, placement.ordinal(), transferPrecision.ordinal(), optimizations,
        deviceGflops, recompute.ordinal());
  }
}
