package org.weft;

/**
 * One run of a Java kernel ({@link OpDefinition.Kernel}): its inputs (host
 * copies, closed when the kernel returns) and the node's attributes.  Valid
 * only during the call.
 */
public final class KernelCall {
  private final long call;
  private final Tensor[] inputs;

  KernelCall(long call, Tensor[] inputs) {
    this.call = call;
    this.inputs = inputs;
  }

  /**
   * The number of inputs.
   *
   * @return how many inputs the node has
   */
  public int numInputs() {
    return inputs.length;
  }

  /**
   * Input {@code index}; closed by the runtime after the kernel returns.
   *
   * @param index which input, from 0
   * @return its host copy
   */
  public Tensor input(int index) {
    return inputs[index];
  }

  /**
   * The node's float attribute {@code name} (defaults filled).
   *
   * @param name the attribute
   * @return its value
   */
  public double attrFloat(String name) {
    return Native.kernelAttrFloat(call, name);
  }

  /**
   * The node's int attribute {@code name} (defaults filled).
   *
   * @param name the attribute
   * @return its value
   */
  public long attrInt(String name) {
    return Native.kernelAttrInt(call, name);
  }
}
