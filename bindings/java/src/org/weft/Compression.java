package org.weft;

/** How a record file (TFRecord, fixed-length records) is compressed, as a whole. */
public enum Compression {
  /** Not compressed. */
  NONE(""),
  /** gzip (RFC 1952), as TensorFlow writes it. */
  GZIP("GZIP"),
  /** zlib (RFC 1950). */
  ZLIB("ZLIB");

  private final String value;

  Compression(String value) {
    this.value = value;
  }

  /** The C API's name: "", "GZIP" or "ZLIB". */
  String value() {
    return value;
  }
}
