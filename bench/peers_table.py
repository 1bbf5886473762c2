"""The summary of scripts/bench_peers.sh: reads the tagged lines it kept
("<workload>\t<threads>\t<line>", each line in bench_util.h's form
"<System> [version] <what>, N thread(s): X <unit> (CPU Y <unit>), ...")
and prints markdown tables of the medians over rounds, wall-clock and CPU
time, and of Weft's ratio to every peer and each system's fraction of the
oneDNN floor; and, from the lines "peak-rss <System> <KiB>" the script
adds for each run (GNU time), each system's peak resident memory and
Weft's fraction of the lowest peer's; and whether the input pipelines'
first batches (the line "  first batch: ..." after a system's line, its
CRCs) were the same in every run of every system.

Ratios are of throughput, for wall-clock and CPU time alike: above 1 means
Weft is faster (or spends less CPU time per step).  A floor line's workload
is named in it ("floor for <workload>").

Usage: peers_table.py FILE --rounds N --machine TEXT --load TEXT
         --load-end TEXT --commit TEXT --order WORKLOAD..."""
import argparse
import re
import statistics

SYSTEMS = ("Weft", "TensorFlow", "JAX", "LibTorch")
PEERS = SYSTEMS[1:]
TITLES = {
    "train_cnn": "CNN training, batch 64, SGD",
    "train_mlp": "MLP training, batch 100, SGD",
    "train_mlp_adam": "MLP training, batch 100, Adam",
    "infer_mlp_1": "MLP inference, batch 1",
    "infer_mlp_256": "MLP inference, batch 256",
    "executor": "executor, 1,000-Add chain",
    "while_loop": "while loop, 100,000 iterations",
    "train_lstm": "LSTM training, batch 64",
    "pipeline_png": "input pipeline, 28x28 PNG, batch 128",
    "pipeline_jpeg": "input pipeline, 64x64 JPEG, batch 128",
}
# Workloads whose floor is another's: Adam's GEMMs are SGD's.
FLOOR_OF = {"train_mlp_adam": "train_mlp"}
LINE = re.compile(r"(\S+) (?:([\d.]+\S*) )?(.*?), (\d+) thread\(s\): "
                  r"([\d.]+) (\S+) \(CPU ([\d.]+) ([^)]+)\)")


def parse(path):
    """{(workload, threads): {system: [(wall, cpu)]}}, units, versions,
    notes, {(workload, threads, system): [peak KiB]}, {workload: {first
    batch text: {systems}}}."""
    runs, units, versions, notes, rss, first = {}, {}, {}, {}, {}, {}
    system = None
    for raw in open(path, encoding="utf-8"):
        key, threads, line = raw.rstrip("\n").split("\t", 2)
        f = re.match(r"\s*first batch: (.*)", line)
        if f and system:
            first.setdefault(key, {}).setdefault(f.group(1), set()).add(
                system)
            continue
        r = re.match(r"peak-rss (\S+) (\d+)$", line)
        if r:
            system = "oneDNN floor" if r.group(1) == "oneDNN" else r.group(1)
            rss.setdefault((key, int(threads), system), []).append(
                int(r.group(2)))
            continue
        m = LINE.match(line)
        if not m:
            continue
        system, version, what = m.group(1), m.group(2), m.group(3)
        if key == "floor":
            f = re.match(r"floor for (\S+)", what)
            if not f:
                continue
            key, system = f.group(1), "oneDNN floor"
        if system not in SYSTEMS and system != "oneDNN floor":
            continue
        if version:
            versions[m.group(1)] = version
        runs.setdefault((key, int(threads)), {}).setdefault(
            system, []).append((float(m.group(5)), float(m.group(7))))
        units[(key, system)] = (m.group(6), m.group(8))
        if "not per node" in what:
            notes[(key, system)] = what
    return runs, units, versions, notes, rss, first


