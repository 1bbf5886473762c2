#!/usr/bin/env python3
"""Compares two `weft train --loss-log` files ("STEP HEXFLOAT" lines) the way
tests/test_train_main.c's cnn_on_opencl_matches_the_cpu does: the first
`--exact-steps` losses (10) within `--exact` (1e-5) relative to the
reference's, and all `--steps` (100) within `--loose` (3%); with
`--mean-of N`, the steps after the exact ones are compared as the means of
each N steps (a last shorter group included) instead of one by one.  Prints
one line per failure and a summary; exits 0 when every step agrees, 1
otherwise.

    compare_losses.py REFERENCE.log OTHER.log [--steps N] [--exact-steps N]
                      [--exact X] [--loose X] [--mean-of N]
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
    p.add_argument("--mean-of", type=int, default=1)
    a = p.parse_args()
    if a.mean_of < 1:
        p.error("--mean-of must be at least 1")
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
    # (first step, last step + 1) of each comparison.
    groups = [(k, k + 1) for k in range(min(a.exact_steps, a.steps))]
    groups += [(k, min(k + a.mean_of, a.steps))
               for k in range(a.exact_steps, a.steps, a.mean_of)]
    worst = 0.0
    for first, end in groups:
        r = sum(ref[first:end]) / (end - first)
        o = sum(other[first:end]) / (end - first)
        rel = abs(o - r) / abs(r) if r else abs(o)
        if rel != rel:  # NaN
            rel = float("inf")
        worst = max(worst, rel)
        bound = a.exact if first < a.exact_steps else a.loose
        if rel > bound:
            failures += 1
            where = ("step %d" % first if end == first + 1
                     else "steps %d-%d (mean)" % (first, end - 1))
            print("%s: %.9g against %.9g, relative difference %.3g > %g"
                  % (where, o, r, rel, bound))
    rest = ("means of %d steps" % a.mean_of if a.mean_of > 1 else "all")
    print("%d steps compared: first %d within %g, %s within %g: %s "
          "(largest relative difference %.3g)"
          % (a.steps, a.exact_steps, a.exact, rest, a.loose,
             "yes" if failures == 0 else "NO, %d outside" % failures,
             worst))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
