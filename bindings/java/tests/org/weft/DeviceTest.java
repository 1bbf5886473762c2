package org.weft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Versions, plugins, devices, the op library, and choosing devices. */
class DeviceTest {
  @Test
  void versions() {
    assertFalse(Weft.version().isEmpty());
    assertTrue(Weft.abiVersion().startsWith("1."), Weft.abiVersion());
    assertTrue(Weft.pluginInterfaceRange().matches("\\d+\\.\\d+-\\d+\\.\\d+"));
  }

  @Test
  void theCpuPluginAndDeviceAreListed() {
    List<DeviceInfo> devices = Weft.devices();
    DeviceInfo cpu = devices.stream().filter(d -> d.name().equals("/device:CPU:0")).findFirst()
        .orElseThrow(() -> new AssertionError("no /device:CPU:0 in " + devices));
    assertEquals("CPU", cpu.type());
    assertEquals(0, cpu.index());
    assertTrue(cpu.hasHostMemory());
    // The CPU runs every dtype its plugin has kernels for.
    assertEquals(0L, cpu.unsupportedDtypes());
    assertTrue(cpu.runs(DataType.FLOAT64));
    List<PluginInfo> plugins = Weft.plugins();
    assertTrue(plugins.stream().anyMatch(p -> p.name().equals(cpu.plugin())), plugins.toString());
    for (PluginInfo p : plugins) {
      assertTrue(p.deviceCount() > 0 || !p.noDeviceReason().isEmpty(), p.toString());
    }
    Weft.pluginRefusals().forEach(r -> assertFalse(r.reason().isEmpty()));
  }

  @Test
  void loadingANonPluginIsRefused() {
    WeftException e = assertThrows(WeftException.class,
        () -> Weft.loadPlugin("/nonexistent/weft-plugin.so"));
    assertEquals(WeftException.Code.NOT_FOUND, e.code());
  }

  @Test
  void theOpLibrary() {
    List<OpInfo> ops = Weft.ops();
    OpInfo matmul = ops.stream().filter(o -> o.name().equals("MatMul")).findFirst()
        .orElseThrow();
    assertTrue(matmul.attributes().contains("transpose_a"), matmul.attributes());
    assertTrue(ops.stream().anyMatch(o -> o.name().equals("Concat") && o.variadic()));
  }

  @Test
  void sessionOptionsChooseDevicesAndMetadataShowsThem() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2, 2));
      Output y = g.opBuilder("MatMul", "y").input(x).input(x).device("/device:CPU:0")
          .attr("transpose_b", true).finishOutput();
      assertEquals("/device:CPU:0", y.node().device());
      SessionOptions options = new SessionOptions().devices("CPU").interOpThreads(2)
          .intraOpThreads(1).placement(SessionOptions.Placement.STRICT)
          .transferPrecision(SessionOptions.TransferPrecision.BFLOAT16)
          .optimizations(SessionOptions.OPTIMIZE_CSE).deviceGflops("CPU=10");
      try (Session s = new Session(g, options);
           RunMetadata m = new RunMetadata();
           Tensor feed = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
           Session.Result r = s.runner().feed(x, feed).fetch(y).metadata(m).run()) {
        assertEquals(5f, r.get(0).toFloatArray()[0]);
        assertEquals("/device:CPU:0", m.deviceOf("y"));
        assertTrue(m.placements().stream().anyMatch(p -> p.node().equals("y")
            && p.op().equals("MatMul") && !p.reason().isEmpty()), m.placements().toString());
        assertTrue(m.memory().stream().anyMatch(d -> d.device().equals("/device:CPU:0")));
        assertTrue(m.transfers().isEmpty());
        assertTrue(m.toString().contains("y"), m.toString());
      }
      WeftException e = assertThrows(WeftException.class,
          () -> new Session(g, new SessionOptions().deviceGflops("nonsense")).close());
      assertEquals(WeftException.Code.INVALID_ARGUMENT, e.code());
    }
  }

  @Test
  void cseMergesAreReported() {
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(2));
      Output a = g.apply("Neg", "a", x);
      Output b = g.apply("Neg", "b", x);
      Output sum = g.apply("Add", "sum", a, b);
      try (Session s = new Session(g);
           RunMetadata m = new RunMetadata();
           Tensor feed = Tensor.of(new float[] {1, 2}, 2);
           Session.Result r = s.runner().feed(x, feed).fetch(sum).metadata(m).run()) {
        assertEquals(-2f, r.get(0).toFloatArray()[0]);
        assertEquals(1, m.merges().size(), m.toString());
      }
    }
  }
}
