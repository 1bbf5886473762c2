package org.weft;

import java.nio.charset.StandardCharsets;

/**
 * A TensorBoard event file (weft_summary_writer_* in weft/summary.h):
 * scalars, histograms, images, text and the graph, each at a step, that
 * {@code tensorboard --logdir DIR} shows while the program still writes.
 *
 * <pre>{@code
 * try (SummaryWriter w = SummaryWriter.create("runs/mlp")) {
 *   w.addScalar("loss", step, loss);
 *   w.addSummary(step, fetchedFromAMergeSummaryOp);
 * }
 * }</pre>
 *
 * <p>The summary ops (ScalarSummary, HistogramSummary, ImageSummary,
 * TextSummary, MergeSummary) are ordinary ops built with {@link
 * Graph#opBuilder}; each outputs a uint8 vector holding a serialized Summary,
 * which {@link #addSummary} appends.  Every addition is written whole and
 * at once.  {@link #close()} flushes and closes the file, losing any error
 * on the way: call {@link #flush()} first to see one.  Threads: every
 * method may be called from any thread.
 */
public final class SummaryWriter extends NativeObject {
  private SummaryWriter(long handle) {
    super(handle, Native::summaryWriterDestroy);
  }

  private static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A new event file {@code events.out.tfevents.<seconds>.<host>} in
   * {@code logdir}, made with its parents when missing.
   *
   * @param logdir the log directory
   * @return the open writer
   * @throws WeftException when the directory or the file cannot be made
   */
  public static SummaryWriter create(String logdir) {
    return create(logdir, null);
  }

  /**
   * {@link #create(String)} with {@code suffix} (no '/') after the file's
   * name.
   *
   * @param logdir the log directory
   * @param suffix appended to the file name, or null
   * @return the open writer
   */
  public static SummaryWriter create(String logdir, String suffix) {
    if (logdir == null) {
      throw new NullPointerException("logdir");
    }
    return new SummaryWriter(Native.summaryWriterCreate(utf8(logdir), utf8(suffix)));
  }

  /**
   * The event file's path.
   *
   * @return the path
   */
  public String path() {
    long w = acquire();
    try {
      return Native.summaryWriterPath(w);
    } finally {
      release();
    }
  }

  /**
   * A scalar (stored as float32) for TensorBoard's scalar dashboard.  Tags
   * are non-empty text without control characters, at most 1024 bytes of
   * UTF-8.
   *
   * @param tag the series' name
   * @param step the step it belongs to
   * @param value the value
   */
  public void addScalar(String tag, long step, double value) {
    long w = acquire();
    try {
      Native.summaryWriterAddScalar(w, utf8(tag), step, value);
    } finally {
      release();
    }
  }

  /**
   * The histogram of a tensor's values (any real dtype or bool); NaN or
   * infinite values throw a {@link WeftException}.
   *
   * @param tag the series' name
   * @param step the step it belongs to
   * @param values the values
   */
  public void addHistogram(String tag, long step, Tensor values) {
    addTensor(0, tag, step, values, 0);
  }

  /**
   * Images of shape [N, H, W, C] or [H, W, C] (uint8, or float32 in [0,
   * 1]; C is 1, 2, 3 or 4), the first {@code maxImages} as PNG, tagged
   * {@code tag} for one and "tag/0", "tag/1"... for several.
   *
   * @param tag the images' name
   * @param step the step they belong to
   * @param images the pixels
   * @param maxImages how many to write at most (at least 1)
   */
  public void addImage(String tag, long step, Tensor images, int maxImages) {
    addTensor(1, tag, step, images, maxImages);
  }

  private void addTensor(int kind, String tag, long step, Tensor t, long maxImages) {
    long w = acquire();
    try {
      long h = t.acquire();
      try {
        Native.summaryWriterAddTensor(w, kind, utf8(tag), step, h, maxImages);
      } finally {
        t.release();
      }
    } finally {
      release();
    }
  }

  /**
   * Text (Markdown) for TensorBoard's text dashboard.
   *
   * @param tag the text's name
   * @param step the step it belongs to
   * @param text the text
   */
  public void addText(String tag, long step, String text) {
    if (text == null) {
      throw new NullPointerException("text");
    }
    long w = acquire();
    try {
      Native.summaryWriterAddText(w, utf8(tag), step, utf8(text));
    } finally {
      release();
    }
  }

  /**
   * A summary op's output: a uint8 vector holding a serialized Summary.
   * Anything else throws a {@link WeftException} and writes nothing.
   *
   * @param step the step it belongs to
   * @param summary the fetched output of a summary op
   */
  public void addSummary(long step, Tensor summary) {
    long w = acquire();
    try {
      long h = summary.acquire();
      try {
        Native.summaryWriterAddSummary(w, step, h);
      } finally {
        summary.release();
      }
    } finally {
      release();
    }
  }

  /**
   * The graph for TensorBoard's graph dashboard; with {@code placement}
   * (the metadata of a run, or null) each node shows the device it ran on.
   *
   * @param graph the graph
   * @param placement a run's metadata, or null
   */
  public void addGraph(Graph graph, RunMetadata placement) {
    long w = acquire();
    try {
      long g = graph.acquire();
      try {
        long m = placement == null ? 0 : placement.acquire();
        try {
          Native.summaryWriterAddGraph(w, g, m);
        } finally {
          if (placement != null) {
            placement.release();
          }
        }
      } finally {
        graph.release();
      }
    } finally {
      release();
    }
  }

  /**
   * Records that the program restarted at {@code step} (from {@code
   * checkpoint}, or null): TensorBoard drops what earlier files of the
   * directory recorded from that step on.
   *
   * @param step the step the program continues from
   * @param checkpoint the checkpoint it restored, or null
   */
  public void addRestart(long step, String checkpoint) {
    long w = acquire();
    try {
      Native.summaryWriterAddRestart(w, step, utf8(checkpoint));
    } finally {
      release();
    }
  }

  /** Flushes the file to disk, throwing {@link WeftException} on failure. */
  public void flush() {
    long w = acquire();
    try {
      Native.summaryWriterFlush(w);
    } finally {
      release();
    }
  }
}
