package org.weft;

/**
 * Options of {@link Graph#minimize}: start from {@link #defaults} (the C
 * library's, learning rate 0.01) and change what differs.
 * {@code dataParallel}: average each gradient over the ranks of the
 * program's MPI job before its update ({@link Weft#clusterWorld});
 * {@code bucketBytes} (with it): 0 averages each gradient by an AllReduce
 * of its own, more packs the gradients into buckets of at most that many
 * bytes, one AllReduce each.
 */
public record OptimizerOptions(Optimizer optimizer, double learningRate, double momentum,
    boolean nesterov, double beta1, double beta2, double epsilon, boolean dataParallel,
    long bucketBytes) {

  /** The options without data parallelism (the record before it had it). */
  public OptimizerOptions(Optimizer optimizer, double learningRate, double momentum,
      boolean nesterov, double beta1, double beta2, double epsilon) {
    this(optimizer, learningRate, momentum, nesterov, beta1, beta2, epsilon, false, 0);
  }

  /** The options without buckets (the record before it had them). */
  public OptimizerOptions(Optimizer optimizer, double learningRate, double momentum,
      boolean nesterov, double beta1, double beta2, double epsilon, boolean dataParallel) {
    this(optimizer, learningRate, momentum, nesterov, beta1, beta2, epsilon, dataParallel, 0);
  }

  /** The library's defaults for {@code optimizer}. */
  public static OptimizerOptions defaults(Optimizer optimizer) {
    double[] d = Native.optimizerDefaults(optimizer.value());
    return new OptimizerOptions(optimizer, d[0], d[1], d[2] != 0, d[3], d[4], d[5]);
  }

  public static OptimizerOptions gradientDescent(double learningRate) {
    return defaults(Optimizer.GRADIENT_DESCENT).withLearningRate(learningRate);
  }

  public static OptimizerOptions momentum(double learningRate, double momentum) {
    return defaults(Optimizer.MOMENTUM).withLearningRate(learningRate).withMomentum(momentum);
  }

  public static OptimizerOptions adam(double learningRate) {
    return defaults(Optimizer.ADAM).withLearningRate(learningRate);
  }

  public OptimizerOptions withLearningRate(double value) {
    return new OptimizerOptions(optimizer, value, momentum, nesterov, beta1, beta2, epsilon,
        dataParallel, bucketBytes);
  }

  public OptimizerOptions withMomentum(double value) {
    return new OptimizerOptions(optimizer, learningRate, value, nesterov, beta1, beta2, epsilon,
        dataParallel, bucketBytes);
  }

  public OptimizerOptions withNesterov(boolean value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, value, beta1, beta2, epsilon,
        dataParallel, bucketBytes);
  }

  public OptimizerOptions withAdam(double beta1, double beta2, double epsilon) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon, dataParallel, bucketBytes);
  }

  /** Gradients averaged over the MPI job's ranks before each update. */
  public OptimizerOptions withDataParallel(boolean value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon, value, bucketBytes);
  }

  /** Data-parallel gradients averaged in buckets of at most this many bytes. */
  public OptimizerOptions withBucketBytes(long value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon, dataParallel, value);
  }
}
