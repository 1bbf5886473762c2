import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import org.weft.DataType;
import org.weft.Graph;
import org.weft.Node;
import org.weft.OptimizerOptions;
import org.weft.Output;
import org.weft.Session;
import org.weft.SessionOptions;
import org.weft.Shape;
import org.weft.Tensor;

/**
 * Trains the Fashion-MNIST MLP from Java, exactly as {@code weft train
 * fashion-mnist --model mlp} does in C (tools/train.c): 784 -> 256 -> 10 with
 * ReLU, sparse softmax cross-entropy, Adam at 0.001, batches of 100, two
 * epochs, the same Glorot initialization and per-epoch shuffle from seed 1;
 * then prints the test accuracy.
 *
 * <pre>
 * meson devenv -C build java TrainFashionMnist [DATA_DIR] [EPOCHS]
 * </pre>
 *
 * Batches are fed without copying: each step writes the next batch into two
 * direct buffers that the fed tensors wrap.
 */
public final class TrainFashionMnist {
  static final int PIXELS = 784;
  static final int HIDDEN = 256;
  static final int CLASSES = 10;
  static final int BATCH = 100;
  static final int EVAL_BATCH = 1000;

  /** An IDX file of unsigned bytes (gzip-compressed): its dims and data. */
  record Idx(int[] dims, byte[] data) {}

  static Idx readIdx(Path path, int rank) throws IOException {
    try (InputStream file = Files.newInputStream(path);
         DataInputStream in = new DataInputStream(new GZIPInputStream(file, 1 << 16))) {
      int magic = in.readInt();
      if ((magic >>> 16) != 0 || ((magic >>> 8) & 0xff) != 0x08 || (magic & 0xff) != rank) {
        throw new IOException(path + ": not an IDX file of unsigned bytes with " + rank
            + " dimensions (magic 0x" + Integer.toHexString(magic) + ")");
      }
      int[] dims = new int[rank];
      long count = 1;
      for (int i = 0; i < rank; ++i) {
        dims[i] = in.readInt();
        count *= dims[i];
      }
      if (dims[0] <= 0 || count > Integer.MAX_VALUE) {
        throw new IOException(path + ": implausible size");
      }
      byte[] data = new byte[(int) count];
      try {
        in.readFully(data);
      } catch (EOFException e) {
        throw new IOException(path + ": truncated: the header promises " + count + " bytes", e);
      }
      if (in.read() != -1) {
        throw new IOException(path + ": has bytes after the end of its data");
      }
      return new Idx(dims, data);
    }
  }

  /** splitmix64, as tools/train.c draws its numbers. */
  static final class SplitMix {
    long state;

    SplitMix(long seed) {
      state = seed;
    }

    long next() {
      long z = (state += 0x9e3779b97f4a7c15L);
      z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
      z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
      return z ^ (z >>> 31);
    }

    double uniform01() {
      return (next() >>> 11) * (1.0 / 9007199254740992.0);
    }
  }

  /** A float32 variable, Glorot-uniform when {@code glorot}, else zeros. */
  static Output variable(Graph g, String name, long rows, long cols, boolean glorot,
      SplitMix seed) {
    long[] shape = cols > 0 ? new long[] {rows, cols} : new long[] {rows};
    float[] values = new float[(int) (cols > 0 ? rows * cols : rows)];
    double limit = glorot ? Math.sqrt(6.0 / (rows + cols)) : 0;
    for (int i = 0; i < values.length; ++i) {
      values[i] = glorot ? (float) ((seed.uniform01() * 2 - 1) * limit) : 0f;
    }
    try (Tensor initial = Tensor.of(values, shape)) {
      return g.variable(name, initial).value();
    }
  }

