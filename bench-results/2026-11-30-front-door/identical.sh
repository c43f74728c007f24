#!/usr/bin/env bash
# Issue 37: every output byte-identical on the same saved results, before
# and after a reshape. Renders each results file with both binaries
# (console, CSV, HTML), all of them overlaid, and compare (text, Markdown,
# JSON) of the first two, then diffs the two trees.
#   identical.sh OLD_GOODPUT NEW_GOODPUT OUT_DIR RESULTS.json...
set -euo pipefail
old=$1 new=$2 out=$3; shift 3
for side in old new; do
  b=${!side}; d="$out/$side"; mkdir -p "$d"; i=0
  for f in "$@"; do
    i=$((i + 1))
    "$b" report "$f" --html "$d/$i.html" --csv "$d/$i.csv" >"$d/$i.txt" 2>"$d/$i.err" || echo "exit $?" >>"$d/$i.err"
  done
  "$b" report "$@" --html "$d/all.html" --csv "$d/all.csv" >"$d/all.txt" 2>&1 || true
  for fmt in text markdown json; do
    "$b" compare "$1" "$2" --format "$fmt" >"$d/compare.$fmt" 2>&1 || true
  done
done
diff -r "$out/old" "$out/new" && echo "identical: $(ls "$out/new" | wc -l) files"
