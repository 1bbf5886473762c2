package org.weft;

/**
 * One op of the library (weft_op_description).
 *
 * @param inputs "a, b"; a trailing "..." marks a list input
 * @param attributes "transpose_a: bool = false, ..."; required ones have no default
 * @param runsInRuntime ops the runtime runs itself on every device (Const, Variable, ...)
 * @param origin "runtime", "program" (defined with {@link OpDefinition}) or
 *     "plugin NAME"
 */
public record OpInfo(String name, String summary, String inputs, String outputs,
    String attributes, int numInputs, boolean variadic, boolean stateful,
    boolean runsInRuntime, String origin) {}
