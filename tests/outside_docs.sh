#!/bin/sh
# No file of the repository cites a document that is not in it: the team's
# notes beside the checkout (COUNTERS.md, EVALUATORS.md, METHOD.md, ...), or
# a dated run folder of results/ (results/h200/session9-20261201T1440Z/,
# "session 9"), which leave the tree for git history (results/README.md).
# A reader of the code or the docs cannot open them. Lists each citation.
# Recorded data are not citations: results/, tests/data/recorded/,
# docs/sample-run.json, and docs/performance.md and docs/paper.md (generated
# from the ledger: they name the runs in the tree they show).
#   tests/outside_docs.sh SOURCE_DIR
src=$1
cd "$src" || exit 1
files() { git ls-files 2>/dev/null || find . -type f ! -path './.git/*' ! -path './build*' | sed 's|^\./||'; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT
files | grep -v -e '^tests/outside_docs.sh$' -e '^results/' >"$list"
fails=0
check() { # check WHAT PATTERN [EXCLUDED-FILE-REGEX]
    found=$(grep -vE "${3:-^$}" "$list" | xargs grep -lE "$2" 2>/dev/null)
    if [ -n "$found" ]; then
        for f in $found; do grep -nE "$2" "$f" | sed "s|^|FAIL: $1: $f:|"; done
        fails=$((fails + 1))
    else
        echo "ok: no $1"
    fi
}
check "notes outside the repository" '(COUNTERS|EVALUATORS|METHOD|STYLE|MEASUREMENT|TOOLCHAIN|H200)\.md|\.\./shared/'
check "dated run folders" '[0-9]{8}T[0-9]{4}Z|[Ss]ession ?[0-9]' \
    '^tests/data/recorded/|^docs/sample-run\.json$|^docs/performance\.md$|^docs/paper\.md$'
echo "$((2 - fails)) passed, $fails failed"
[ "$fails" = 0 ]
