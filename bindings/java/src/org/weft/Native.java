package org.weft;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.security.CodeSource;

/**
 * The JNI glue (libweft_jni.so): one static native method per C call the
 * binding makes.  Handles are the C pointers as longs; 0 is NULL.  A C error
 * status arrives as a thrown {@link WeftException}.  Every method accepts 0
 * handles without crashing (the C functions treat NULL as a no-op or an
 * error), though the Java classes never pass them.
 *
 * <p>The library is found, in order: at the path in the system property
 * {@value #LIBRARY_PROPERTY}; in the jar, when it carries the libraries for
 * this platform (the versioned jar does: {@link BundledNatives}); by {@link
 * System#loadLibrary} on {@code java.library.path}; next to the jar holding
 * this class (where {@code meson install} puts the unversioned one).
 */
final class Native {
  static final String LIBRARY_PROPERTY = "weft.jni.library";
  private static final String LIBRARY_NAME = "weft_jni";

  static {
    load();
  }

  private Native() {}

  /** Forces loading (and its errors) at a predictable point. */
  static void ensureLoaded() {}

  private static void load() {
    String path = System.getProperty(LIBRARY_PROPERTY);
    if (path != null && !path.isEmpty()) {
      System.load(new File(path).getAbsolutePath());
      return;
    }
    // Each failure is kept for the final error: the bundled copy's may be
    // the one that explains why nothing loaded.
    Throwable bundled = null;
    if (BundledNatives.present() && !BundledNatives.disabled()) {
      try {
        BundledNatives.load();
        return;
      } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
        bundled = e;
      }
    }
    UnsatisfiedLinkError onPath;
    try {
      System.loadLibrary(LIBRARY_NAME);
      return;
    } catch (UnsatisfiedLinkError e) {
      onPath = e;
    }
    File besideJar = besideJar();
    if (besideJar != null && besideJar.isFile()) {
      System.load(besideJar.getAbsolutePath());
      return;
    }
    UnsatisfiedLinkError error = new UnsatisfiedLinkError(
        "cannot find " + System.mapLibraryName(LIBRARY_NAME) + ": "
            + (bundled != null
                ? "the jar's libraries for " + BundledNatives.platform() + " failed ("
                    + bundled + ")"
                : !BundledNatives.present()
                ? "this jar carries no native libraries for " + BundledNatives.platform()
                : "the jar's libraries are turned off (-D" + BundledNatives.BUNDLED_PROPERTY
                    + "=false)")
            + "; set -D" + LIBRARY_PROPERTY
            + "=/path/to/" + System.mapLibraryName(LIBRARY_NAME)
            + ", add its directory to java.library.path, or put it next to the jar ("
            + (besideJar == null ? "location unknown" : besideJar.toString()) + ")");
    if (bundled != null) {
      error.addSuppressed(bundled);
    }
    error.addSuppressed(onPath);
    throw error;
  }

  private static File besideJar() {
    try {
      CodeSource source = Native.class.getProtectionDomain().getCodeSource();
      if (source == null || source.getLocation() == null) {
        return null;
      }
      File jar = new File(source.getLocation().toURI());
      return new File(jar.getParentFile(), System.mapLibraryName(LIBRARY_NAME));
    } catch (URISyntaxException | SecurityException | IllegalArgumentException e) {
      return null;
    }
  }

  // ---- tensors ----
  static native long tensorCreate(int dtype, long[] dims);
  /** Copies {@code byteSize} bytes of a primitive array. */
  static native long tensorFromArray(int dtype, long[] dims, Object array, long byteSize);
  /** Wraps a direct buffer's memory; holds a global reference until the deleter runs. */
  static native long tensorFromBuffer(int dtype, long[] dims, ByteBuffer buffer, long offset,
      long byteSize);
  static native long tensorCopyBuffer(int dtype, long[] dims, ByteBuffer buffer, long offset,
      long byteSize);
  static native void tensorDestroy(long tensor);
  /** {dtype, dims...}. */
  static native long[] tensorInfo(long tensor);
  static native void tensorToArray(long tensor, Object array, long byteSize);
  static native void tensorToBuffer(long tensor, ByteBuffer buffer, long offset, long byteSize);

  // ---- graphs ----
  static native long graphCreate();
  static native void graphDestroy(long graph);
  static native long opBegin(long graph, String opType, String name);
  static native void opAbandon(long builder);
  static native void opAddInput(long builder, long node, int index);
  static native void opAddInputList(long builder, long[] nodes, int[] indices);
  static native void opAddControlInput(long builder, long node);
  static native void opSetDevice(long builder, String device);
  static native void graphSetDevice(long graph, String device);
  static native void opSetAttrInt(long builder, String name, long value);
  static native void opSetAttrFloat(long builder, String name, double value);
  static native void opSetAttrBool(long builder, String name, boolean value);
  static native void opSetAttrDtype(long builder, String name, int dtype);
  static native void opSetAttrString(long builder, String name, String value);
  static native void opSetAttrIntList(long builder, String name, long[] values);
  static native void opSetAttrFloatList(long builder, String name, double[] values);
  static native void opSetAttrShape(long builder, String name, long[] dims, int rank);
  static native void opSetAttrTensor(long builder, String name, long tensor);
  /** Consumes the builder; returns the node. */
  static native long opFinish(long builder);
  static native long graphConstant(long graph, String name, long tensor);
  static native long graphPlaceholder(long graph, String name, int dtype, long[] dims, int rank);
  static native long graphApply(long graph, String opType, String name, long[] nodes,
      int[] indices);
  /** {value node, value index, initializer node}. */
  static native long[] graphVariable(long graph, String name, long node, int index);
  static native long graphNodeByName(long graph, String name);
  static native int graphNodeCount(long graph);
  static native long graphNodeAt(long graph, int index);
  static native String nodeName(long node);
  static native String nodeOpType(long node);
  static native String nodeDevice(long node);
  static native int nodeNumInputs(long node);
  /** {node, index}. */
  static native long[] nodeInput(long node, int index);
  static native int nodeNumControlInputs(long node);
  static native int nodeNumOutputs(long node);
  static native int outputDtype(long node, int index);
  /** The dims, or null for an unknown rank. */
  static native long[] outputShape(long node, int index);

  // ---- control flow (control.c); `callbacks` is a ControlCallbacks ----
  /** {node, index} per output. */
  static native long[] cond(long graph, String name, long predNode, int predIndex,
      ControlCallbacks callbacks, int numOutputs);
  /** {node, index} per loop variable; {@code shapes} null, or one dims array
   * per variable (null for an unknown rank). */
  static native long[] whileLoop(long graph, ControlCallbacks callbacks, long[] nodes,
      int[] indices, String name, int parallelIterations, long maximumIterations,
      long[][] shapes);

  // ---- training ----
  /** {node, index} per x; node 0 for "no gradient". */
  static native long[] gradients(long graph, long[] yNodes, int[] yIndices, long[] xNodes,
      int[] xIndices, long[] gradYNodes, int[] gradYIndices);
  static native int opGradientStatus(String opType);
  static native void variableSetTrainable(long graph, long node, boolean trainable);
  static native long[] graphTrainableVariables(long graph);
  static native long graphInitializeAll(long graph, String name);
  /** {learning rate, momentum, nesterov (0/1), beta1, beta2, epsilon}. */
  static native double[] optimizerDefaults(int kind);
  static native long minimize(long graph, long lossNode, int lossIndex, int kind,
      double learningRate, double momentum, boolean nesterov, double beta1, double beta2,
      double epsilon, boolean dataParallel, long bucketBytes, String name);
  static native long broadcastVariables(long graph, int root, String name);
  static native int[] clusterWorld();
  static native void clusterAbort(int code);
  static native void checkpointSave(long session, String path, long[] variables);
  static native void checkpointRestore(long session, String path, long[] variables);

  // ---- sessions ----
  static native long sessionCreate(long graph, String devices, int interOpThreads,
      int intraOpThreads, int placement, int transferPrecision, int optimizations,
      String deviceGflops, int recompute, String cluster, String servingJobs);
  static native void sessionDestroy(long session);
  static native void sessionServe(long session);
  /** The fetched tensors' handles. */
  static native long[] sessionRun(long session, long[] feedNodes, int[] feedIndices,
      long[] feedTensors, long[] fetchNodes, int[] fetchIndices, long[] targets,
      long metadata, long timeoutMillis);
  static native int sessionCancel(long session);
  static native long metadataCreate();
  static native void metadataDestroy(long metadata);
  static native int metadataNumNodes(long metadata);
  /** {name, op, device, reason}. */
  static native String[] metadataNode(long metadata, int index);
  static native String metadataDeviceOf(long metadata, String nodeName);
  static native int metadataNumTransfers(long metadata);
  /** {value, source device, destination device}. */
  static native String[] metadataTransfer(long metadata, int index);
  /** {wire dtype, bytes}. */
  static native long[] metadataTransferSize(long metadata, int index);
  static native int metadataNumMerged(long metadata);
  /** {removed, kept}. */
  static native String[] metadataMerged(long metadata, int index);
  static native int metadataNumDevices(long metadata);
  static native String metadataDeviceName(long metadata, int index);
  static native long metadataPeakBytes(long metadata, int index);
  static native String metadataToString(long metadata);

  // ---- queue runners (jni/queue_runner.c) ----
  static native long queueRunnerStart(long session, long enqueue, int numThreads, long close);
  /** The first error a runner thread met, returned (not thrown); null while none. */
  static native WeftException queueRunnerError(long runner);
  /** Stops and frees the runner; throws the first error a thread met. */
  static native void queueRunnerStop(long runner, long cancel);

  // ---- TensorBoard summaries (jni/summary.c); strings as UTF-8 bytes ----
  static native long summaryWriterCreate(byte[] logdir, byte[] suffix);
  static native void summaryWriterDestroy(long writer);
  static native void summaryWriterClose(long writer);
  static native void summaryWriterFlush(long writer);
  static native String summaryWriterPath(long writer);
  static native void summaryWriterAddScalar(long writer, byte[] tag, long step, double value);
  /** kind 0: a histogram of the tensor's values; 1: images (maxImages). */
  static native void summaryWriterAddTensor(long writer, int kind, byte[] tag, long step,
      long tensor, long maxImages);
  static native void summaryWriterAddText(long writer, byte[] tag, long step, byte[] text);
  static native void summaryWriterAddSummary(long writer, long step, long tensor);
  static native void summaryWriterAddGraph(long writer, long graph, long metadata);
  static native void summaryWriterAddRestart(long writer, long step, byte[] checkpoint);

  // ---- datasets (jni/dataset.c); each maker returns the new dataset ----
  static native void datasetDestroy(long dataset);
  static native int datasetNumComponents(long dataset);
  static native int datasetComponentDtype(long dataset, int index);
  static native String datasetName(long dataset);
  static native long datasetFromTensorSlices(long[] tensors);
  static native long datasetRange(long start, long stop, long step);
  static native long datasetTfRecord(String[] paths, String compression);
  static native long datasetTextLines(String[] paths);
  static native long datasetIdx(String path);
  static native long datasetFixedLengthRecords(String[] paths, long headerBytes,
      long recordBytes, long footerBytes, String compression);
  static native long datasetZip(long[] datasets);
  /** {@code callback} is kept by a global reference until C releases it. */
  static native long datasetInterleave(long input, InterleaveCallback callback, int[] dtypes,
      long cycleLength, long blockLength, int numParallelCalls);
  static native long datasetMap(long input, long fn, long[] inputNodes, int[] inputIndices,
      long[] outputNodes, int[] outputIndices, int numParallelCalls);
  static native long datasetFilter(long input, long fn, long[] inputNodes, int[] inputIndices,
      long predicateNode, int predicateIndex);
  static native long datasetShuffle(long input, long bufferSize, long seed);
  static native long datasetBatch(long input, long batchSize, boolean dropRemainder);
  static native long datasetPaddedBatch(long input, long batchSize, boolean dropRemainder);
  static native long datasetRepeat(long input, long count);
  static native long datasetTake(long input, long count);
  static native long datasetSkip(long input, long count);
  static native long datasetPrefetch(long input, long bufferSize);
  static native void tfRecordWrite(String path, String compression, long[] records);
  /** {node, index} per component, then the init node (0 when not asked for). */
  static native long[] datasetIterator(long graph, String name, long dataset, boolean withInit);

  // ---- the runtime: versions, plugins, devices, ops ----
  static native String versionString();
  static native int abiVersion();
  /** {min, max}, packed. */
  static native int[] pluginInterfaceRange();
  static native void pluginsDiscover();
  static native void pluginLoad(String path);
  static native int pluginCount();
  static native PluginInfo pluginDescribe(int index);
  static native int pluginRefusalCount();
  static native PluginRefusal pluginRefusal(int index);
  static native int deviceCount();
  static native DeviceInfo deviceDescribe(int index);
  static native int opCount();
  static native OpInfo opDescribe(int index);

  // ---- ops defined in Java (jni/ops.c) ----
  static native void opRegister(String name, String summary, String[] inputs, String[] outputs,
      String[] attrs, boolean stateful, int[] shapeLike, OpDefinition definition,
      boolean hasKernel, boolean hasGradient);
  static native void kernelSetOutput(long call, int index, long tensor);
  static native double kernelAttrFloat(long call, String name);
  static native long kernelAttrInt(long call, String name);

  // ---- model files (jni/model.c) ----
  static native long modelLoad(String path, String format, String[] graphdefOutputs,
      String devices, int interOpThreads, int intraOpThreads, int placement,
      int transferPrecision, int optimizations, String deviceGflops, int recompute);
  /** counts: per signature, its input count then its output count. */
  static native long modelCreate(long graph, long session, String[] names, int[] counts,
      String[] keys, long[] nodes, int[] indices);
  static native void modelDestroy(long model);
  static native void modelSave(long model, String dir);
  static native void modelExportOnnx(long model, String signature, String path);
  static native String[] modelSignatures(long model);
  static native String[] modelSignatureKeys(long model, String signature, boolean outputs);
  static native long[] modelRun(long model, String signature, String[] inputKeys,
      long[] tensors, String[] outputKeys);
}
