#!/bin/sh
# The ABI guard's symbol check: abidiff (abigail-tools) compares the built
# libweft with abi/libweft.abi, the abidw record of the released 1.x
# library.  A removed or changed symbol (abidiff's "incompatible" bit, 8)
# fails; an added one (bit 4 alone) passes and is listed.  The record has
# the exported functions and variables with their symbol versions (the
# library is built without debug information, so not their types: those
# are tests/abi_headers.py's, the structs' offsets also
# tests/test_abi_layout.c's, and behaviour is checked by the program and
# plugin built against the frozen 1.0 headers).
# Regenerate the record only when a minor version appends symbols:
#   abidw --no-show-locs --no-corpus-path LIB > abi/libweft.abi
# Prints TAP.  Usage: abi_symbols.sh BASELINE LIBRARY
baseline=$1 library=$2
echo "1..1"
if ! command -v abidiff >/dev/null 2>&1; then
  echo "ok 1 # SKIP abidiff not installed (Debian package abigail-tools)"
  exit 0
fi
out=$(abidiff --no-show-locs "$baseline" "$library" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
if [ $((rc & 8)) -ne 0 ]; then
  echo "not ok 1 - libweft removed or changed a symbol of the 1.x ABI"
  exit 1
fi
if [ $((rc & 3)) -ne 0 ]; then
  echo "not ok 1 - abidiff could not compare (exit status $rc)"
  exit 1
fi
echo "ok 1 - every symbol of abi/libweft.abi is still exported, unchanged"
