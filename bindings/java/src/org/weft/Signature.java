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

  public Signature(String name) {
    this.name = name;
  }

  public Signature input(String key, Output value) {
    inputs.put(key, value);
    return this;
  }

  public Signature output(String key, Output value) {
    outputs.put(key, value);
    return this;
  }

  public String name() {
    return name;
  }

  /** Keys in the order they were added. */
  public Map<String, Output> inputs() {
    return Collections.unmodifiableMap(inputs);
  }

  public Map<String, Output> outputs() {
    return Collections.unmodifiableMap(outputs);
  }
}
