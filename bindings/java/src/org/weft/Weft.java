package org.weft;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The runtime as a whole: versions, plugins, devices and the op library.
 * Plugins are found on WEFT_PLUGIN_PATH, then in the installed plugin
 * directory, the first time they are needed.  Every method is thread-safe.
 */
public final class Weft {
  private Weft() {}

  /**
   * The library's release, such as "0.1.0".
   *
   * @return the version string of libweft
   */
  public static String version() {
    return Native.versionString();
  }

  /**
   * The user-API version the library implements, as "major.minor".
   *
   * @return the user-API version, such as "1.13"
   */
  public static String abiVersion() {
    int v = Native.abiVersion();
    return (v >>> 16) + "." + (v & 0xffff);
  }

  /**
   * The range of plugin-interface versions the library hosts, as "1.0-1.2".
   *
   * @return the oldest and the newest version a plugin may speak
   */
  public static String pluginInterfaceRange() {
    int[] r = Native.pluginInterfaceRange();
    return (r[0] >>> 16) + "." + (r[0] & 0xffff) + "-" + (r[1] >>> 16) + "." + (r[1] & 0xffff);
  }

  /**
   * This process's place in its MPI job: rank 0 of 1 unless started by an
   * MPI launcher (mpirun), when collective ops run across the ranks.
   *
   * @return this process's rank and the number of ranks
   */
  public static ClusterWorld clusterWorld() {
    int[] w = Native.clusterWorld();
    return new ClusterWorld(w[0], w[1]);
  }

  /**
   * Ends every process of the program's MPI job at once with exit status {@code code},
   * for a job a dead rank keeps from ending cleanly.  Throws a {@link WeftException}
   * (FAILED_PRECONDITION) in a process not started by an MPI launcher.
   *
   * @param code the exit status of every process
   */
  public static void clusterAbort(int code) {
    Native.clusterAbort(code);
  }

  /** A rank and the number of ranks of the program's MPI job. */
  public record ClusterWorld(int rank, int size) {}

  /** Loads the plugins on the search path, if not done yet. */
  public static void discoverPlugins() {
    Native.pluginsDiscover();
  }

  /**
   * Loads one plugin file; a refusal is a {@link WeftException} and is recorded.
   *
   * @param path the plugin's shared library
   */
  public static void loadPlugin(String path) {
    Native.pluginLoad(path);
  }

  private static <T> List<T> list(int count, IntFunction<T> describe) {
    List<T> out = new ArrayList<>(count);
    for (int i = 0; i < count; ++i) {
      out.add(describe.apply(i));
    }
    return out;
  }

  /**
   * The loaded plugins (loading those on the search path first).
   *
   * @return a description of each plugin, in load order
   */
  public static List<PluginInfo> plugins() {
    discoverPlugins();
    return list(Native.pluginCount(), Native::pluginDescribe);
  }

  /**
   * The plugin files that were found but refused (loading those on the search
   * path first): an incompatible interface version, a missing entry point.
   *
   * @return each plugin file that was refused, with the reason
   */
  public static List<PluginRefusal> pluginRefusals() {
    discoverPlugins();
    return list(Native.pluginRefusalCount(), Native::pluginRefusal);
  }

  /**
   * Every device of every loaded plugin.
   *
   * @return a description of each device
   */
  public static List<DeviceInfo> devices() {
    discoverPlugins();
    return list(Native.deviceCount(), Native::deviceDescribe);
  }

  /**
   * Every op of the library, in registration order.
   *
   * @return a description of each op
   */
  public static List<OpInfo> ops() {
    return list(Native.opCount(), Native::opDescribe);
  }

  /**
   * Whether an op has a gradient (1), is not differentiable (0), or neither
   * (-1).
   *
   * @param opType the op's name
   * @return 1, 0 or -1
   */
  public static int gradientStatus(String opType) {
    return Native.opGradientStatus(opType);
  }
}
