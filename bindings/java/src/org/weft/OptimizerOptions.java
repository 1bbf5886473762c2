package org.weft;

/**
 * Options of {@link Graph#minimize}: start from {@link #defaults} (the C
 * library's, learning rate 0.01) and change what differs.
 */
public record OptimizerOptions(Optimizer optimizer, double learningRate, double momentum,
    boolean nesterov, double beta1, double beta2, double epsilon) {

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
    return new OptimizerOptions(optimizer, value, momentum, nesterov, beta1, beta2, epsilon);
  }

  public OptimizerOptions withMomentum(double value) {
    return new OptimizerOptions(optimizer, learningRate, value, nesterov, beta1, beta2, epsilon);
  }

  public OptimizerOptions withNesterov(boolean value) {
    return new OptimizerOptions(optimizer, learningRate, momentum, value, beta1, beta2, epsilon);
  }

  public OptimizerOptions withAdam(double beta1, double beta2, double epsilon) {
    return new OptimizerOptions(optimizer, learningRate, momentum, nesterov, beta1, beta2,
        epsilon);
  }
}
