package org.weft;

import java.util.ArrayList;
import java.util.List;

/**
 * What a run did: where each node ran and why, the transfers between
 * devices, the nodes merged by CSE, the peak memory per device.  Pass it to
 * {@link Session.Runner#metadata}; each run refills it.  One run fills one
 * metadata object at a time.
 */
public final class RunMetadata extends NativeObject {
  /** One node of the run: its device and the placer's reason. */
  public record Placement(String node, String op, String device, String reason) {}

  /** One Send/Recv pair; {@code bytes} is 0 when known only at run time. */
  public record Transfer(String value, String sourceDevice, String destinationDevice,
      DataType wireDtype, long bytes) {}

  /** A node removed by CSE and the node it was merged into. */
  public record Merge(String removed, String kept) {}

  /** Peak bytes of values the run held at once on a device. */
  public record DeviceMemory(String device, long peakBytes) {}

  /**
   * An empty metadata object, for a run to fill.
   */
  public RunMetadata() {
    super(create(), Native::metadataDestroy);
  }

  private static long create() {
    long h = Native.metadataCreate();
    if (h == 0) {
      throw new WeftException(WeftException.Code.RESOURCE_EXHAUSTED, "out of memory");
    }
    return h;
  }

  /**
   * Where each node of the last run ran, and why there.
   *
   * @return one entry per node of the last run
   */
  public List<Placement> placements() {
    long m = acquire();
    try {
      int n = Native.metadataNumNodes(m);
      List<Placement> out = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        String[] p = Native.metadataNode(m, i);
        out.add(new Placement(p[0], p[1], p[2], p[3]));
      }
      return out;
    } finally {
      release();
    }
  }

  /**
   * The device node {@code nodeName} ran on, or null if the run had none such.
   *
   * @param nodeName a node's name
   * @return the device's name, or null
   */
  public String deviceOf(String nodeName) {
    long m = acquire();
    try {
      return Native.metadataDeviceOf(m, nodeName);
    } finally {
      release();
    }
  }

  /**
   * The values the last run sent from one device to another.
   *
   * @return one entry per Send/Recv pair
   */
  public List<Transfer> transfers() {
    long m = acquire();
    try {
      int n = Native.metadataNumTransfers(m);
      List<Transfer> out = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        String[] t = Native.metadataTransfer(m, i);
        long[] size = Native.metadataTransferSize(m, i);
        out.add(new Transfer(t[0], t[1], t[2], DataType.fromValue((int) size[0]), size[1]));
      }
      return out;
    } finally {
      release();
    }
  }

  /**
   * The nodes CSE merged in the last run's plan.
   *
   * @return one entry per merged node
   */
  public List<Merge> merges() {
    long m = acquire();
    try {
      int n = Native.metadataNumMerged(m);
      List<Merge> out = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        String[] p = Native.metadataMerged(m, i);
        out.add(new Merge(p[0], p[1]));
      }
      return out;
    } finally {
      release();
    }
  }

  /**
   * The peak memory of the last run on each device it used.
   *
   * @return one entry per device
   */
  public List<DeviceMemory> memory() {
    long m = acquire();
    try {
      int n = Native.metadataNumDevices(m);
      List<DeviceMemory> out = new ArrayList<>(n);
      for (int i = 0; i < n; ++i) {
        out.add(new DeviceMemory(Native.metadataDeviceName(m, i), Native.metadataPeakBytes(m, i)));
      }
      return out;
    } finally {
      release();
    }
  }

  /** Everything, one line per fact, as `weft place` prints it. */
  @Override
  public String toString() {
    if (isClosed()) {
      return "RunMetadata(closed)";
    }
    long m = acquire();
    try {
      return Native.metadataToString(m);
    } finally {
      release();
    }
  }
}
