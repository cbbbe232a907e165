#!/usr/bin/env bash
# CLI test for `novaserve inspect`. Usage: inspect.sh NOVASERVE_BINARY
# Valid files must print the tensor table and exit 0; missing, unreadable and malformed files must
# exit 2 with exactly one line on stderr (never crash: a signal shows up as an exit code >= 128).
source "$(dirname "$0")/lib/cli_test_lib.sh"

# expect_ok FILE: exit 0 and a tensor table on stdout.
expect_ok() {
  "$BIN" inspect "$1" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ $rc -ne 0 ]; then fail "$1: exit $rc, expected 0: $(head -c 300 "$TMP/err")"; return; fi
  grep -q '^tensors: ' "$TMP/out" || fail "$1: no 'tensors:' line in output"
  grep -q '^version: [23]$' "$TMP/out" || fail "$1: no version line in output"
  echo "ok: $1"
}

# expect_error FILE [REQUIRED_SUBSTRING]: exit 2, exactly one line on stderr (naming the substring).
expect_error() {
  expect_exit2 "$1" "$BIN" inspect "$1" || return
  if [ -n "${2:-}" ] && ! grep -qi -- "$2" "$TMP/err"; then
    fail "$1: stderr lacks '$2': $(cat "$TMP/err")"
  fi
}

# The default model and its malformed variants.
if [ -f "$MODEL" ]; then
  expect_ok "$MODEL"
  "$BIN" inspect "$MODEL" >"$TMP/out"
  grep -q 'token_embd.weight' "$TMP/out" || fail "model: token_embd.weight not listed"
  grep -q '^tensors: 272$' "$TMP/out" || fail "model: expected 'tensors: 272'"
  grep -q 'general.architecture (string) = "llama"' "$TMP/out" || fail "model: architecture line"
  grep -q '(49152 items)' "$TMP/out" || fail "model: token array not abbreviated with its count"
  size=$(stat -L -c %s "$MODEL")
  # Cut points: inside magic, version, counts, metadata, tensor infos, padding, data.
  for n in 0 3 4 7 12 20 24 100 4096 65536 1000000 1785663 1785700 $((size / 2)) $((size - 1)); do
    head -c "$n" "$MODEL" >"$TMP/cut-$n.gguf"
    expect_error "$TMP/cut-$n.gguf" ""
    rm -f "$TMP/cut-$n.gguf"
  done
  # Bad magic and unsupported version on an otherwise valid header.
  { printf 'GGUX'; tail -c +5 "$MODEL" | head -c 4096; } >"$TMP/magic.gguf"
  expect_error "$TMP/magic.gguf" "magic"
  { printf 'GGUF\001\000\000\000'; tail -c +9 "$MODEL" | head -c 4096; } >"$TMP/v1.gguf"
  expect_error "$TMP/v1.gguf" "version"
else
  echo "SKIP: default model missing ($MODEL); run tools/fetch_model.sh"
fi

# Vocab-only files (no tensors) are valid GGUF.
for f in "$SHARED"/testdata/tokenizers/*.gguf; do
  [ -f "$f" ] && expect_ok "$f"
done

# Handed-over weight cases: each .expect states the required behaviour in words.
for f in "$SHARED"/cases/weights/*; do
  case "$f" in
    *.expect) continue ;;
    *.gguf) ;;
    *)
      echo "SKIP: $(basename "$f"): not a GGUF file (handled by the safetensors/convert tests)"
      continue
      ;;
  esac
  expect_text=$(cat "$f.expect" 2>/dev/null) || { fail "$f: no .expect file"; continue; }
  if grep -q 'exit 2' <<<"$expect_text"; then
    required=""
    grep -qi 'truncated' <<<"$expect_text" && required="truncated"
    expect_error "$f" "$required"
  else
    fail "$f: .expect text does not state an exit code this script understands: $expect_text"
  fi
done

# Missing file, directory, empty file, unreadable arguments.
expect_error "$TMP/does-not-exist.gguf" "No such file"
expect_error "$TMP" "not a regular file"
: >"$TMP/empty.gguf"
expect_error "$TMP/empty.gguf" "truncated"

# Usage errors exit 2 too (not CLI11's own codes).
"$BIN" inspect >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "inspect without FILE: exit $rc, expected 2"
"$BIN" --version >/dev/null 2>&1 || fail "--version should exit 0"

finish
