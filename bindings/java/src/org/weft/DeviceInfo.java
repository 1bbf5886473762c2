package org.weft;

/**
 * A device as the runtime sees it (weft_device_description).
 *
 * @param name "/device:CPU:0"
 * @param type "CPU", "OPENCL", "CUDA"
 * @param index among the devices of that type
 * @param memoryBytes 0 when unknown
 * @param computeGflops the plugin's estimate; 0 when unknown
 * @param flags WEFT_DEVICE_* bits
 * @param unsupportedDtypes bit {@code 1L << code} for each dtype the device cannot
 *     run although its plugin has kernels for it (an OpenCL device without
 *     float64); the placer keeps such nodes off it
 */
public record DeviceInfo(String name, String type, int index, String description,
    String vendor, String plugin, long memoryBytes, double computeGflops, int flags,
    long unsupportedDtypes) {
  /** WEFT_DEVICE_HOST_MEMORY: the device's memory is host-addressable. */
  public static final int HOST_MEMORY = 0x1;

  /**
   * Whether the device's memory is host-addressable (a CPU device).
   *
   * @return true when {@link #HOST_MEMORY} is among the flags
   */
  public boolean hasHostMemory() {
    return (flags & HOST_MEMORY) != 0;
  }

  /**
   * Whether the device runs {@code dtype} wherever its plugin has a kernel.
   *
   * @param dtype an element type
   * @return false when the device cannot run it
   */
  public boolean runs(DataType dtype) {
    int code = dtype.value();
    return code < 0 || code >= 64 || ((unsupportedDtypes >>> code) & 1L) == 0;
  }
}
