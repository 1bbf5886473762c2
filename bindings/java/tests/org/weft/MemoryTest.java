package org.weft;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * 10,000 create/close cycles leave the process's resident memory flat:
 * nothing native leaks per object.  A warm-up of twice as many cycles first
 * lets the allocators and the JIT reach their steady state (the JIT alone
 * adds a few MB over the first 20,000), and the test JVM runs with a fixed,
 * pre-touched heap (-Xms = -Xmx, -XX:+AlwaysPreTouch) so that Java heap
 * growth is not mistaken for native memory.
 */
class MemoryTest {
  static final int CYCLES = 10_000;
  /** Slack for allocator and JIT noise; a leak of even 1 KiB per cycle is 10 MB. */
  static final long SLACK_BYTES = 6L << 20;

  /**
   * In an AddressSanitizer build (WEFT_SANITIZE=full; meson sets
   * WEFT_TEST_SANITIZED) freed memory waits in ASan's quarantine before it is
   * reused, so the resident size grows without any leak, and the leak check
   * there would be LeakSanitizer's, which is off for the JVM.
   */
  @BeforeAll
  static void notUnderAddressSanitizer() {
    assumeTrue(!"1".equals(System.getenv("WEFT_TEST_SANITIZED")),
        "skipped: under AddressSanitizer freed memory waits in its quarantine,"
            + " so the resident size grows without a leak");
  }

  /** Resident set size from /proc/self/statm (pages of 4 KiB on Linux x86-64 and arm64). */
  static long rss() throws IOException {
    String[] fields = Files.readString(Path.of("/proc/self/statm")).trim().split("\\s+");
    return Long.parseLong(fields[1]) * 4096;
  }

  interface Cycle {
    void run(int i) throws Exception;
  }

  static void assertFlat(String what, Cycle cycle) throws Exception {
    for (int i = 0; i < 2 * CYCLES; ++i) {
      cycle.run(i);
    }
    System.gc();
    long before = rss();
    for (int i = 0; i < CYCLES; ++i) {
      cycle.run(i);
    }
    System.gc();
    long after = rss();
    System.err.printf("%s: RSS %d KiB before, %d KiB after %d cycles%n", what, before >> 10,
        after >> 10, CYCLES);
    assertTrue(after - before < SLACK_BYTES,
        what + ": RSS grew by " + ((after - before) >> 10) + " KiB over " + CYCLES + " cycles");
  }

  @Test
  void tensorsFromArrays() throws Exception {
    float[] values = new float[16 * 1024];
    assertFlat("array tensors", i -> {
      try (Tensor t = Tensor.of(values, 16, 1024)) {
        t.copyTo(values);
      }
    });
  }

  @Test
  void tensorsOverDirectBuffers() throws Exception {
    ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
    assertFlat("buffer tensors", i -> {
      try (Tensor t = Tensor.fromBuffer(DataType.FLOAT32, buffer, 16, 1024)) {
        t.dtype();
      }
    });
  }

  @Test
  void graphsSessionsAndRuns() throws Exception {
    assertFlat("graph, session, run", i -> {
      try (Graph g = new Graph()) {
        Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(64));
        Output y = g.opBuilder("Sum", "y").input(g.apply("Square", "sq", x))
            .attr("keep_dims", false).finishOutput();
        try (Session s = new Session(g, new SessionOptions().threads(1));
             Tensor feed = Tensor.of(new float[64], 64);
             RunMetadata m = new RunMetadata();
             Session.Result r = s.runner().feed(x, feed).fetch(y).metadata(m).run()) {
          r.get(0).floatValue();
        }
      }
    });
  }

  @Test
  void datasetsIteratorsAndTheirErrors() throws Exception {
    try (Tensor slices = Tensor.of(new float[64], 16, 4)) {
      assertFlat("datasets", i -> {
        try (Dataset source = Dataset.fromTensorSlices(slices);
             Dataset batches = source.batch(8);
             Graph g = new Graph()) {
          DatasetIterator it = batches.iterator(g, "it");
          try (Session s = new Session(g, new SessionOptions().threads(1));
               Session.Result r = s.runner().fetch(it.component(0)).run()) {
            r.get(0).shape();
          }
          try {
            source.batch(0);
            throw new AssertionError("a batch of 0 was made");
          } catch (WeftException expected) {
            // the status became this exception and was destroyed
          }
        }
      });
    }
  }

  @Test
  void failedCallsLeakNothing() throws Exception {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2));
      try (Session s = new Session(g)) {
        assertFlat("errors", i -> {
          try {
            g.opBuilder("NoSuchOp", null).input(x).attr("a", 1).finish();
          } catch (WeftException expected) {
            // the status became this exception and was destroyed
          }
          try {
            s.runner().fetch(x).run().close();
            throw new AssertionError("ran without its feed");
          } catch (WeftException expected) {
            // likewise
          }
        });
      }
    }
  }
}
