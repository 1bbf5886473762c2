#!/bin/sh
# Runs the JUnit console launcher for meson: empties the reports directory
# first, so that a JVM that dies before writing its report leaves no stale
# report behind for tests/tally.py to count.
#   run-junit.sh REPORTS_DIR JAVA ARGS...
set -eu
reports=$1
shift
rm -rf "$reports"
mkdir -p "$reports"
exec "$@" --reports-dir "$reports"
