package org.weft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TensorBoard event files from Java: what each addition writes (records
 * read back here by their framing), the summary ops' output, and refusals.
 * What the records hold is checked by TensorBoard's own reader in
 * tests/test_tensorboard.py, for the C API underneath.
 */
class SummaryWriterTest {
  @TempDir Path dir;

  /** The payloads of the file's records, by their length fields. */
  private static List<byte[]> records(String path) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(Path.of(path)))
        .order(ByteOrder.LITTLE_ENDIAN);
    List<byte[]> out = new ArrayList<>();
    while (b.remaining() > 0) {
      long length = b.getLong();
      b.getInt();  // the length's CRC
      byte[] data = new byte[(int) length];
      b.get(data);
      b.getInt();  // the data's CRC
      out.add(data);
    }
    return out;
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; ++i) {
      for (int k = 0; k < needle.length; ++k) {
        if (haystack[i + k] != needle[k]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  @Test
  void additionsAreWrittenWholeAndAtOnce() throws IOException {
    try (SummaryWriter w = SummaryWriter.create(dir.resolve("runs/a").toString());
         Tensor values = Tensor.of(new float[] {-1, 0, 2.5f, 7}, 4);
         Tensor image = Tensor.of(new float[] {0, 0.5f, 1, 0.25f, 0.75f, 1}, 2, 3, 1)) {
      String path = w.path();
      assertTrue(path.startsWith(dir.resolve("runs/a").resolve("events.out.tfevents.")
          .toString()), path);
      assertEquals(1, records(path).size(), "the file-version event first");
      assertTrue(contains(records(path).get(0), "brain.Event:2".getBytes(StandardCharsets.UTF_8)));
      String tag = "loss/\u00e9t\u00e9 \ud83d\udcc8";  // outside the BMP too
      w.addScalar(tag, 3, 0.5);
      w.addHistogram("weights", 3, values);
      w.addImage("picture", 3, image, 1);
      w.addText("notes", 3, "**bold** \ud83d\ude80");
      w.addRestart(2, null);
      w.flush();
      List<byte[]> got = records(path);
      assertEquals(6, got.size());
      // Standard UTF-8, not JNI's modified UTF-8 (surrogates apart).
      assertTrue(contains(got.get(1), tag.getBytes(StandardCharsets.UTF_8)));
      assertTrue(contains(got.get(3), new byte[] {(byte) 0x89, 'P', 'N', 'G'}));
      assertTrue(contains(got.get(4), "\ud83d\ude80".getBytes(StandardCharsets.UTF_8)));
    }
  }

  @Test
  void summaryOpsAndTheGraph() throws IOException {
    try (Graph g = new Graph();
         Tensor x = Tensor.of(new float[] {1, 2, 3}, 3)) {
      Output c = g.constant("x", x);
      Output scalar = g.opBuilder("ScalarSummary", "s").input(g.constant("one", 1.0f))
          .attr("tag", "op/scalar").finishOutput();
      Output hist = g.opBuilder("HistogramSummary", "h").input(c).attr("tag", "op/hist")
          .finishOutput();
      Output merged = g.opBuilder("MergeSummary", "m").input(scalar).input(hist)
          .finishOutput();
      try (Session s = new Session(g);
           RunMetadata md = new RunMetadata();
           Session.Result r = s.runner().fetch(merged).metadata(md).run();
           SummaryWriter w = SummaryWriter.create(dir.toString(), ".java")) {
        Tensor bytes = r.get(0);
        assertEquals(DataType.UINT8, bytes.dtype());
        w.addSummary(7, bytes);
        w.addGraph(g, md);
        List<byte[]> got = records(w.path());
        assertTrue(w.path().endsWith(".java"), w.path());
        assertEquals(3, got.size());
        assertTrue(contains(got.get(1), "op/hist".getBytes(StandardCharsets.UTF_8)));
        assertTrue(contains(got.get(2), "MergeSummary".getBytes(StandardCharsets.UTF_8)));
        assertTrue(contains(got.get(2), "CPU:0".getBytes(StandardCharsets.UTF_8)));
        // Bytes that are no summary are refused and nothing is written.
        try (Tensor junk = Tensor.of(DataType.UINT8, new byte[] {-1, -1, -1}, 3)) {
          WeftException e = assertThrows(WeftException.class, () -> w.addSummary(8, junk));
          assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
        }
        assertEquals(3, records(w.path()).size());
      }
    }
  }

  @Test
  void badInputIsRefused() throws IOException {
    Path file = dir.resolve("plain");
    Files.writeString(file, "x");
    WeftException notDir = assertThrows(WeftException.class,
        () -> SummaryWriter.create(file.toString()));
    assertEquals(WeftException.Code.FAILED_PRECONDITION, notDir.code());
    SummaryWriter w = SummaryWriter.create(dir.toString());
    try (Tensor nan = Tensor.of(new float[] {1, Float.NaN}, 2)) {
      assertEquals(WeftException.Code.INVALID_ARGUMENT,
          assertThrows(WeftException.class, () -> w.addScalar("", 0, 1)).code());
      assertThrows(IllegalArgumentException.class, () -> w.addScalar("a\0b", 0, 1));
      assertThrows(WeftException.class, () -> w.addHistogram("h", 0, nan));
      assertThrows(WeftException.class, () -> w.addImage("i", 0, nan, 1));
      assertThrows(NullPointerException.class, () -> w.addText("t", 0, null));
      assertEquals(1, records(w.path()).size(), "nothing refused was written");
    } finally {
      w.close();
    }
    assertThrows(IllegalStateException.class, () -> w.addScalar("x", 0, 1));
  }
}
