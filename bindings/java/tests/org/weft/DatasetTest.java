package org.weft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Datasets read through an iterator node: sources, transformations, the end
 * of the data, TFRecord files written and read back.  Expected values are
 * worked out from the inputs the tests make, never from Weft.
 */
class DatasetTest {
  /** A graph and session reading one dataset through iterator "it". */
  private static final class Reader implements AutoCloseable {
    final Graph graph = new Graph();
    final DatasetIterator it;
    final Session session;

    Reader(Dataset dataset) {
      it = dataset.iterator(graph, "it");
      session = new Session(graph, new SessionOptions().devices("CPU"));
    }

    /** The next element; the caller closes it. */
    Session.Result next() {
      return session.run(new Output[0], new Tensor[0], it.outputs(), new Node[0], null);
    }

    /** Component 0 of every element left, as longs; then checks the end. */
    List<long[]> rest() {
      List<long[]> out = new ArrayList<>();
      for (;;) {
        Session.Result r;
        try {
          r = next();
        } catch (WeftException e) {
          assertEquals(WeftException.Code.OUT_OF_RANGE, e.code(), e.getMessage());
          return out;
        }
        try (r) {
          out.add(r.get(0).toLongArray());
        }
      }
    }

    void expectEnd() {
      WeftException e = assertThrows(WeftException.class, () -> next().close());
      assertEquals(WeftException.Code.OUT_OF_RANGE, e.code(), e.getMessage());
      assertTrue(e.statusMessage().contains("end of dataset"), e.statusMessage());
    }

    @Override
    public void close() {
      session.close();
      graph.close();
    }
  }

  private static long[] scalars(List<long[]> elements) {
    return elements.stream().mapToLong(e -> {
      assertEquals(1, e.length);
      return e[0];
    }).toArray();
  }

  private static Output int64(Graph g, long value) {
    try (Tensor t = Tensor.scalar(value)) {
      return g.constant(null, t);
    }
  }

  @Test
  void rangeMapBatchThenOutOfRange() {
    try (Dataset range = Dataset.range(0, 10);
         Dataset doubled = range.map((g, x) ->
             new Output[] {g.apply("Mul", null, x[0], int64(g, 2))});
         Dataset batches = doubled.batch(4);
         Reader r = new Reader(batches)) {
      assertEquals("Batch(Map(Range))", batches.name());
      assertEquals(List.of(DataType.INT64), batches.componentTypes());
      assertEquals(1, batches.numComponents());
      List<long[]> got = r.rest();
      assertEquals(3, got.size());
      assertArrayEquals(new long[] {0, 2, 4, 6}, got.get(0));
      assertArrayEquals(new long[] {8, 10, 12, 14}, got.get(1));
      assertArrayEquals(new long[] {16, 18}, got.get(2), "the last batch is smaller");
      r.expectEnd();
      r.expectEnd();
      r.session.run(r.it.init());
      try (Session.Result first = r.next()) {
        assertArrayEquals(new long[] {0, 2, 4, 6}, first.get(0).toLongArray(),
            "init starts the pass again");
      }
    }
  }

  @Test
  void dropRemainderTakeSkipRepeatAndDownwardRange() {
    try (Dataset range = Dataset.range(0, 10, 3);   // 0 3 6 9
         Dataset pipeline = range.skip(1).take(2).repeat(2);   // 3 6 3 6
         Dataset down = Dataset.range(5, 0, -2);   // 5 3 1
         Dataset batches = Dataset.range(0, 10).batch(4, true)) {
      assertEquals("Repeat(Take(Skip(Range)))", pipeline.name());
      try (Reader r = new Reader(pipeline)) {
        assertArrayEquals(new long[] {3, 6, 3, 6}, scalars(r.rest()));
      }
      try (Reader r = new Reader(down)) {
        assertArrayEquals(new long[] {5, 3, 1}, scalars(r.rest()));
      }
      try (Reader r = new Reader(batches)) {
        List<long[]> got = r.rest();
        assertEquals(2, got.size(), "the short batch is dropped");
        assertArrayEquals(new long[] {4, 5, 6, 7}, got.get(1));
      }
      try (Dataset empty = range.take(0);
           Dataset forever = empty.repeat();
           Reader r = new Reader(forever)) {
        r.expectEnd();   // an empty input repeated forever stays empty
      }
    }
  }

