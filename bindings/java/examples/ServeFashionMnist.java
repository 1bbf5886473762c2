import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.weft.DataType;
import org.weft.Model;
import org.weft.Tensor;

/**
 * Serves the model `weft train fashion-mnist` saved (a bundle) from Java:
 * predicts the class of every test image through the bundle's
 * serving_default signature, and prints the accuracy and the same hash of
 * the predicted classes that the C trainer printed, so the two can be
 * compared.
 *
 * <pre>
 *   weft train fashion-mnist --model mlp --save mlp-model
 *   java -cp weft.jar:train-fashion-mnist.jar ServeFashionMnist mlp-model
 * </pre>
 */
public final class ServeFashionMnist {
  private ServeFashionMnist() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      System.err.println("usage: ServeFashionMnist MODEL_DIR [DATA_DIR]");
      System.exit(2);
    }
    Path dir = Path.of(args.length > 1 ? args[1] : "/usr/share/datasets/fashion-mnist");
    TrainFashionMnist.Idx images =
        TrainFashionMnist.readIdx(dir.resolve("t10k-images-idx3-ubyte.gz"), 3);
    TrainFashionMnist.Idx labels =
        TrainFashionMnist.readIdx(dir.resolve("t10k-labels-idx1-ubyte.gz"), 1);
    final int pixels = TrainFashionMnist.PIXELS;
    final int batch = TrainFashionMnist.EVAL_BATCH;
    int n = images.dims()[0];
    long right = 0;
    long hash = 0xcbf29ce484222325L;  // FNV-1a, as tools/train.c
    try (Model model = Model.load(args[0])) {
      System.out.printf("model %s: inputs %s, outputs %s%n", args[0], model.inputKeys(null),
          model.outputKeys(null));
      for (int first = 0; first < n; first += batch) {
        int count = Math.min(batch, n - first);
        float[] x = new float[count * pixels];
        for (int i = 0; i < count * pixels; ++i) {
          x[i] = (images.data()[first * pixels + i] & 0xff) / 255.0f;
        }
        try (Tensor xt = Tensor.of(DataType.FLOAT32, x, count, pixels);
             Model.Result r = model.run(null, Map.of("images", xt), "classes")) {
          int[] classes = r.get("classes").toIntArray();
          for (int i = 0; i < count; ++i) {
            right += classes[i] == (labels.data()[first + i] & 0xff) ? 1 : 0;
            hash = (hash ^ classes[i]) * 0x100000001b3L;
          }
        }
      }
    }
    System.out.printf("test accuracy: %.2f%% (%d examples)%n", 100.0 * right / n, n);
    System.out.printf("test predictions: %d classes, fnv1a %016x%n", n, hash);
  }
}
