#!/bin/sh
# kgate report's HTML in a real browser: Debian's headless Chromium loads the
# page made from a recorded H200 run with diagnoses; its DOM must hold the
# roofline, the verdict table with every result, and the diagnosis; a
# screenshot is kept. Exits 77 (skipped) where no Chromium is installed.
#   html_report_chromium.sh KGATE REPO SCREENSHOT.png
kgate=$1 repo=$2 shot=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIP: no chromium or chromium-browser on PATH (apt-get install chromium)"
    exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
"$kgate" report "$repo/tests/data/recorded/run-h200-diagnose.json" -o "$out/report.html"
expect "kgate report: exit" 0 $?
flags="--headless --disable-gpu --no-sandbox --hide-scrollbars --user-data-dir=$out/profile"
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --dump-dom "file://$out/report.html" >"$out/dom.html" 2>/dev/null
expect "chromium --dump-dom: exit" 0 $?
expect "the roofline is there" 1 "$(grep -c 'id="roofline-0"' "$out/dom.html")"
expect "its points: one per timed result" 57 "$(grep -o '<circle class="kernel"' "$out/dom.html" | wc -l | tr -d ' ')"
expect "its cliff arrows: one per passes-but-slow pair" 24 "$(grep -o 'class="cliff"' "$out/dom.html" | wc -l | tr -d ' ')"
expect "the verdict table: header and 57 rows" 58 "$(sed -n '/id="verdicts"/,/<\/table>/p' "$out/dom.html" | grep -o '<tr' | wc -l | tr -d ' ')"
expect "the diagnosis section" 1 "$(grep -c 'id="diagnosis"' "$out/dom.html")"
mkdir -p "$(dirname "$shot")"
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --window-size=1200,1600 --screenshot="$shot" "file://$out/report.html" >/dev/null 2>&1
expect "screenshot written" yes "$([ -s "$shot" ] && echo yes)"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
