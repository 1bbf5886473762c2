package org.weft;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * An input pipeline: an immutable description of a stream of elements, each
 * a tuple of tensors (its components), read inside a graph through {@link
 * #iterator} (weft/dataset.h).
 *
 * <pre>{@code
 * try (Dataset images = Dataset.fromTensorSlices(x, y);
 *      Dataset batches = images.shuffle(10_000, 42).batch(32, true).prefetch(2)) {
 *   DatasetIterator it = batches.iterator(graph, "train");
 *   // it.component(0), it.component(1) feed the model; a run past the end
 *   // throws a WeftException of code OUT_OF_RANGE; run it.init() to start again.
 * }
 * }</pre>
 *
 * <p>A source (tensor slices, a range, TFRecord, text, IDX or fixed-length
 * record files) is followed by transformations; each returns a new dataset
 * and leaves its input usable.  Closing a dataset releases only its own handle: datasets
 * made from it and graphs that read it keep what they need, so it may be
 * closed as soon as nothing more is made from it.  The handles of the
 * intermediate datasets of a fluent chain are small (a reference to the
 * shared description); close them when it matters, or the {@link
 * java.lang.ref.Cleaner} releases them.
 *
 * <p>Errors: a refused argument throws a {@link WeftException} when the
 * dataset is made; errors of the data (a missing file, a bad record, a map
 * function that fails) come from the run that reads the element, naming the
 * dataset ("Batch(Map(TFRecord))") and, for files, the file and record.
 *
 * <p>Threads: every method may be called from any thread.
 */
public final class Dataset extends NativeObject {
  static {
    Native.ensureLoaded();
  }

  /** Builds a map function in {@code fn} from the placeholders {@code components}. */
  @FunctionalInterface
  public interface MapFunction {
    /**
     * The new element's components, outputs of {@code fn}.
     *
     * @param fn the new function graph to build in
     * @param components its Placeholders, one per component
     * @return the new element's components
     */
    Output[] build(Graph fn, Output[] components);
  }

  /**
   * Makes the dataset of one input element of {@link #interleave}, such as
   * the records of the file an element names.
   */
  @FunctionalInterface
  public interface InterleaveFunction {
    /**
     * A new dataset for {@code element} (its components, which this call
     * owns and which are closed when it returns; a path is a UINT8 vector of
     * its bytes).  The interleave takes the dataset over: it is closed for
     * Java when this returns, so return one nothing else uses.  Called on
     * Weft's pipeline threads, several at once: it must be thread-safe, and
     * must not run a session that reads this pipeline.  An exception ends
     * the pass, naming the input element (a WeftException keeps its code).
     *
     * @param element the input element's components
     * @return the dataset
     */
    Dataset make(Tensor[] element);
  }

  /** Builds a filter's predicate in {@code fn} from the placeholders {@code components}. */
  @FunctionalInterface
  public interface FilterFunction {
    /**
     * A bool scalar of {@code fn}: whether to keep the element.
     *
     * @param fn the new function graph to build in
     * @param components its Placeholders, one per component
     * @return the predicate
     */
    Output build(Graph fn, Output[] components);
  }

  Dataset(long handle) {
    super(handle, Native::datasetDestroy);
  }

  // ---- sources ----

  /**
   * Element i is slice i (along dimension 0) of every component; the
   * tensors are copied, so they may be closed or changed afterwards.
   *
   * @param components the tensors, of equal dimension 0
   * @return the new dataset, which the caller closes
   */
  public static Dataset fromTensorSlices(Tensor... components) {
    long[] handles = acquireAll(components);
    try {
      return new Dataset(Native.datasetFromTensorSlices(handles));
    } finally {
      releaseAll(components);
    }
  }

  /**
   * INT64 scalars {@code start, start + step, ...} up to, not including, {@code stop}.
   *
   * @param start the first value
   * @param stop the end, not included
   * @param step the increment
   * @return the new dataset, which the caller closes
   */
  public static Dataset range(long start, long stop, long step) {
    return new Dataset(Native.datasetRange(start, stop, step));
  }

  /**
   * INT64 scalars {@code start, start + 1, ..., stop - 1}.
   *
   * @param start the first value
   * @param stop the end, not included
   * @return the new dataset, which the caller closes
   */
  public static Dataset range(long start, long stop) {
    return range(start, stop, 1);
  }

  /**
   * The records of TFRecord files, in order, as UINT8 vectors.  A bad
   * checksum is a DATA_LOSS error naming the file and the record's offset.
   *
   * @param compression how each whole file is compressed
   * @param paths the files, read in order
   * @return the new dataset, which the caller closes
   */
  public static Dataset tfRecord(Compression compression, String... paths) {
    return new Dataset(Native.datasetTfRecord(paths.clone(), compression.value()));
  }

  /**
   * The records of uncompressed TFRecord files.
   *
   * @param paths the files, read in order
   * @return the new dataset, which the caller closes
   */
  public static Dataset tfRecord(String... paths) {
    return tfRecord(Compression.NONE, paths);
  }

  /**
   * The lines of text files, without their line ends, as UINT8 vectors.
   *
   * @param paths the files, read in order
   * @return the new dataset, which the caller closes
   */
  public static Dataset textLines(String... paths) {
    return new Dataset(Native.datasetTextLines(paths.clone()));
  }

  /**
   * The slices along dimension 0 of an IDX file (gzip-compressed or not),
   * the format of MNIST; its header is read now.
   *
   * @param path the IDX file
   * @return the new dataset, which the caller closes
   */
  public static Dataset idx(String path) {
    return new Dataset(Native.datasetIdx(path));
  }

  /**
   * The records of files of fixed-size records (CIFAR-10's files, raw
   * arrays), in order, as UINT8 vectors of {@code recordBytes}: each file is
   * {@code headerBytes}, its records, then {@code footerBytes};
   * {@code compression} compresses the whole file.  A file whose records
   * do not fill it is a DATA_LOSS error naming the file and the offset of
   * the partial record.
   *
   * @param headerBytes bytes skipped at the start of each file
   * @param recordBytes bytes of each record
   * @param footerBytes bytes skipped at the end of each file
   * @param compression how each whole file is compressed
   * @param paths the files, read in order
   * @return the new dataset, which the caller closes
   */
  public static Dataset fixedLengthRecords(long headerBytes, long recordBytes, long footerBytes,
      Compression compression, String... paths) {
    return new Dataset(Native.datasetFixedLengthRecords(paths.clone(), headerBytes,
        recordBytes, footerBytes, compression.value()));
  }

  /**
   * Uncompressed files of {@code recordBytes} records, without header or footer.
   *
   * @param recordBytes bytes of each record
   * @param paths the files, read in order
   * @return the new dataset, which the caller closes
   */
  public static Dataset fixedLengthRecords(long recordBytes, String... paths) {
    return fixedLengthRecords(0, recordBytes, 0, Compression.NONE, paths);
  }

  /**
   * Elements side by side: element i has the components of every input's
   * element i, in order; it ends with the shortest input.
   *
   * @param inputs the datasets
   * @return the new dataset, which the caller closes
   */
  public static Dataset zip(Dataset... inputs) {
    long[] handles = acquireAll(inputs);
    try {
      return new Dataset(Native.datasetZip(handles));
    } finally {
      releaseAll(inputs);
    }
  }

  // ---- what an element is ----

  /**
   * The number of components of an element.
   *
   * @return how many tensors each element has
   */
  public int numComponents() {
    long d = acquire();
    try {
      return Native.datasetNumComponents(d);
    } finally {
      release();
    }
  }

  /**
   * The dtype of component {@code index}.
   *
   * @param index which component, from 0
   * @return its element type
   */
  public DataType componentType(int index) {
    long d = acquire();
    try {
      DataType t = DataType.fromValue(Native.datasetComponentDtype(d, index));
      if (t == null) {
        throw new IndexOutOfBoundsException("component " + index + " of a dataset of "
            + Native.datasetNumComponents(d));
      }
      return t;
    } finally {
      release();
    }
  }

  /**
   * The dtype of every component, in order.
   *
   * @return the element types
   */
  public List<DataType> componentTypes() {
    long d = acquire();
    try {
      int n = Native.datasetNumComponents(d);
      List<DataType> types = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        types.add(DataType.fromValue(Native.datasetComponentDtype(d, i)));
      }
      return Collections.unmodifiableList(types);
    } finally {
      release();
    }
  }

  /**
   * What the dataset is made of, such as "Batch(Map(TFRecord))".
   *
   * @return the name of the chain of datasets
   */
  public String name() {
    long d = acquire();
    try {
      return Native.datasetName(d);
    } finally {
      release();
    }
  }

  @Override
  public String toString() {
    return isClosed() ? "Dataset(closed)" : "Dataset(" + name() + ")";
  }

  // ---- transformations ----

  /**
   * Each element through the function graph {@code fn}: {@code inputs} are
   * Placeholders of {@code fn}, one per component and of its dtype; {@code
   * outputs} are the new element's components.  Up to {@code
   * numParallelCalls} (1 to 64) elements are mapped at once, in order.  The
   * dataset keeps what it needs: {@code fn} may be closed afterwards.
   *
   * @param fn the function graph
   * @param inputs its Placeholders, one per component
   * @param outputs the new element's components, outputs of {@code fn}
   * @param numParallelCalls how many elements at once, 1 to 64
   * @return the new dataset, which the caller closes
   */
  public Dataset map(Graph fn, Output[] inputs, Output[] outputs, int numParallelCalls) {
    long[] inputNodes = new long[inputs.length];
    int[] inputIndices = new int[inputs.length];
    long[] outputNodes = new long[outputs.length];
    int[] outputIndices = new int[outputs.length];
    long d = acquire();
    long g = fn.acquire();
    try {
      Graph.unpack(fn, inputs, inputNodes, inputIndices);
      Graph.unpack(fn, outputs, outputNodes, outputIndices);
      return new Dataset(Native.datasetMap(d, g, inputNodes, inputIndices, outputNodes,
          outputIndices, numParallelCalls));
    } finally {
      fn.release();
      release();
    }
  }

  /**
   * Each element through a function built by {@code function} in a new
   * graph, from one Placeholder per component (of its dtype; its shape is
   * left unknown, since the C API does not say the components' shapes).
   *
   * @param function builds the function graph
   * @param numParallelCalls how many elements at once, 1 to 64
   * @return the new dataset, which the caller closes
   */
  public Dataset map(MapFunction function, int numParallelCalls) {
    try (Graph fn = new Graph()) {
      Output[] inputs = placeholders(fn);
      return map(fn, inputs, function.build(fn, inputs), numParallelCalls);
    }
  }

  /**
   * {@link #map(MapFunction, int)} one element at a time.
   *
   * @param function builds the function graph
   * @return the new dataset, which the caller closes
   */
  public Dataset map(MapFunction function) {
    return map(function, 1);
  }

  /**
   * The elements for which {@code predicate}, a bool scalar of the function
   * graph {@code fn}, is true; {@code inputs} as for {@link #map(Graph,
   * Output[], Output[], int)}.
   *
   * @param fn the function graph
   * @param inputs its Placeholders, one per component
   * @param predicate a bool scalar of {@code fn}
   * @return the new dataset, which the caller closes
   */
  public Dataset filter(Graph fn, Output[] inputs, Output predicate) {
    long[] inputNodes = new long[inputs.length];
    int[] inputIndices = new int[inputs.length];
    long d = acquire();
    long g = fn.acquire();
    try {
      Graph.unpack(fn, inputs, inputNodes, inputIndices);
      long predicateNode = predicate.node().handleIn(fn);
      return new Dataset(Native.datasetFilter(d, g, inputNodes, inputIndices, predicateNode,
          predicate.index()));
    } finally {
      fn.release();
      release();
    }
  }

  /**
   * {@link #filter(Graph, Output[], Output)} with a predicate built as for
   * {@link #map(MapFunction)}.
   *
   * @param function builds the predicate
   * @return the new dataset, which the caller closes
   */
  public Dataset filter(FilterFunction function) {
    try (Graph fn = new Graph()) {
      Output[] inputs = placeholders(fn);
      return filter(fn, inputs, function.build(fn, inputs));
    }
  }

  private Output[] placeholders(Graph fn) {
    List<DataType> types = componentTypes();
    Output[] inputs = new Output[types.size()];
    for (int i = 0; i < inputs.length; ++i) {
      inputs[i] = fn.placeholder("component_" + i, types.get(i), Shape.unknown());
    }
    return inputs;
  }

  /**
   * tf.data's deterministic interleave: {@code function} turns each element
   * of this dataset into a dataset; {@code cycleLength} (1 to 1024) of those
   * are open at once and give {@code blockLength} elements each in turn;
   * one that ends is replaced, at its next turn, by the dataset of the next
   * input element.  With {@code numParallelCalls} 2 to 64, that many
   * threads per pass (at most cycleLength) read ahead, and the elements
   * still come in that order.  The made datasets' components have {@code
   * componentTypes}; their shapes may vary.  An error ends the pass, naming
   * the input element, and comes again from every read until the
   * iterator's init.  The function is kept until the dataset and every
   * graph and iterator holding it are gone.
   *
   * @param function makes the dataset of an input element
   * @param componentTypes the element types of the datasets it makes
   * @param cycleLength how many of those are read at once, 1 to 1024
   * @param blockLength elements taken from each in turn
   * @param numParallelCalls 1, or 2 to 64 reading threads
   * @return the new dataset, which the caller closes
   */
  public Dataset interleave(InterleaveFunction function, List<DataType> componentTypes,
      long cycleLength, long blockLength, int numParallelCalls) {
    int[] types = new int[componentTypes.size()];
    for (int i = 0; i < types.length; ++i) {
      types[i] = componentTypes.get(i).value();
    }
    InterleaveCallback callback = new InterleaveCallback(function);
    long d = acquire();
    try {
      return new Dataset(Native.datasetInterleave(d, callback, types, cycleLength, blockLength,
          numParallelCalls));
    } finally {
      release();
    }
  }

  /**
   * Elements drawn at random from a buffer of {@code bufferSize}; each pass
   * shuffles differently, and the same way for the same seed.
   *
   * @param bufferSize how many elements to draw from
   * @param seed the seed
   * @return the new dataset, which the caller closes
   */
  public Dataset shuffle(long bufferSize, long seed) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetShuffle(d, bufferSize, seed));
    } finally {
      release();
    }
  }

  /**
   * {@code batchSize} elements stacked along a new dimension 0; the last
   * batch may be smaller unless {@code dropRemainder}.  Elements must agree
   * in shape.
   *
   * @param batchSize elements per batch
   * @param dropRemainder whether to drop a smaller last batch
   * @return the new dataset, which the caller closes
   */
  public Dataset batch(long batchSize, boolean dropRemainder) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetBatch(d, batchSize, dropRemainder));
    } finally {
      release();
    }
  }

  /**
   * {@link #batch(long, boolean)} keeping a smaller last batch.
   *
   * @param batchSize elements per batch
   * @return the new dataset, which the caller closes
   */
  public Dataset batch(long batchSize) {
    return batch(batchSize, false);
  }

  /**
   * As {@link #batch(long, boolean)}, padding each batch with zeros to its largest element.
   *
   * @param batchSize elements per batch
   * @param dropRemainder whether to drop a smaller last batch
   * @return the new dataset, which the caller closes
   */
  public Dataset paddedBatch(long batchSize, boolean dropRemainder) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetPaddedBatch(d, batchSize, dropRemainder));
    } finally {
      release();
    }
  }

  /**
   * The elements {@code count} times over (-1: forever; an empty input stays empty).
   *
   * @param count how many times
   * @return the new dataset, which the caller closes
   */
  public Dataset repeat(long count) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetRepeat(d, count));
    } finally {
      release();
    }
  }

  /**
   * The elements over and over, forever.
   *
   * @return the new dataset, which the caller closes
   */
  public Dataset repeat() {
    return repeat(-1);
  }

  /**
   * The first {@code count} elements (-1: all).
   *
   * @param count how many elements
   * @return the new dataset, which the caller closes
   */
  public Dataset take(long count) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetTake(d, count));
    } finally {
      release();
    }
  }

  /**
   * All but the first {@code count} elements (-1: none).
   *
   * @param count how many elements
   * @return the new dataset, which the caller closes
   */
  public Dataset skip(long count) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetSkip(d, count));
    } finally {
      release();
    }
  }

  /**
   * Up to {@code bufferSize} elements made ahead on a background thread.
   *
   * @param bufferSize how many elements
   * @return the new dataset, which the caller closes
   */
  public Dataset prefetch(long bufferSize) {
    long d = acquire();
    try {
      return new Dataset(Native.datasetPrefetch(d, bufferSize));
    } finally {
      release();
    }
  }

  // ---- reading it in a graph ----

  /**
   * Adds node {@code name} (IteratorGetNext) to {@code graph}, whose outputs
   * are the next element's components, and, when {@code withInit}, an
   * IteratorInit node "{@code name}/init" that starts the pass again.  Each
   * session keeps one iterator per name, started on first use; a run past
   * the end throws a {@link WeftException} of code OUT_OF_RANGE.  The graph
   * keeps the dataset (graph files do not save it).
   *
   * @param graph the graph to add the nodes to
   * @param name the iterator's name
   * @param withInit whether to add the init node too
   * @return the nodes added
   */
  public DatasetIterator iterator(Graph graph, String name, boolean withInit) {
    long d = acquire();
    long g = graph.acquire();
    try {
      long[] out = Native.datasetIterator(g, name, d, withInit);
      int n = (out.length - 1) / 2;
      List<Output> components = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        components.add(graph.nodeOf(out[2 * i]).output((int) out[2 * i + 1]));
      }
      return new DatasetIterator(Collections.unmodifiableList(components),
          graph.nodeOf(out[2 * n]));
    } finally {
      graph.release();
      release();
    }
  }

  /**
   * {@link #iterator(Graph, String, boolean)} with its init node.
   *
   * @param graph the graph to add the nodes to
   * @param name the iterator's name
   * @return the nodes added
   */
  public DatasetIterator iterator(Graph graph, String name) {
    return iterator(graph, name, true);
  }
}
