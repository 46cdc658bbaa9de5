#!/usr/bin/env bash
# The `$ kjit ...` examples in the docs still print what the docs say: each ```text block whose
# first line is a kjit command is run again and its output (stdout and stderr) compared.
#   tests/docs_test.sh PATH/TO/kjit DOC.md...
set -u
kjit=${1:?usage: docs_test.sh PATH/TO/kjit DOC.md...}
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KJIT_CACHE_DIR="$tmp/cache"
passed=0
failed=0
for doc in "$@"; do
  # Split the doc into blocks: block N's command in cmd.N, its expected output in want.N.
  awk -v dir="$tmp" '
    /^```text$/ { inblock = 1; n++; first = 1; next }
    /^```$/ { inblock = 0; next }
    inblock && first { first = 0; if ($0 ~ /^\$ kjit /) { print substr($0, 3) > (dir "/cmd." n); keep[n] = 1 } ; next }
    inblock && keep[n] { print > (dir "/want." n) }
  ' "$doc"
  for cmd_file in "$tmp"/cmd.*; do
    [ -e "$cmd_file" ] || continue
    n=${cmd_file##*.}
    command=$(cat "$cmd_file")
    # "kjit" at the start of the command is the binary under test.
    eval "\"\$kjit\" ${command#kjit }" > "$tmp/got" 2>&1
    touch "$tmp/want.$n"
    if diff -q "$tmp/want.$n" "$tmp/got" > /dev/null; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "FAILED: $doc: \$ $command"
      diff "$tmp/want.$n" "$tmp/got" | head -20
    fi
    rm -f "$cmd_file" "$tmp/want.$n"
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
