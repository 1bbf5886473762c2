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

  /**
   * The options without data parallelism (the record before it had it).
   *
   * @param optimizer the algorithm
   * @param learningRate the step size
   * @param momentum the momentum (MOMENTUM)
   * @param nesterov Nesterov momentum (MOMENTUM)
   * @param beta1 Adam's first-moment decay
   * @param beta2 Adam's second-moment decay
   * @param epsilon Adam's denominator term
   */
  public OptimizerOptions(Optimizer optimizer, double learningRate, double momentum,
      boolean nesterov, double beta1, double beta2, double epsilon) {
    this(optimizer, learningRate, momentum, nesterov, beta1, beta2, epsilon, false, 0);
  }

  /**
   * The options without buckets (the record before it had them).
   *
   * @param optimizer the algorithm
   * @param learningRate the step size
   * @param momentum the momentum (MOMENTUM)
   * @param nesterov Nesterov momentum (MOMENTUM)
   * @param beta1 Adam's first-moment decay
   * @param beta2 Adam's second-moment decay
   * @param epsilon Adam's denominator term
   * @param dataParallel average the gradients over the MPI job's ranks
   */
  public OptimizerOptions(Optimizer optimizer, double learningRate, double momentum,
      boolean nesterov, double beta1, double beta2, double epsilon, boolean dataParallel) {
    this(optimizer, learningRate, momentum, nesterov, beta1, beta2, epsilon, dataParallel, 0);
  }

  /**
   * The library's defaults for {@code optimizer}.
   *
   * @param optimizer the algorithm
   * @return the options
   */
  public static OptimizerOptions defaults(Optimizer optimizer) {
    double[] d = Native.optimizerDefaults(optimizer.value());
    return new OptimizerOptions(optimizer, d[0], d[1], d[2] != 0, d[3], d[4], d[5]);
  }

  /**
   * Plain gradient descent.
   *
   * @param learningRate the step size
   * @return the options
   */
  public static OptimizerOptions gradientDescent(double learningRate) {
    return defaults(Optimizer.GRADIENT_DESCENT).withLearningRate(learningRate);
  }

  /**
   * Gradient descent with momentum.
   *
   * @param learningRate the step size
   * @param momentum the momentum
   * @return the options
   */
  public static OptimizerOptions momentum(double learningRate, double momentum) {
    return defaults(Optimizer.MOMENTUM).withLearningRate(learningRate).withMomentum(momentum);
  }

  /**
   * Adam, with the library's betas and epsilon.
   *
   * @param learningRate the step size
   * @return the options
   */
  public static OptimizerOptions adam(double learningRate) {
    return defaults(Optimizer.ADAM).withLearningRate(learningRate);
  }

  /**
   * These options with another learning rate.
   *
   * @param value the step size
   * @return new options
   */
  public OptimizerOptions withLearningRate(double value) {
    return new OptimizerOptions(optimizer, value, momentum, nesterov, beta1, beta2, epsilon,
        dataParallel, bucketBytes);
  }

  /**
   * These options with another momentum.
   *
   * @param value the momentum
   * @return new options
   */
  public OptimizerOptions withMomentum(double value) {
    return new OptimizerOptions(optimizer, learningRate, value, nesterov, beta1, beta2, epsilon,
        dataParallel, bucketBytes);
  }

  /**
   * These options with or without Nesterov momentum.
   *
   * @param value whether to use Nesterov momentum
   * @return new options
   */
  public OptimizerOptions withNesterov(boolean value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, value, beta1, beta2, epsilon,
        dataParallel, bucketBytes);
  }

  /**
   * These options with other Adam parameters.
   *
   * @param beta1 the first-moment decay
   * @param beta2 the second-moment decay
   * @param epsilon the denominator term
   * @return new options
   */
  public OptimizerOptions withAdam(double beta1, double beta2, double epsilon) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon, dataParallel, bucketBytes);
  }

  /**
   * Gradients averaged over the MPI job's ranks before each update.
   *
   * @param value whether to average
   * @return new options
   */
  public OptimizerOptions withDataParallel(boolean value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon, value, bucketBytes);
  }

  /**
   * Data-parallel gradients averaged in buckets of at most this many bytes.
   *
   * @param value the bucket size in bytes; 0 for none
   * @return new options
   */
  public OptimizerOptions withBucketBytes(long value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon, dataParallel, value);
  }
}
