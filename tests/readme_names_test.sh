#!/bin/bash
# Every GoogleTest name tests/README.md gives (`Suite.Name`) is a test some tests/*.cpp defines: a test renamed or
# merged must be renamed in the README too, or its table points at nothing.
dir=$(dirname "$0")
missing=0 count=0
while read -r name; do
  count=$((count + 1))
  suite=${name%%.*} test=${name#*.}
  grep -qE "TEST(_F|_P)?\(\s*${suite},\s*${test}\)" "$dir"/*.cpp || { echo "not defined: $name"; missing=$((missing + 1)); }
done < <(grep -oE '`[A-Z][A-Za-z0-9]*\.[A-Z][A-Za-z0-9]*`' "$dir/README.md" | tr -d '`' | sort -u)
echo "tests/README.md: $count test names, $missing not defined"
((count > 0 && missing == 0))
