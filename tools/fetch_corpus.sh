#!/usr/bin/env bash
# Writes the perplexity corpus data/kjv.txt: the King James Bible as plain text, one verse per
# line, without verse references (about 4.3 MB, 31102 lines, ASCII). Source: Debian's
# bible-kjv-text (the compressed /usr/lib/bible.data) read through the `bible` program of the
# bible-kjv package; `bible -f` prints one verse per line as "Ge1:1 In the beginning ...", and
# the reference (the first space-free word) is dropped. Deterministic: the output's SHA-256 is
# checked against the value below. Skips the work when data/kjv.txt is present and valid.
# Needs the apt packages bible-kjv-text and bible-kjv (tools/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=data/kjv.txt
SHA256=b5c4940bcfeee072c0935b5200d0f9d88a00a0199cb0961d16133458fcdfae5d
if [ -f "$OUT" ] && echo "$SHA256  $OUT" | sha256sum --quiet -c - 2>/dev/null; then
  exit 0
fi
if ! command -v bible >/dev/null || [ ! -f /usr/lib/bible.data ]; then
  echo "fetch_corpus: needs the Debian packages bible-kjv and bible-kjv-text" \
    "(apt-get install bible-kjv bible-kjv-text)" >&2
  exit 1
fi
mkdir -p data
# -p /usr/lib: read the packaged data even if a bible.data lies in the current directory.
bible -p /usr/lib -f Gen1:1-Rev22:21 | sed 's/^[^ ]* //' >"$OUT.part"
if ! echo "$SHA256  $OUT.part" | sha256sum --quiet -c -; then
  echo "fetch_corpus: SHA-256 of the extracted text differs from the expected value" >&2
  rm -f "$OUT.part"
  exit 1
fi
mv "$OUT.part" "$OUT"
echo "fetch_corpus: $OUT ($(wc -l <"$OUT") lines) verified"
