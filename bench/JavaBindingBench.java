import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.weft.DataType;
import org.weft.Graph;
import org.weft.Output;
import org.weft.Session;
import org.weft.SessionOptions;
import org.weft.Shape;
import org.weft.Tensor;

/**
 * The Java binding's costs.
 *
 * <p>1. run() of one scalar Add (a fed placeholder plus a constant, fetched)
 * from Java, microseconds per call: bench/tiny_run.c is the same from C, and
 * the difference is what JNI and the binding's objects add.
 *
 * <p>2. Feeding a 100 MB float32 tensor to a graph that sums it: from a
 * direct buffer wrapped without a copy (Tensor.fromBuffer, made per run)
 * against a copy per run (Tensor.of a float[], and Tensor.copyOf the same
 * direct buffer).  The Sum itself is the floor all three share.
 *
 * <pre>
 * meson devenv -C build java -cp bindings/java/src/weft.jar:bench/java_binding_bench.jar \
 *     JavaBindingBench [--runs=20000] [--repetitions=9] [--feeds=15]
 * </pre>
 */
public final class JavaBindingBench {
  static double median(double[] samples) {
    double[] s = samples.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }

  static int flag(String[] args, String name, int fallback) {
    for (String a : args) {
      if (a.startsWith(name + "=")) {
        return Integer.parseInt(a.substring(name.length() + 1));
      }
    }
    return fallback;
  }

  static void tinyRun(int runs, int repetitions) {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.scalar());
      Output sum = g.apply("Add", "sum", x, g.constant("one", 1f));
      try (Session s = new Session(g, new SessionOptions().devices("/device:CPU:0"));
           Tensor feed = Tensor.scalar(2f)) {
        Session.Runner runner = s.runner().feed(x, feed).fetch(sum);
        double[] samples = new double[repetitions];
        for (int r = -2; r < repetitions; ++r) { // two warm-ups: the JIT
          long start = System.nanoTime();
          for (int i = 0; i < runs; ++i) {
            try (Session.Result result = runner.run()) {
              if (result.get(0).floatValue() != 3f) {
                throw new AssertionError("wrong sum");
              }
            }
          }
          if (r >= 0) {
            samples[r] = (System.nanoTime() - start) / 1e3 / runs;
          }
        }
        System.out.printf("Java run() of one scalar Add: %.3f us per call (median of %d x %d "
            + "runs)%n", median(samples), repetitions, runs);
      }
    }
  }

  interface Feed {
    Tensor make();
  }

  static double feedMillis(Session s, Output x, Output total, Feed feed, int runs) {
    double[] samples = new double[runs];
    for (int r = -1; r < runs; ++r) {
      long start = System.nanoTime();
      try (Tensor t = feed.make();
           Session.Result result = s.runner().feed(x, t).fetch(total).run()) {
        result.get(0).floatValue();
      }
      if (r >= 0) {
        samples[r] = (System.nanoTime() - start) / 1e6;
      }
    }
    return median(samples);
  }

  static void bigFeed(int runs) {
    final int count = 25_000_000; // 100 MB of float32
    ByteBuffer direct = ByteBuffer.allocateDirect(count * 4).order(ByteOrder.nativeOrder());
    FloatBuffer view = direct.asFloatBuffer();
    float[] array = new float[count];
    for (int i = 0; i < count; ++i) {
      array[i] = (i % 7) * 0.125f;
    }
    view.put(array);
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(count));
      Output total = g.opBuilder("Sum", "total").input(x).finishOutput();
      try (Session s = new Session(g, new SessionOptions().devices("/device:CPU:0"))) {
        double zeroCopy = feedMillis(s, x, total,
            () -> Tensor.fromBuffer(DataType.FLOAT32, direct, count), runs);
        double fromArray = feedMillis(s, x, total, () -> Tensor.of(array, count), runs);
        double fromBufferCopy = feedMillis(s, x, total,
            () -> Tensor.copyOf(DataType.FLOAT32, direct, count), runs);
        long start = System.nanoTime();
        final int wraps = 10_000;
        for (int i = 0; i < wraps; ++i) {
          Tensor.fromBuffer(DataType.FLOAT32, direct, count).close();
        }
        double wrapMicros = (System.nanoTime() - start) / 1e3 / wraps;
        System.out.printf("100 MB feed, run() summing it (median of %d): zero-copy direct "
            + "buffer %.2f ms, copy of a float[] %.2f ms, copy of the direct buffer %.2f ms "
            + "(copy / zero-copy %.1fx); wrapping the buffer alone %.2f us%n", runs, zeroCopy,
            fromArray, fromBufferCopy, fromArray / zeroCopy, wrapMicros);
      }
    }
  }

  public static void main(String[] args) {
    tinyRun(flag(args, "--runs", 20000), flag(args, "--repetitions", 9));
    bigFeed(flag(args, "--feeds", 15));
  }
}