  /** The training set's order in {@code epoch}: a Fisher-Yates shuffle. */
  static int[] epochOrder(long seed, long epoch, int n) {
    SplitMix s = new SplitMix(seed * 1000003L + epoch);
    int[] order = new int[n];
    for (int i = 0; i < n; ++i) {
      order[i] = i;
    }
    for (int i = n - 1; i > 0; --i) {
      int j = (int) Long.remainderUnsigned(s.next(), i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    return order;
  }

  static void fillBatch(Idx images, Idx labels, int[] order, int first, int count,
      FloatBuffer x, IntBuffer y) {
    x.clear();
    y.clear();
    for (int i = 0; i < count; ++i) {
      int e = order == null ? first + i : order[first + i];
      int base = e * PIXELS;
      for (int p = 0; p < PIXELS; ++p) {
        x.put((images.data[base + p] & 0xff) / 255.0f);
      }
      y.put(labels.data[e] & 0xff);
    }
  }

  public static void main(String[] args) throws IOException {
    Path dir = Path.of(args.length > 0 ? args[0] : "/usr/share/datasets/fashion-mnist");
    int epochs = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    long seedValue = 1;
    Idx trainImages = readIdx(dir.resolve("train-images-idx3-ubyte.gz"), 3);
    Idx trainLabels = readIdx(dir.resolve("train-labels-idx1-ubyte.gz"), 1);
    Idx testImages = readIdx(dir.resolve("t10k-images-idx3-ubyte.gz"), 3);
    Idx testLabels = readIdx(dir.resolve("t10k-labels-idx1-ubyte.gz"), 1);
    int n = trainImages.dims()[0];
    System.out.printf("fashion-mnist: %d training and %d test images; model mlp%n", n,
        testImages.dims()[0]);

    try (Graph g = new Graph()) {
      SplitMix seed = new SplitMix(seedValue);
      Output x = g.placeholder("images", DataType.FLOAT32, Shape.of(-1, PIXELS));
      Output labels = g.placeholder("labels", DataType.INT32, Shape.of(-1));
      Output w1 = variable(g, "hidden/weights", PIXELS, HIDDEN, true, seed);
      Output b1 = variable(g, "hidden/bias", HIDDEN, 0, false, seed);
      Output h = g.apply("Relu", "hidden/relu", g.apply("BiasAdd", "hidden/preactivation",
          g.apply("MatMul", "hidden/matmul", x, w1), b1));
      Output w2 = variable(g, "softmax/weights", HIDDEN, CLASSES, true, seed);
      Output b2 = variable(g, "softmax/bias", CLASSES, 0, false, seed);
      Output logits = g.apply("BiasAdd", "logits", g.apply("MatMul", "softmax/matmul", h, w2),
          b2);
      Output loss = g.apply("Mean", "loss",
          g.apply("SparseSoftmaxCrossEntropyWithLogits", "xent", logits, labels));
      Node train = g.minimize(loss, OptimizerOptions.adam(0.001), "train");
      Node init = g.initializeAll("init");

      try (Session s = new Session(g, new SessionOptions());
           Tensor xt = Tensor.allocateDirect(DataType.FLOAT32, BATCH, PIXELS);
           Tensor yt = Tensor.allocateDirect(DataType.INT32, BATCH)) {
        s.run(init);
        FloatBuffer xb = xt.buffer().asFloatBuffer();
        IntBuffer yb = yt.buffer().asIntBuffer();
        Session.Runner step = s.runner().feed(x, xt).feed(labels, yt).fetch(loss).target(train);
        int perEpoch = n / BATCH;
        long start = System.nanoTime();
        for (int epoch = 0; epoch < epochs; ++epoch) {
          int[] order = epochOrder(seedValue, epoch, n);
          for (int i = 0; i < perEpoch; ++i) {
            fillBatch(trainImages, trainLabels, order, i * BATCH, BATCH, xb, yb);
            try (Session.Result r = step.run()) {
              float value = r.get(0).floatValue();
              if (!Float.isFinite(value)) {
                throw new IllegalStateException("the loss diverged: " + value);
              }
              if ((i + 1) % 100 == 0) {
                double seconds = (System.nanoTime() - start) * 1e-9;
                System.out.printf("epoch %d/%d step %d/%d loss %.4f %.0f steps/s%n", epoch + 1,
                    epochs, epoch * perEpoch + i + 1, epochs * perEpoch, value,
                    (epoch * perEpoch + i + 1) / seconds);
              }
            }
          }
        }

        int right = 0;
        int total = testImages.dims()[0];
        ByteBuffer evalBytes = ByteBuffer.allocateDirect(EVAL_BATCH * PIXELS * 4)
            .order(java.nio.ByteOrder.nativeOrder());
        ByteBuffer evalLabels = ByteBuffer.allocateDirect(EVAL_BATCH * 4)
            .order(java.nio.ByteOrder.nativeOrder());
        for (int first = 0; first < total; first += EVAL_BATCH) {
          int count = Math.min(EVAL_BATCH, total - first);
          fillBatch(testImages, testLabels, null, first, count, evalBytes.asFloatBuffer(),
              evalLabels.asIntBuffer());
          evalBytes.limit(count * PIXELS * 4);
          try (Tensor batch = Tensor.fromBuffer(DataType.FLOAT32, evalBytes, count, PIXELS);
               Session.Result r = s.runner().feed(x, batch).fetch(logits).run()) {
            float[] l = r.get(0).toFloatArray();
            for (int i = 0; i < count; ++i) {
              int best = 0;
              for (int c = 1; c < CLASSES; ++c) {
                if (l[i * CLASSES + c] > l[i * CLASSES + best]) {
                  best = c;
                }
              }
              right += best == (testLabels.data()[first + i] & 0xff) ? 1 : 0;
            }
          }
          evalBytes.clear();
        }
        System.out.printf("test accuracy: %.2f%% (%d examples, model mlp, %d epochs)%n",
            100.0 * right / total, total, epochs);
      }
    }
  }
}
