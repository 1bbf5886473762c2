package org.weft;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.StringReader;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The native libraries a versioned jar carries for one platform, under
 * {@code native/<os>-<arch>/}: libweft, the JNI glue and the plugins in
 * {@code weft/plugins/}, where libweft looks for them beside its own file.
 * They are extracted together into a private cache directory named after
 * the content of their index, so that builds never share a directory, and
 * reused (after checking every file's SHA-256) by later programs.
 *
 * <p>The index, {@value #INDEX}, has one line per file: {@code load} or
 * {@code file}, the SHA-256, the size and the path under the platform
 * directory.  The {@code load} lines are loaded in their order (libweft
 * before the glue, which then binds to it by its soname, whatever the glue's
 * RUNPATH says).
 */
final class BundledNatives {
  /** Where to extract: a directory of its own (default: the user's cache). */
  static final String CACHE_PROPERTY = "weft.native.cache";
  /** {@code false} skips the jar's libraries and uses the system's. */
  static final String BUNDLED_PROPERTY = "weft.native.bundled";
  static final String INDEX = "weft-natives.txt";

  private BundledNatives() {}

  /** One line of the index. */
  private record Entry(boolean load, String sha256, long size, String path) {}

  /** {@code linux-x86_64} and the like: Meson's system and CPU family names. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) {
      os = "linux";
    } else if (os.startsWith("mac")) {
      os = "darwin";
    } else if (os.startsWith("windows")) {
      os = "windows";
    }
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64")) {
      arch = "x86_64";
    } else if (arch.equals("arm64")) {
      arch = "aarch64";
    }
    return os + "-" + arch;
  }

  private static String resourceDir() {
    return "/native/" + platform() + "/";
  }

  /** Whether -D{@value #BUNDLED_PROPERTY}=false turned the jar's libraries off. */
  static boolean disabled() {
    return "false".equalsIgnoreCase(System.getProperty(BUNDLED_PROPERTY));
  }

  /** Whether this jar carries libraries for this platform. */
  static boolean present() {
    return BundledNatives.class.getResource(resourceDir() + INDEX) != null;
  }

  /**
   * Extracts the libraries (unless a complete copy is there) and loads the
   * {@code load} ones; returns the directory they were loaded from.  The
   * cache directory comes first; where it cannot be written, a fresh
   * temporary directory, deleted when the JVM exits.
   */
  static Path load() throws IOException {
    byte[] index = read(resourceDir() + INDEX);
    List<Entry> entries = parse(new String(index, StandardCharsets.UTF_8));
    String name = HexFormat.of().formatHex(sha256(index)).substring(0, 24);
    Path dir;
    Path cache = cacheRoot();
    try {
      dir = extractShared(cache, name, entries);
    } catch (IOException | SecurityException cacheFailure) {
      try {
        dir = Files.createTempDirectory("weft-native-");
        extractInto(dir, entries);
        deleteOnExit(dir, entries);
      } catch (IOException | SecurityException tempFailure) {
        IOException both = new IOException("cannot extract them into " + cache + " ("
            + cacheFailure + ") nor into a temporary directory (" + tempFailure + ")");
        both.addSuppressed(cacheFailure);
        both.addSuppressed(tempFailure);
        throw both;
      }
    }
    for (Entry e : entries) {
      if (e.load()) {
        System.load(dir.resolve(e.path()).toAbsolutePath().toString());
      }
    }
    return dir;
  }

  private static Path cacheRoot() {
    String configured = System.getProperty(CACHE_PROPERTY);
    if (configured != null && !configured.isEmpty()) {
      return Paths.get(configured);
    }
    String xdg = System.getenv("XDG_CACHE_HOME");
    Path base = xdg != null && xdg.startsWith("/")
        ? Paths.get(xdg) : Paths.get(System.getProperty("user.home"), ".cache");
    return base.resolve("weft").resolve("native");
  }

  /**
   * root/name holding exactly the entries: reused when complete, otherwise
   * extracted into a private staging directory (mode 0700) and renamed into
   * place.  A lock on root/name.lock makes programs starting at once check
   * and extract one after the other, so that none replaces a copy another
   * is loading from.
   */
  private static Path extractShared(Path root, String name, List<Entry> entries)
      throws IOException {
    Path target = root.resolve(name);
    Files.createDirectories(root);
    try (FileChannel channel = FileChannel.open(root.resolve(name + ".lock"),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
      channel.lock();  // released when the channel closes
      if (complete(target, entries)) {
        return target;
      }
      Path staging = Files.createTempDirectory(root, ".staging-");
      try {
        extractInto(staging, entries);
        deleteTree(target);  // damaged: complete() said no
        Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        deleteTree(staging);
      }
      return target;
    } catch (OverlappingFileLockException sameJvm) {
      // Another class loader of this JVM holds the lock: use a directory of its own.
      throw new IOException("the cache directory is in use by this JVM", sameJvm);
    }
  }

  private static void extractInto(Path dir, List<Entry> entries) throws IOException {
    for (Entry e : entries) {
      Path file = dir.resolve(e.path());
      Files.createDirectories(file.getParent());
      Digest got;
      try (InputStream in = open(resourceDir() + e.path());
           OutputStream out = Files.newOutputStream(file)) {
        got = digest(in, out);
      }
      if (!got.matches(e)) {
        throw new IOException("the jar's " + resourceDir() + e.path() + " is damaged: "
            + got.size() + " bytes with SHA-256 " + got.sha256() + ", the index says " + e.size()
            + " bytes with " + e.sha256());
      }
    }
  }

  /** Whether dir holds every entry with the right size and SHA-256. */
  private static boolean complete(Path dir, List<Entry> entries) {
    try {
      for (Entry e : entries) {
        Path file = dir.resolve(e.path());
        if (!Files.isRegularFile(file) || Files.size(file) != e.size()) {
          return false;
        }
        try (InputStream in = Files.newInputStream(file)) {
          if (!digest(in, null).matches(e)) {
            return false;
          }
        }
      }
      return true;
    } catch (IOException | SecurityException e) {
      return false;
    }
  }

  private static List<Entry> parse(String index) throws IOException {
    List<Entry> entries = new ArrayList<>();
    try (BufferedReader lines = new BufferedReader(new StringReader(index))) {
      for (String line; (line = lines.readLine()) != null; ) {
        line = line.strip();
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        String[] f = line.split(" +", 4);
        Path path = f.length == 4 ? Paths.get(f[3]).normalize() : null;
        if (path == null || !(f[0].equals("load") || f[0].equals("file"))
            || path.isAbsolute() || path.startsWith("..")) {
          throw new IOException("bad line in the jar's " + INDEX + ": " + line);
        }
        entries.add(new Entry(f[0].equals("load"), f[1], Long.parseLong(f[2]), f[3]));
      }
    } catch (NumberFormatException e) {
      throw new IOException("bad size in the jar's " + INDEX, e);
    }
    return entries;
  }

  private static InputStream open(String resource) throws IOException {
    InputStream in = BundledNatives.class.getResourceAsStream(resource);
    if (in == null) {
      throw new IOException("the jar lacks " + resource);
    }
    return in;
  }

  private static byte[] read(String resource) throws IOException {
    try (InputStream in = open(resource)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      return out.toByteArray();
    }
  }

  private record Digest(long size, String sha256) {
    boolean matches(Entry e) {
      return size == e.size() && sha256.equals(e.sha256());
    }
  }

  /** Reads in to its end, copying to out unless it is null. */
  private static Digest digest(InputStream in, OutputStream out) throws IOException {
    MessageDigest digest = newSha256();
    long size = 0;
    byte[] buffer = new byte[1 << 16];
    for (int n; (n = in.read(buffer)) > 0; ) {
      digest.update(buffer, 0, n);
      if (out != null) {
        out.write(buffer, 0, n);
      }
      size += n;
    }
    return new Digest(size, HexFormat.of().formatHex(digest.digest()));
  }

  private static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }

  private static byte[] sha256(byte[] bytes) {
    return newSha256().digest(bytes);
  }

  private static void deleteOnExit(Path dir, List<Entry> entries) {
    // Registered parents first: deleteOnExit runs in reverse order.
    File root = dir.toFile();
    root.deleteOnExit();
    for (Entry e : entries) {
      List<File> chain = new ArrayList<>();
      for (File f = dir.resolve(e.path()).toFile(); !f.equals(root); f = f.getParentFile()) {
        chain.add(0, f);
      }
      chain.forEach(File::deleteOnExit);
    }
  }

  private static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | SecurityException ignored) {
      // A leftover staging directory costs disk space, not correctness.
    }
  }
}