  @Test
  void explicitFunctionGraphMapsInParallelInOrder() {
    try (Dataset range = Dataset.range(0, 50)) {
      Dataset mapped;
      try (Graph fn = new Graph()) {
        Output x = fn.placeholder("x", DataType.INT64, Shape.scalar());
        Output y = fn.apply("Add", "y", fn.apply("Mul", null, x, int64(fn, 3)), int64(fn, 1));
        Output square = fn.apply("Mul", "square", x, x);
        mapped = range.map(fn, new Output[] {x}, new Output[] {y, square}, 4);
      }   // the dataset keeps what it needs of fn
      try (mapped; Reader r = new Reader(mapped)) {
        assertEquals(List.of(DataType.INT64, DataType.INT64), mapped.componentTypes());
        for (long i = 0; i < 50; ++i) {
          try (Session.Result e = r.next()) {
            assertEquals(3 * i + 1, e.get(0).longValue());
            assertEquals(i * i, e.get(1).longValue());
          }
        }
        r.expectEnd();
      }
    }
  }

  @Test
  void filterKeepsWhatThePredicateAccepts() {
    try (Dataset range = Dataset.range(0, 20);
         Dataset odd = range.filter((g, x) -> g.apply("NotEqual", null,
             g.apply("FloorMod", null, x[0], int64(g, 2)), int64(g, 0)));
         Graph fn = new Graph()) {
      assertEquals("Filter(Range)", odd.name());
      try (Reader r = new Reader(odd)) {
        assertArrayEquals(new long[] {1, 3, 5, 7, 9, 11, 13, 15, 17, 19}, scalars(r.rest()));
      }
      Output x = fn.placeholder("x", DataType.INT64, Shape.scalar());
      Output small = fn.apply("Less", "small", x, int64(fn, 4));
      try (Dataset first = range.filter(fn, new Output[] {x}, small);
           Reader r = new Reader(first)) {
        assertArrayEquals(new long[] {0, 1, 2, 3}, scalars(r.rest()));
      }
    }
  }

  /** Two passes of 0..39 shuffled with a buffer of 16. */
  private static long[] shuffled(long seed) {
    try (Dataset range = Dataset.range(0, 40);
         Dataset sh = range.shuffle(16, seed);
         Reader r = new Reader(sh)) {
      long[] first = scalars(r.rest());
      r.session.run(r.it.init());
      long[] second = scalars(r.rest());
      long[] both = Arrays.copyOf(first, 80);
      System.arraycopy(second, 0, both, 40, 40);
      return both;
    }
  }

  @Test
  void shuffleIsSeededAndAPermutation() {
    long[] a = shuffled(11);
    long[] b = shuffled(11);
    long[] c = shuffled(12);
    assertArrayEquals(a, b, "the same seed shuffles the same way");
    assertFalse(Arrays.equals(a, c), "another seed shuffles another way");
    assertFalse(Arrays.equals(Arrays.copyOfRange(a, 0, 40), Arrays.copyOfRange(a, 40, 80)),
        "each pass shuffles differently");
    for (int pass = 0; pass < 2; ++pass) {
      long[] sorted = Arrays.copyOfRange(a, 40 * pass, 40 * pass + 40);
      Arrays.sort(sorted);
      for (int i = 0; i < 40; ++i) {
        assertEquals(i, sorted[i], "pass " + pass + " is a permutation");
      }
    }
    for (int i = 0; i < 40; ++i) {
      assertTrue(a[i] <= i + 15, "nothing comes more than 15 places early");
    }
  }