def fmt(value):
    if value >= 100:
        return "%.0f" % value
    if value >= 10:
        return "%.1f" % value
    if value >= 1:
        return "%.2f" % value
    return "%.3f" % value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    for name in ("rounds", "machine", "load", "load_end", "commit"):
        ap.add_argument("--" + name.replace("_", "-"), default="?")
    ap.add_argument("--order", nargs="*", default=[])
    a = ap.parse_args()
    runs, units, versions, notes, rss, first = parse(a.file)
    med = {}
    for (key, threads), by in runs.items():
        for system, samples in by.items():
            med[(key, threads, system)] = (
                statistics.median(s[0] for s in samples),
                statistics.median(s[1] for s in samples), len(samples))
    keys = [k for k in a.order if any(r[0] == k for r in runs)]
    threads_all = sorted({t for _, t in runs})

    print("machine: %s; load average %s at the start, %s at the end; "
          "commit %s; medians of %s interleaved rounds" %
          (a.machine, a.load, a.load_end, a.commit, a.rounds))
    print("peers: " + ", ".join(
        "%s %s" % (s, versions[s]) for s in PEERS + ("oneDNN",)
        if s in versions) +
        " (TensorFlow in v1 graph mode, JAX under jax.jit, LibTorch eager%s)"
        % ("; the pipelines' tf.data iterated eagerly"
           if any(k.startswith("pipeline_") for k in keys) else ""))
    print()
    cols = SYSTEMS + ("oneDNN floor",)
    print("| workload | threads | unit | " + " | ".join(cols) + " |")
    print("| --- | --- | --- |" + " --- |" * len(cols))
    daggers = []
    for key in keys:
        for t in threads_all:
            if (key, t) not in runs:
                continue
            # The row's unit is Weft's (a peer's differing one is shown in
            # its cell).
            unit = units.get((key, "Weft")) or next(
                units[(key, s)] for s in cols if (key, s) in units)
            cells = []
            for s in cols:
                mk = (key if s != "oneDNN floor" else FLOOR_OF.get(key, key),
                      t, s)
                if mk not in med:
                    cells.append("")
                    continue
                wall, cpu, _ = med[mk]
                u, cu = units[(mk[0], s)]
                cell = "%s (CPU %s %s)" % (fmt(wall), fmt(cpu), cu)
                if u != unit[0]:
                    cell = "%s %s (CPU %s %s)" % (fmt(wall), u, fmt(cpu), cu)
                if (key, s) in notes:
                    cell += " †"
                    if notes[(key, s)] not in daggers:
                        daggers.append(notes[(key, s)])
                cells.append(cell)
            print("| %s | %d | %s | %s |" % (TITLES.get(key, key), t,
                                             unit[0], " | ".join(cells)))
    for note in daggers:
        print("\n† %s: not comparable with the per-node figures (XLA folds "
              "a jitted chain of adds into one kernel); no ratio is given." %
              note)

    print()
    print("Weft / peer, throughput (wall-clock, then per CPU-second; above 1: "
          "Weft faster); fraction of the oneDNN floor (the step rate over "
          "the rate of its GEMM and convolution primitives alone):")
    print()
    head = ["Weft / " + p for p in PEERS] + [
        "floor fraction " + s for s in SYSTEMS]
    print("| workload | threads | " + " | ".join(head) + " |")
    print("| --- | --- |" + " --- |" * len(head))
    for key in keys:
        for t in threads_all:
            if (key, t, "Weft") not in med:
                continue
            w_wall, w_cpu, _ = med[(key, t, "Weft")]
            higher = units[(key, "Weft")][0].endswith("/s")
            cells = []
            for p in PEERS:
                if (key, t, p) not in med or (key, p) in notes:
                    cells.append("")
                    continue
                p_wall, p_cpu, _ = med[(key, t, p)]
                wall_ratio = w_wall / p_wall if higher else p_wall / w_wall
                cells.append("%.2f (CPU %.2f)" % (wall_ratio, p_cpu / w_cpu))
            floor = med.get((FLOOR_OF.get(key, key), t, "oneDNN floor"))
            for s in SYSTEMS:
                if floor is None or (key, t, s) not in med:
                    cells.append("")
                    continue
                cells.append("%.2f" % (med[(key, t, s)][0] / floor[0]))
            print("| %s | %d | %s |" % (TITLES.get(key, key), t,
                                        " | ".join(cells)))
    print_rss(rss, keys, threads_all)
    print_first_batches(first, keys)


def print_first_batches(first, keys):
    """Whether every run of every system made the same first batch."""
    for key in keys:
        if key not in first:
            continue
        print()
        texts = first[key]
        if len(texts) == 1:
            text, systems = next(iter(texts.items()))
            print("%s: the same first batch in every run of %s (%s)" %
                  (TITLES.get(key, key), " and ".join(sorted(systems)),
                   text))
        else:
            print("%s: FIRST BATCHES DIFFER:" % TITLES.get(key, key))
            for text, systems in sorted(texts.items()):
                print("  %s: %s" % (", ".join(sorted(systems)), text))


def print_rss(rss, keys, threads_all):
    """Median peak RSS per system (MiB) and Weft's fraction of the lowest
    peer's."""
    if not rss:
        return
    print()
    print("Peak resident memory of each program (MiB, median over rounds; "
          "whole process: runtime, libraries and data):")
    print()
    print("| workload | threads | " + " | ".join(SYSTEMS) +
          " | Weft / lowest peer |")
    print("| --- | --- |" + " --- |" * (len(SYSTEMS) + 1))
    for key in keys:
        for t in threads_all:
            mib = {s: statistics.median(rss[(key, t, s)]) / 1024
                   for s in SYSTEMS if (key, t, s) in rss}
            if "Weft" not in mib:
                continue
            peers = [mib[p] for p in PEERS if p in mib]
            ratio = "%.2f" % (mib["Weft"] / min(peers)) if peers else ""
            print("| %s | %d | %s | %s |" % (
                TITLES.get(key, key), t,
                " | ".join("%.1f" % mib[s] if s in mib else ""
                           for s in SYSTEMS), ratio))


if __name__ == "__main__":
    main()
