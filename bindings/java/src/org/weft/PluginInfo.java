package org.weft;

/**
 * A loaded plugin (weft_plugin_description).
 *
 * @param interfaceVersion the negotiated plugin-interface version, packed as
 *     {@code (major << 16) | minor}
 * @param noDeviceReason why deviceCount is 0; "" otherwise
 */
public record PluginInfo(String name, String version, String path, int interfaceVersion,
    String deviceType, int deviceCount, String noDeviceReason) {}