  @Test
  void tensorSlicesZipAndPrefetch() {
    float[] images = new float[10 * 2];
    int[] labels = new int[10];
    for (int i = 0; i < 10; ++i) {
      images[2 * i] = i;
      images[2 * i + 1] = 100 + i;
      labels[i] = i % 3;
    }
    Dataset slices;
    try (Tensor x = Tensor.of(images, 10, 2);
         Tensor y = Tensor.of(labels, 10)) {
      slices = Dataset.fromTensorSlices(x, y);
    }   // the dataset copied them
    try (slices;
         Dataset counter = Dataset.range(100, 103);
         Dataset zipped = Dataset.zip(slices, counter);
         Dataset pipeline = zipped.batch(2).prefetch(2);
         Reader r = new Reader(pipeline)) {
      assertEquals(List.of(DataType.FLOAT32, DataType.INT32), slices.componentTypes());
      assertEquals("Zip(TensorSlices, Range)", zipped.name());
      assertEquals(List.of(DataType.FLOAT32, DataType.INT32, DataType.INT64),
          pipeline.componentTypes());
      try (Session.Result e = r.next()) {
        assertArrayEquals(new long[] {2, 2}, e.get(0).shape());
        assertArrayEquals(new float[] {0, 100, 1, 101}, e.get(0).toFloatArray());
        assertArrayEquals(new int[] {0, 1}, e.get(1).toIntArray());
        assertArrayEquals(new long[] {100, 101}, e.get(2).toLongArray());
      }
      try (Session.Result e = r.next()) {
        assertArrayEquals(new long[] {1, 2}, e.get(0).shape(), "zip ends with the shortest");
        assertArrayEquals(new float[] {2, 102}, e.get(0).toFloatArray());
        assertArrayEquals(new int[] {2}, e.get(1).toIntArray());
        assertArrayEquals(new long[] {102}, e.get(2).toLongArray());
      }
      r.expectEnd();
    }
  }

