#!/usr/bin/env bash
# Proves that tools/check_layers.py can fail: on a small tree it must pass a clean layout and
# reject an upward include (in every spelling that compiles), an include of a folder in no
# layer, a folder in no layer, a cycle between two folders of one layer (naming the includes),
# and a cycle in the layer table itself.
set -u
CHECK="$(dirname "$0")/../../tools/check_layers.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

# expect NAME STATUS: runs the check on $T and compares its exit status.
expect() {
  local name=$1 want=$2 got
  python3 "$CHECK" --layers "$T/layers.txt" --src "$T/src" >"$T/out" 2>&1
  got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, want $want"; cat "$T/out"; failures=$((failures + 1))
  else
    echo "ok   $name: exit $got ($(tail -n 1 "$T/out"))"
  fi
}

mkdir -p "$T/src/low" "$T/src/mid" "$T/src/high"
printf 'low low\nmid mid low\nhigh high mid\n' >"$T/layers.txt"
printf '#pragma once\n' >"$T/src/low/a.h"
printf '#include "low/a.h"\n' >"$T/src/mid/b.h"
printf '#include "mid/b.h"\n#include "low/a.h"\n#include <vector>\n' >"$T/src/high/c.cpp"
expect clean 0

printf '#include "high/c.h"\n' >"$T/src/low/bad.cpp"
expect upward-include 1
grep -q 'src/low/bad.cpp:1: includes high/c.h: layer low does not link layer high' "$T/out" ||
  { echo "FAIL upward-include: message does not name the file, line and layers"; failures=$((failures + 1)); }
rm "$T/src/low/bad.cpp"

printf '#include "nowhere/x.h"\n' >"$T/src/mid/bad.cpp"
expect include-of-unknown-folder 1
rm "$T/src/mid/bad.cpp"

# Spellings that compile too: no space, angle brackets naming a project folder, a relative path,
# a computed include, and a suffix that is not a C++ source's.
for spelling in '#include"high/c.h"' '#include <high/c.h>' '#include "../high/c.h"' \
  '#define H "high/c.h"\n#include H'; do
  printf "$spelling\n" >"$T/src/low/bad.cpp"
  expect "upward-include: $spelling" 1
done
rm "$T/src/low/bad.cpp"
printf '#include "high/c.h"\n' >"$T/src/low/bad.inc"
expect upward-include-in-an-inc-file 1
rm "$T/src/low/bad.inc"
printf '#include <vector>\n#include <nlohmann/json.hpp>\n' >"$T/src/low/system.h"
expect system-headers-pass 0
rm "$T/src/low/system.h"

mkdir -p "$T/src/stray" && printf '#include "low/a.h"\n' >"$T/src/stray/s.cpp"
expect folder-in-no-layer 1
rm -r "$T/src/stray"

mkdir -p "$T/src/low2"
printf 'low low,low2\nmid mid low\nhigh high mid\n' >"$T/layers.txt"
printf '#include "low2/d.h"\n' >"$T/src/low/e.h"
printf '#pragma once\n' >"$T/src/low2/d.h"
expect clean-within-layer 0
printf '#include "low/a.h"\n' >>"$T/src/low2/d.h"
expect cycle-within-layer 1
grep -q 'low2 -> low at .*src/low2/d.h:2' "$T/out" ||
  { echo "FAIL cycle-within-layer: the message does not name the include"; failures=$((failures + 1)); }
rm -r "$T/src/low2" "$T/src/low/e.h"

printf 'low low high\nmid mid low\nhigh high mid\n' >"$T/layers.txt"
expect cycle-in-layer-table 2

exit $((failures > 0))
