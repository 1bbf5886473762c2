package org.weft;

/**
 * An error reported by the Weft runtime: the code and the message of a C
 * status.  The message names the node, op, shape or file at fault.
 */
public class WeftException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Status codes, numbered as absl (and gRPC) number them. */
  public enum Code {
    OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND,
    ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION,
    ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS,
    UNAUTHENTICATED;

    /** The C value (weft_code). */
    public int value() {
      return ordinal();
    }

    /** The code for a C value; UNKNOWN for a value this binding does not know. */
    public static Code fromValue(int value) {
      Code[] all = values();
      return value >= 0 && value < all.length ? all[value] : UNKNOWN;
    }
  }

  private final Code code;
  private final String statusMessage;

  public WeftException(Code code, String message) {
    super(code + ": " + message);
    this.code = code;
    this.statusMessage = message;
  }

  /** Called by the JNI glue. */
  WeftException(int code, String message) {
    this(Code.fromValue(code), message);
  }

  public Code code() {
    return code;
  }

  /** The C value of the code, for the JNI glue. */
  int statusCode() {
    return code.value();
  }

  /** The runtime's message, without the code in front. */
  public String statusMessage() {
    return statusMessage;
  }
}
