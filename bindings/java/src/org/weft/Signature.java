package org.weft;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A named way to call a model: input keys with the outputs they feed
 * (placeholders, usually) and output keys with the outputs they fetch.
 *
 * <pre>{@code
 * Signature s = new Signature(Signature.DEFAULT)
 *     .input("images", x).output("probabilities", probs);
 * }</pre>
 */
public final class Signature {
  /** The signature a model's callers get when they name none. */
  public static final String DEFAULT = "serving_default";

  private final String name;
  private final Map<String, Output> inputs = new LinkedHashMap<>();
  private final Map<String, Output> outputs = new LinkedHashMap<>();

  /**
   * An empty signature.
   *
   * @param name its name, such as {@link #DEFAULT}
   */
  public Signature(String name) {
    this.name = name;
  }

  /**
   * Adds an input.
   *
   * @param key the name callers give the value
   * @param value the output it feeds (a placeholder, usually)
   * @return this signature
   */
  public Signature input(String key, Output value) {
    inputs.put(key, value);
    return this;
  }

  /**
   * Adds an output.
   *
   * @param key the name callers get the value under
   * @param value the output it fetches
   * @return this signature
   */
  public Signature output(String key, Output value) {
    outputs.put(key, value);
    return this;
  }

  /**
   * The signature's name.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * The inputs.
   *
   * @return the keys, in the order they were added, with the outputs they feed
   */
  public Map<String, Output> inputs() {
    return Collections.unmodifiableMap(inputs);
  }

  /**
   * The outputs.
   *
   * @return the keys, in the order they were added, with the outputs they fetch
   */
  public Map<String, Output> outputs() {
    return Collections.unmodifiableMap(outputs);
  }
}
