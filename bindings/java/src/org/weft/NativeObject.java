package org.weft;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;

/**
 * A Java object that owns one native handle.
 *
 * <p>Every native call goes through {@link #acquire()} and {@link #release()},
 * which count the calls in flight: {@link #close()} marks the object closed
 * at once (later uses throw {@link IllegalStateException}) and the native
 * object is freed when the last call in flight returns, so closing from one
 * thread while another runs can never free memory under it.  A {@link
 * Cleaner} frees what a program forgot to close; it is a safety net, not the
 * way to manage native memory.
 */
abstract class NativeObject implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  /**
   * Frees the handle once.  It holds no reference to the owner, which the
   * Cleaner needs to see become unreachable.
   */
  private static final class Release implements Runnable {
    private long handle;
    private final LongConsumer free;

    Release(long handle, LongConsumer free) {
      this.handle = handle;
      this.free = free;
    }

    @Override
    public synchronized void run() {
      long h = handle;
      handle = 0;
      if (h != 0) {
        free.accept(h);
      }
    }

    synchronized void disown() {
      handle = 0;
    }
  }

  /** Twice the number of calls in flight, plus 1 once closed. */
  private final AtomicInteger state = new AtomicInteger();
  private final long handle;
  private final Release release;
  private final Cleaner.Cleanable cleanable;

  /** Takes ownership of {@code handle} (non-zero), freed by {@code free}. */
  NativeObject(long handle, LongConsumer free) {
    if (handle == 0) {
      throw new IllegalArgumentException("null native handle");
    }
    this.handle = handle;
    this.release = new Release(handle, free);
    this.cleanable = CLEANER.register(this, release);
  }

  /**
   * The handle, counted as in use until {@link #release()}.
   *
   * @throws IllegalStateException when the object is closed
   */
  final long acquire() {
    for (;;) {
      int s = state.get();
      if ((s & 1) != 0) {
        throw new IllegalStateException(getClass().getSimpleName() + " is closed");
      }
      if (state.compareAndSet(s, s + 2)) {
        return handle;
      }
    }
  }

  /** Ends a use begun by {@link #acquire()}. */
  final void release() {
    if (state.addAndGet(-2) == 1) {
      cleanable.clean();
    }
  }

  /**
   * The handles of {@code objects}, each acquired until {@link
   * #releaseAll}; when one is closed, none stays acquired.
   */
  static long[] acquireAll(NativeObject[] objects) {
    long[] handles = new long[objects.length];
    int acquired = 0;
    try {
      for (; acquired < objects.length; ++acquired) {
        handles[acquired] = objects[acquired].acquire();
      }
      return handles;
    } catch (RuntimeException e) {
      for (int i = 0; i < acquired; ++i) {
        objects[i].release();
      }
      throw e;
    }
  }

  /** Ends the uses begun by {@link #acquireAll}. */
  static void releaseAll(NativeObject[] objects) {
    for (NativeObject o : objects) {
      o.release();
    }
  }

  /** Throws {@link IllegalStateException} when closed. */
  final void checkOpen() {
    if (isClosed()) {
      throw new IllegalStateException(getClass().getSimpleName() + " is closed");
    }
  }

  /**
   * Marks the object closed without freeing the handle: native code took
   * ownership of it (an op builder consumed by finish).
   */
  final void disown() {
    release.disown();
    close();
  }

  /**
   * Hands the handle over to native code that takes it over: the object is
   * closed at once and never frees it.
   *
   * @throws IllegalStateException when closed, or while a call on it is in
   *     flight (that call would outlive the handle)
   */
  final long handOver() {
    if (!state.compareAndSet(0, 1)) {
      throw new IllegalStateException(getClass().getSimpleName()
          + (isClosed() ? " is closed" : " is in use on another thread"));
    }
    release.disown();
    cleanable.clean();
    return handle;
  }

  /**
   * Whether {@link #close()} was called.
   *
   * @return true once closed
   */
  public final boolean isClosed() {
    return (state.get() & 1) != 0;
  }

  /**
   * Releases the native object (once no call on it is in flight).  Closing
   * twice is harmless.
   */
  @Override
  public void close() {
    for (;;) {
      int s = state.get();
      if ((s & 1) != 0) {
        return;
      }
      if (state.compareAndSet(s, s | 1)) {
        if (s == 0) {
          cleanable.clean();
        }
        return;
      }
    }
  }
}
