package org.weft;

/**
 * TFRecord files, TensorFlow's format for a sequence of byte records: read
 * them with {@link Dataset#tfRecord}, write them with {@link #write}.
 */
public final class TfRecord {
  static {
    Native.ensureLoaded();
  }

  private TfRecord() {}

  /**
   * Writes {@code records} (UINT8 vectors, or any tensor: its bytes) as the
   * TFRecord file at {@code path}.  The file is written beside and renamed
   * in, so a reader sees the old file or the whole new one.  A path that is
   * neither absent nor a regular file is FAILED_PRECONDITION.
   *
   * @param path the file
   * @param compression how the whole file is compressed
   * @param records the records, in order
   */
  public static void write(String path, Compression compression, Tensor... records) {
    long[] handles = NativeObject.acquireAll(records);
    try {
      Native.tfRecordWrite(path, compression.value(), handles);
    } finally {
      NativeObject.releaseAll(records);
    }
  }

  /**
   * Writes each byte array as one record of an uncompressed file at {@code path}.
   *
   * @param path the file
   * @param records the records, in order
   */
  public static void write(String path, byte[]... records) {
    write(path, Compression.NONE, records);
  }

  /**
   * Writes each byte array as one record.
   *
   * @param path the file
   * @param compression how the whole file is compressed
   * @param records the records, in order
   */
  public static void write(String path, Compression compression, byte[]... records) {
    Tensor[] tensors = new Tensor[records.length];
    try {
      for (int i = 0; i < records.length; ++i) {
        tensors[i] = Tensor.of(DataType.UINT8, records[i], records[i].length);
      }
      write(path, compression, tensors);
    } finally {
      for (Tensor t : tensors) {
        if (t != null) {
          t.close();
        }
      }
    }
  }
}
