package org.weft;

/** A plugin file the runtime refused, and why. */
public record PluginRefusal(String path, String reason) {}