  @Test
  void tfRecordsWrittenAreReadBack(@TempDir Path dir) {
    byte[][] records = {
        "x".getBytes(StandardCharsets.UTF_8),
        "hello".getBytes(StandardCharsets.UTF_8),
        new byte[0],
        {0, (byte) 0xff, 7, (byte) 0x80},
    };
    for (Compression compression : Compression.values()) {
      String path = dir.resolve("r-" + compression + ".tfrecord").toString();
      TfRecord.write(path, compression, records);
      try (Dataset ds = Dataset.tfRecord(compression, path);
           Reader r = new Reader(ds)) {
        assertEquals(List.of(DataType.UINT8), ds.componentTypes());
        for (byte[] want : records) {
          try (Session.Result e = r.next()) {
            assertArrayEquals(new long[] {want.length}, e.get(0).shape());
            assertArrayEquals(want, e.get(0).toByteArray(), compression.toString());
          }
        }
        r.expectEnd();
      }
    }
    // A tensor record is its bytes; two files read one after the other.
    String ints = dir.resolve("ints.tfrecord").toString();
    try (Tensor t = Tensor.of(new int[] {1, 2}, 2)) {
      TfRecord.write(ints, Compression.NONE, t);
    }
    String plain = dir.resolve("r-NONE.tfrecord").toString();
    try (Dataset ds = Dataset.tfRecord(ints, plain);
         Reader r = new Reader(ds)) {
      try (Session.Result e = r.next()) {
        byte[] bytes = e.get(0).toByteArray();
        assertEquals(8, bytes.length);
        assertEquals(2, java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.nativeOrder())
            .getInt(4));
      }
      try (Session.Result e = r.next()) {
        assertArrayEquals(records[0], e.get(0).toByteArray());
      }
    }
  }

  @Test
  void textLinesInPaddedBatches(@TempDir Path dir) throws IOException {
    Path text = dir.resolve("lines.txt");
    Files.write(text, "ab\r\nabcd\n\nz\n".getBytes(StandardCharsets.US_ASCII));
    try (Dataset lines = Dataset.textLines(text.toString());
         Dataset padded = lines.paddedBatch(3, false);
         Reader r = new Reader(padded)) {
      try (Session.Result e = r.next()) {
        assertArrayEquals(new long[] {3, 4}, e.get(0).shape());
        assertArrayEquals("ab\0\0abcd\0\0\0\0".getBytes(StandardCharsets.US_ASCII),
            e.get(0).toByteArray());
      }
      try (Session.Result e = r.next()) {
        assertArrayEquals(new long[] {1, 1}, e.get(0).shape());
        assertArrayEquals(new byte[] {'z'}, e.get(0).toByteArray());
      }
      r.expectEnd();
    }
  }

  @Test
  void idxFileAsSlicesCastByAMap(@TempDir Path dir) throws IOException {
    // 5 slices of 2x3 uint8; byte k of slice i is (6i + k) * 7.
    byte[] file = new byte[16 + 30];
    byte[] head = {0, 0, 0x08, 3, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 3};
    System.arraycopy(head, 0, file, 0, 16);
    for (int i = 0; i < 30; ++i) {
      file[16 + i] = (byte) (i * 7);
    }
    Path path = dir.resolve("images.idx");
    Files.write(path, file);
    try (Dataset idx = Dataset.idx(path.toString());
         Dataset floats = idx.map((g, x) -> new Output[] {g.opBuilder("Cast", "f")
             .input(x[0]).attr("DstT", DataType.FLOAT32).finishOutput()}, 2);
         Reader r = new Reader(floats)) {
      assertEquals(DataType.UINT8, idx.componentType(0));
      for (int i = 0; i < 5; ++i) {
        try (Session.Result e = r.next()) {
          assertArrayEquals(new long[] {2, 3}, e.get(0).shape());
          float[] v = e.get(0).toFloatArray();
          for (int k = 0; k < 6; ++k) {
            assertEquals((float) (((6 * i + k) * 7) & 0xff), v[k]);
          }
        }
      }
      r.expectEnd();
    }
    file[2] = 0x07;   // no such element type
    Files.write(path, file);
    WeftException e = assertThrows(WeftException.class, () -> Dataset.idx(path.toString()));
    assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
    assertTrue(e.statusMessage().contains(path.toString()), e.statusMessage());
  }

  @Test
  void badArgumentsAreWeftExceptionsWithTheCMessage() {
    try (Dataset range = Dataset.range(0, 4)) {
      WeftException e = assertThrows(WeftException.class, () -> Dataset.range(0, 4, 0));
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.statusMessage().contains("step"), e.statusMessage());
      e = assertThrows(WeftException.class, () -> range.batch(0));
      assertTrue(e.statusMessage().contains("batch_size"), e.statusMessage());
      e = assertThrows(WeftException.class, () -> range.shuffle(0, 1));
      assertTrue(e.statusMessage().contains("buffer_size"), e.statusMessage());
      e = assertThrows(WeftException.class, () -> Dataset.fromTensorSlices());
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      // A function input of the wrong dtype.
      e = assertThrows(WeftException.class, () -> {
        try (Graph fn = new Graph()) {
          Output f = fn.placeholder("x", DataType.FLOAT32, Shape.scalar());
          range.map(fn, new Output[] {f}, new Output[] {f}, 1);
        }
      });
      assertTrue(e.statusMessage().contains("float32") && e.statusMessage().contains("int64"),
          e.statusMessage());
      e = assertThrows(WeftException.class,
          () -> range.map((g, x) -> new Output[] {x[0]}, 65));
      assertTrue(e.statusMessage().contains("num_parallel_calls"), e.statusMessage());
      // A predicate that is not a bool.
      e = assertThrows(WeftException.class, () -> range.filter((g, x) -> x[0]));
      assertTrue(e.statusMessage().contains("bool"), e.statusMessage());
      // An iterator needs a name: its state is kept per session by name.
      try (Graph g = new Graph()) {
        e = assertThrows(WeftException.class, () -> range.iterator(g, null));
        assertTrue(e.statusMessage().contains("name"), e.statusMessage());
        e = assertThrows(WeftException.class, () -> range.iterator(g, ""));
        assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      }
      // A lambda's own exception comes through as it was.
      IllegalStateException thrown = new IllegalStateException("from the lambda");
      assertSame(thrown, assertThrows(IllegalStateException.class,
          () -> range.map((g, x) -> {
            throw thrown;
          })));
      assertThrows(IndexOutOfBoundsException.class, () -> range.componentType(1));
      // Outputs of another graph are refused before C sees them.
      try (Graph other = new Graph()) {
        Output foreign = other.placeholder("x", DataType.INT64, Shape.scalar());
        assertThrows(IllegalArgumentException.class,
            () -> range.map((g, x) -> new Output[] {foreign}));
      }
    }
  }

  @Test
  void dataErrorsComeFromTheRunThatReadsThem(@TempDir Path dir) {
    String missing = dir.resolve("absent.tfrecord").toString();
    try (Dataset ds = Dataset.tfRecord(missing);
         Reader r = new Reader(ds)) {
      WeftException e = assertThrows(WeftException.class, () -> r.next().close());
      assertTrue(e.statusMessage().contains(missing), e.statusMessage());
    }
    try (Dataset range = Dataset.range(0, 4);
         Dataset divided = range.map((g, x) ->
             new Output[] {g.apply("Div", "q", x[0], int64(g, 0))});
         Reader r = new Reader(divided)) {
      WeftException e = assertThrows(WeftException.class, () -> r.next().close());
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.statusMessage().contains("division by zero"), e.statusMessage());
      assertTrue(e.statusMessage().contains("Map(Range)"), e.statusMessage());
    }
  }

  @Test
  void handlesCloseOnceAndGraphsKeepWhatTheyRead() {
    Dataset range = Dataset.range(0, 3);
    Dataset taken = range.take(2);
    range.close();
    range.close();   // harmless
    assertThrows(IllegalStateException.class, range::name);
    assertThrows(IllegalStateException.class, () -> range.batch(2));
    assertEquals("Dataset(closed)", range.toString());
    assertEquals("Dataset(Take(Range))", taken.toString(), "a derived dataset keeps its input");
    try (Graph g = new Graph()) {
      DatasetIterator it = taken.iterator(g, "it", false);
      assertNull(it.init());
      assertEquals(1, it.components().size());
      assertEquals("IteratorGetNext", it.component(0).node().opType());
      assertEquals("it", it.component(0).node().name());
      assertEquals(DataType.INT64, it.component(0).dtype());
      taken.close();   // the graph keeps the dataset
      try (Session s = new Session(g, new SessionOptions().devices("CPU"))) {
        for (long want = 0; want < 2; ++want) {
          try (Session.Result e = s.runner().fetch(it.component(0)).run()) {
            assertEquals(want, e.get(0).longValue());
          }
        }
        WeftException e = assertThrows(WeftException.class,
            () -> s.runner().fetch(it.component(0)).run());
        assertEquals(WeftException.Code.OUT_OF_RANGE, e.code());
      }
      // Each name is an iterator of its own, per session.
      try (Dataset again = Dataset.range(7, 9)) {
        DatasetIterator second = again.iterator(g, "second");
        assertEquals("second/init", second.init().name());
        assertNotEquals(it.component(0).node(), second.component(0).node());
        try (Session s = new Session(g, new SessionOptions().devices("CPU"));
             Session.Result e = s.runner().fetch(second.component(0))
                 .fetch(it.component(0)).run()) {
          assertEquals(7, e.get(0).longValue());
          assertEquals(0, e.get(1).longValue(), "a new session starts every iterator anew");
        }
      }
    }
  }
  @Test
  void fixedLengthRecordsWithHeaderFooterAndGzip(@TempDir Path dir) throws IOException {
    // A 3-byte header, three records of 4 bytes, a 2-byte footer.
    byte[] file = new byte[3 + 12 + 2];
    for (int i = 0; i < file.length; ++i) {
      file[i] = (byte) (i * 11);
    }
    Path plain = dir.resolve("plain.bin");
    Files.write(plain, file);
    Path gzip = dir.resolve("records.bin.gz");
    try (java.util.zip.GZIPOutputStream out =
             new java.util.zip.GZIPOutputStream(Files.newOutputStream(gzip))) {
      out.write(file);
    }
    try (Dataset a = Dataset.fixedLengthRecords(3, 4, 2, Compression.NONE, plain.toString());
         Dataset b = Dataset.fixedLengthRecords(3, 4, 2, Compression.GZIP, gzip.toString())) {
      for (Dataset ds : new Dataset[] {a, b}) {
        assertEquals(List.of(DataType.UINT8), ds.componentTypes());
        try (Reader r = new Reader(ds)) {
          for (int k = 0; k < 3; ++k) {
            try (Session.Result e = r.next()) {
              assertArrayEquals(Arrays.copyOfRange(file, 3 + 4 * k, 7 + 4 * k),
                  e.get(0).toByteArray(), "record " + k);
            }
          }
          r.expectEnd();
        }
      }
    }
    // Records of 5 bytes do not fill the 17 bytes of the plain file.
    try (Dataset ds = Dataset.fixedLengthRecords(5, plain.toString());
         Reader r = new Reader(ds)) {
      for (int k = 0; k < 3; ++k) {
        r.next().close();
      }
      WeftException e = assertThrows(WeftException.class, () -> r.next().close());
      assertEquals(WeftException.Code.DATA_LOSS, e.code(), e.getMessage());
      assertTrue(e.statusMessage().contains(plain.toString()), e.statusMessage());
    }
    WeftException e = assertThrows(WeftException.class,
        () -> Dataset.fixedLengthRecords(0, plain.toString()));
    assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
  }

  @Test
  void interleaveReadsTheDatasetsItMakesInTurn() {
    // Element i of the input becomes range(10 i, 10 i + 3).  With a cycle
    // of 2 and blocks of 2 (tf.data's order): 0 1 from the first, 10 11
    // from the second, 2 from the first, which then ends; 12 from the
    // second, which ends; the third opens in the first slot: 20 21 22.
    long[] want = {0, 1, 10, 11, 2, 12, 20, 21, 22};
    Dataset.InterleaveFunction ranges = element -> {
      long i = element[0].longValue();
      return Dataset.range(10 * i, 10 * i + 3);
    };
    try (Dataset input = Dataset.range(0, 3)) {
      for (int parallel : new int[] {1, 3}) {
        try (Dataset mixed = input.interleave(ranges, List.of(DataType.INT64), 2, 2, parallel);
             Reader r = new Reader(mixed)) {
          assertEquals("Interleave(Range)", mixed.name());
          assertArrayEquals(want, scalars(r.rest()), parallel + " parallel calls");
        }
      }
      // An exception ends the pass naming the input element; a
      // WeftException keeps its code.
      try (Dataset failing = input.interleave(element -> {
             if (element[0].longValue() == 1) {
               throw new WeftException(WeftException.Code.NOT_FOUND, "planted: no such shard");
             }
             return Dataset.range(0, 1);
           }, List.of(DataType.INT64), 1, 1, 1);
           Reader r = new Reader(failing)) {
        try (Session.Result first = r.next()) {
          assertEquals(0, first.get(0).longValue());
        }
        WeftException e = assertThrows(WeftException.class, () -> r.next().close());
        assertEquals(WeftException.Code.NOT_FOUND, e.code(), e.getMessage());
        assertTrue(e.statusMessage().contains("planted: no such shard"), e.statusMessage());
        assertTrue(e.statusMessage().contains("input element 1"), e.statusMessage());
      }
      // A dataset of other dtypes than declared.
      try (Dataset wrong = input.interleave(element -> Dataset.range(0, 1),
               List.of(DataType.FLOAT32), 1, 1, 1);
           Reader r = new Reader(wrong)) {
        WeftException e = assertThrows(WeftException.class, () -> r.next().close());
        assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code(), e.getMessage());
      }
      WeftException e = assertThrows(WeftException.class,
          () -> input.interleave(ranges, List.of(DataType.INT64), 0, 1, 1));
      assertTrue(e.statusMessage().contains("cycle_length"), e.statusMessage());
    }
  }

  @Test
  void interleaveOfTfRecordFilesNamedInATextFile(@TempDir Path dir) throws IOException {
    String[][] files = {{"a0", "a1"}, {"b0", "b1", "b2"}, {"c0"}};
    StringBuilder list = new StringBuilder();
    for (int f = 0; f < files.length; ++f) {
      String path = dir.resolve("shard-" + f + ".tfrecord").toString();
      byte[][] records = new byte[files[f].length][];
      for (int k = 0; k < records.length; ++k) {
        records[k] = files[f][k].getBytes(StandardCharsets.UTF_8);
      }
      TfRecord.write(path, records);
      list.append(path).append('\n');
    }
    Path listing = dir.resolve("shards.txt");
    Files.write(listing, list.toString().getBytes(StandardCharsets.UTF_8));
    // Cycle 2, blocks of 1: a0 b0 a1 b1, the first file ends, b2, the third
    // opens in its slot: c0.
    try (Dataset paths = Dataset.textLines(listing.toString());
         Dataset records = paths.interleave(
             element -> Dataset.tfRecord(
                 new String(element[0].toByteArray(), StandardCharsets.UTF_8)),
             List.of(DataType.UINT8), 2, 1, 2);
         Reader r = new Reader(records)) {
      List<String> got = new ArrayList<>();
      for (int k = 0; k < 6; ++k) {
        try (Session.Result e = r.next()) {
          got.add(new String(e.get(0).toByteArray(), StandardCharsets.UTF_8));
        }
      }
      assertEquals(List.of("a0", "b0", "a1", "b1", "b2", "c0"), got);
      r.expectEnd();
    }
  }
}
