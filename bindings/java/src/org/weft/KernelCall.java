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

  public int numInputs() {
    return inputs.length;
  }

  /** Input {@code index}; closed by the runtime after the kernel returns. */
  public Tensor input(int index) {
    return inputs[index];
  }

  /** The node's float attribute {@code name} (defaults filled). */
  public double attrFloat(String name) {
    return Native.kernelAttrFloat(call, name);
  }

  /** The node's int attribute {@code name} (defaults filled). */
  public long attrInt(String name) {
    return Native.kernelAttrInt(call, name);
  }
}
