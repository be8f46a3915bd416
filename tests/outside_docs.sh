#!/bin/sh
# No file of the repository cites a document that is not in it (the team's
# notes beside the checkout: COUNTERS.md, EVALUATORS.md, METHOD.md, ...):
# a reader of the code or the docs cannot open them. Lists each citation.
#   tests/outside_docs.sh SOURCE_DIR
src=$1
cd "$src" || exit 1
pattern='(COUNTERS|EVALUATORS|METHOD|STYLE|MEASUREMENT|TOOLCHAIN|H200)\.md|\.\./shared/'
files() { git ls-files 2>/dev/null || find . -type f ! -path './.git/*' ! -path './build*' | sed 's|^\./||'; }
found=$(files | grep -v '^tests/outside_docs.sh$' | grep -v '^results/' | xargs grep -lE "$pattern" 2>/dev/null)
if [ -n "$found" ]; then
    for f in $found; do grep -nE "$pattern" "$f" | sed "s|^|FAIL: $f:|"; done
    echo "0 passed, 1 failed"
    exit 1
fi
echo "1 passed, 0 failed"
