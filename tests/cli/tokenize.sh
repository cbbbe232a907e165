#!/usr/bin/env bash
# CLI test for `novaserve tokenize`. Usage: tokenize.sh NOVASERVE_BINARY
# --ids-only output must equal a reference vector from the vocab test data; bad arguments and
# bad files must exit 2 with exactly one line on stderr.
source "$(dirname "$0")/lib/cli_test_lib.sh"
VOCABS=$SHARED/testdata/tokenizers

# expect_error DESCRIPTION ARGS...: `tokenize ARGS` exits 2 with exactly one line on stderr.
expect_error() {
  local what=$1
  shift
  expect_exit2 "$what" "$BIN" tokenize "$@"
}

# reference_ids VOCAB TEXT: the expected ids of TEXT from VOCAB's .inp/.out pair ("" if absent).
reference_ids() {
  local n
  n=$(awk -v want="$2" 'BEGIN { RS = "\n__ggml_vocab_test__\n" } $0 == want { print NR; exit }' \
    "$1.inp")
  [ -n "$n" ] && sed -n "${n}p" "$1.out" | sed 's/^ *//'
}

SPM=$VOCABS/ggml-vocab-llama-spm.gguf
BPE=$VOCABS/ggml-vocab-llama-bpe.gguf
if [ ! -f "$SPM" ] || [ ! -f "$BPE" ]; then
  echo "SKIP: vocab test data missing in $VOCABS"
  exit 0
fi

# --ids-only equals the reference vector (with --no-bos: the vectors have no BOS).
for vocab in "$SPM" "$BPE"; do
  for text in "Hello world" " Hello World!" "w048 7tuijk dsdfhu"; do
    want=$(reference_ids "$vocab" "$text")
    [ -n "$want" ] || { fail "$(basename "$vocab"): '$text' not in the .inp file"; continue; }
    got=$("$BIN" tokenize --model "$vocab" --text "$text" --ids-only --no-bos)
    rc=$?
    [ $rc -eq 0 ] || fail "$(basename "$vocab") '$text': exit $rc"
    [ "$got" = "$want" ] || fail "$(basename "$vocab") '$text': got '$got', expected '$want'"
  done
  echo "ok: $(basename "$vocab") --ids-only vectors"
done

# --file tokenizes the whole file, exactly like --text.
printf 'Hello world' >"$TMP/in.txt"
got=$("$BIN" tokenize -m "$SPM" -f "$TMP/in.txt" --ids-only --no-bos)
[ "$got" = "$(reference_ids "$SPM" "Hello world")" ] || fail "--file: got '$got'"

# BOS: the SPM vocab asks for it (id 1) unless --no-bos; --special parses "<s>" into id 1.
got=$("$BIN" tokenize -m "$SPM" -t "Hello world" --ids-only)
[ "$got" = "1 $(reference_ids "$SPM" "Hello world")" ] || fail "BOS: got '$got'"
got=$("$BIN" tokenize -m "$SPM" -t "<s>" --ids-only --no-bos --special)
[ "$got" = "1" ] || fail "--special: got '$got', expected '1'"
got=$("$BIN" tokenize -m "$SPM" -t "<s>" --ids-only --no-bos)
case " $got " in *" 1 "*) fail "without --special '<s>' must not become id 1: '$got'" ;; esac

# Default output: id:'piece' pairs on one line (the SPM piece of ▁Hello is " Hello").
got=$("$BIN" tokenize -m "$SPM" -t "Hello world")
[ "$got" = "1:'<s>' 15043:' Hello' 3186:' world'" ] || fail "pairs output: got '$got'"
[ "$("$BIN" tokenize -m "$SPM" -t $'a\nb' | wc -l)" -eq 1 ] || fail "newline in text broke the line"

# Errors.
expect_error "neither --text nor --file" -m "$SPM"
expect_error "both --text and --file" -m "$SPM" -t x -f "$TMP/in.txt"
expect_error "missing model" -m "$TMP/nope.gguf" -t x
expect_error "model is not GGUF" -m "$SPM.inp" -t x
expect_error "missing --file" -m "$SPM" -f "$TMP/nope.txt"
"$BIN" tokenize -t x >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "no --model: exit $rc, expected 2"

finish
