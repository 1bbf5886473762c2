#!/usr/bin/env python3
"""Compares two `weft train --loss-log` files ("STEP HEXFLOAT" lines) the way
tests/test_train_main.c's cnn_on_opencl_matches_the_cpu does: the first
`--exact-steps` losses (10) within `--exact` (1e-5) relative to the
reference's, and all `--steps` (100) within `--loose` (3%).  Prints one line
per failure and a summary; exits 0 when every step agrees, 1 otherwise.

    compare_losses.py REFERENCE.log OTHER.log [--steps N] [--exact-steps N]
                      [--exact X] [--loose X]
"""
import argparse
import sys


def read(path, steps):
    losses = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words:
                continue
            step, value = int(words[0]), words[1]
            if step != len(losses):
                raise ValueError("%s: line %d is step %d, expected %d"
                                 % (path, number, step, len(losses)))
            losses.append(float.fromhex(value) if "0x" in value
                          else float(value))
            if len(losses) == steps:
                break
    return losses


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("other")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--exact-steps", type=int, default=10)
    p.add_argument("--exact", type=float, default=1e-5)
    p.add_argument("--loose", type=float, default=0.03)
    a = p.parse_args()
    try:
        ref = read(a.reference, a.steps)
        other = read(a.other, a.steps)
    except (OSError, ValueError, IndexError) as e:
        print("cannot read the loss logs: %s" % e)
        return 1
    failures = 0
    if len(ref) != a.steps or len(other) != a.steps:
        print("not %d steps: the reference has %d, the other %d"
              % (a.steps, len(ref), len(other)))
        return 1
    worst = 0.0
    for k in range(a.steps):
        rel = abs(other[k] - ref[k]) / abs(ref[k]) if ref[k] else abs(other[k])
        if rel != rel:  # NaN
            rel = float("inf")
        worst = max(worst, rel)
        bound = a.exact if k < a.exact_steps else a.loose
        if rel > bound:
            failures += 1
            print("step %d: %.9g against %.9g, relative difference %.3g > %g"
                  % (k, other[k], ref[k], rel, bound))
    print("%d steps compared: first %d within %g, all within %g: %s "
          "(largest relative difference %.3g)"
          % (a.steps, a.exact_steps, a.exact, a.loose,
             "yes" if failures == 0 else "NO, %d steps outside" % failures,
             worst))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
