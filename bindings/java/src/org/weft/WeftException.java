package org.weft;

/**
 * An error reported by the Weft runtime: the code and the message of a C
 * status.  The message names the node, op, shape or file at fault.
 */
public class WeftException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Status codes, numbered as absl (and gRPC) number them. */
  public enum Code {
    /** Not an error (never thrown). */
    OK,
    /** The operation was cancelled, for example by {@code Session.cancel}. */
    CANCELLED,
    /** An error with no better code. */
    UNKNOWN,
    /** The caller passed an argument the call refuses, whatever the state. */
    INVALID_ARGUMENT,
    /** A run's timeout passed before it finished. */
    DEADLINE_EXCEEDED,
    /** A node, op, file, device or plugin that was named does not exist. */
    NOT_FOUND,
    /** Something that was to be created exists already. */
    ALREADY_EXISTS,
    /** The caller may not do this, such as writing a file without the right to. */
    PERMISSION_DENIED,
    /** Memory or another resource ran out. */
    RESOURCE_EXHAUSTED,
    /** The state does not allow the call (an uninitialized variable, a closed queue). */
    FAILED_PRECONDITION,
    /** The operation was aborted (a foreign C function that returned an error). */
    ABORTED,
    /** Past the end: an iterator or a queue with no more elements. */
    OUT_OF_RANGE,
    /** Not implemented: an op without a kernel on the device, a missing feature. */
    UNIMPLEMENTED,
    /** A broken invariant of the runtime. */
    INTERNAL,
    /** A service, such as a cluster peer or a file being written, cannot be used now. */
    UNAVAILABLE,
    /** Data was lost or corrupted (a bad checksum in a record file). */
    DATA_LOSS,
    /** Credentials were refused (absl's meaning; Weft itself does not use it). */
    UNAUTHENTICATED;

    /**
     * The C value.
     *
     * @return weft_code's value for this code
     */
    public int value() {
      return ordinal();
    }

    /**
     * The code for a C value.
     *
     * @param value a weft_code value
     * @return its code; UNKNOWN for a value this binding does not know
     */
    public static Code fromValue(int value) {
      Code[] all = values();
      return value >= 0 && value < all.length ? all[value] : UNKNOWN;
    }
  }

  /** The status code. */
  private final Code code;
  /** The status message, without the code. */
  private final String statusMessage;

  /**
   * An error with a status code and message, as the runtime reports them;
   * Java callbacks (kernels, lambdas) may throw one to choose the code.
   *
   * @param code the status code
   * @param message what went wrong
   */
  public WeftException(Code code, String message) {
    super(code + ": " + message);
    this.code = code;
    this.statusMessage = message;
  }

  /** Called by the JNI glue. */
  WeftException(int code, String message) {
    this(Code.fromValue(code), message);
  }

  /**
   * The status code.
   *
   * @return the code of the C status
   */
  public Code code() {
    return code;
  }

  /** The C value of the code, for the JNI glue. */
  int statusCode() {
    return code.value();
  }

  /**
   * The runtime's message.
   *
   * @return the message, without the code in front
   */
  public String statusMessage() {
    return statusMessage;
  }
}
