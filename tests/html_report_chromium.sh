#!/bin/sh
# kgate report's HTML in a real browser: Debian's headless Chromium loads the
# page made from a recorded H200 run with diagnoses; its DOM must hold the
# legend, the roofline with a point per result that has FLOPs, the bandwidth
# panel with a bar per result without, a number label per point that the key
# names, the verdict table with every result and the diagnosis. At 1400 and
# 800 px wide nothing may reach past the window (no horizontal scroll, no
# element showing past the right edge, no scroll box hiding a part): a copy of the
# page with a small script measures it and writes the figures into the DOM
# that --dump-dom prints. A screenshot is kept at each width. kgate
# trajectory's page is checked the same way at 800 px. Exits 77 (skipped)
# where no Chromium is installed.
#   html_report_chromium.sh KGATE REPO SCREENSHOT_PREFIX   (writes PREFIX-1400.png, PREFIX-800.png)
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
count() { grep -o "$1" "$2" | wc -l | tr -d ' '; }
# the numbers in the attribute $1="..." of the elements in file $2, one a line, sorted
nums() { grep -o "$1=\"[0-9 ]*\"" "$2" | sed 's/.*="//; s/"$//' | tr ' ' '\n' | sort -n; }
"$kgate" report "$repo/tests/data/recorded/run-h200-diagnose.json" -o "$out/report.html"
expect "kgate report: exit" 0 $?
flags="--headless --disable-gpu --no-sandbox --hide-scrollbars --user-data-dir=$out/profile"
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --dump-dom "file://$out/report.html" >"$out/dom.html" 2>/dev/null
expect "chromium --dump-dom: exit" 0 $?
expect "the legend is there" 1 "$(grep -c 'id="legend-0"' "$out/dom.html")"
expect "the roofline is there" 1 "$(grep -c 'id="roofline-0"' "$out/dom.html")"
sed -n '/<svg id="roofline-0"/,/<\/svg>/p' "$out/dom.html" >"$out/roof.svg"
sed -n '/<svg id="bandwidth-0"/,/<\/svg>/p' "$out/dom.html" >"$out/bw.svg"
sed -n '/<ol class="key" id="key-0"/,/<\/ol>/p' "$out/dom.html" >"$out/key.html"
expect "roofline points: the 49 results with FLOPs" 49 "$(count '<circle class="kernel"' "$out/roof.svg")"
expect "bandwidth bars: the 8 without (embedding, index_select, transpose)" 8 "$(count '<rect class="bw"' "$out/bw.svg")"
expect "no kernel without FLOPs on the roofline" 0 "$(grep -c 'embedding\|index_select\|matrix_transpose' "$out/roof.svg")"
grep -o '<circle class="kernel" data-n="[0-9]*"' "$out/roof.svg" | sed 's/.*="//; s/"$//' | sort -n >"$out/points"
grep -o '<g class="num" data-n="[0-9 ]*"' "$out/roof.svg" | sed 's/.*="//; s/"$//' | tr ' ' '\n' | sort -n >"$out/labels"
grep -o '<rect class="bw" data-n="[0-9]*"' "$out/bw.svg" | sed 's/.*="//; s/"$//' >"$out/bars"
nums value "$out/key.html" >"$out/keyed"
expect "each point's number on the plot once" yes "$(cmp -s "$out/points" "$out/labels" && echo yes)"
expect "the key names every point and bar" yes "$(sort -n "$out/points" "$out/bars" | cmp -s - "$out/keyed" && echo yes)"
expect "its cliff arrows: the passes-but-slow pairs with FLOPs" 21 "$(count 'class="cliff"' "$out/roof.svg")"
expect "the verdict table: header and 57 rows" 58 "$(sed -n '/id="verdicts"/,/<\/table>/p' "$out/dom.html" | grep -o '<tr' | wc -l | tr -d ' ')"
expect "the diagnosis section" 1 "$(grep -c 'id="diagnosis"' "$out/dom.html")"
# the fit at each width: a copy without the page's script ban, with a script that measures
expect "the page closes once" 1 "$(grep -c '</body></html>' "$out/report.html")"
sed 's|<meta http-equiv="Content-Security-Policy"[^>]*>||; s|</body></html>||' "$out/report.html" >"$out/fit.html"
cat >"$out/measure.html" <<'EOF'
<script>
(function () {
  var w = window.innerWidth, d = document.documentElement, past = [], boxes = 0;
  document.querySelectorAll('body *').forEach(function (e) {
    var s = getComputedStyle(e), right = e.getBoundingClientRect().right;
    /* what shows: clipped by any ancestor that clips (an ellipsis, a scroll box) */
    for (var a = e.parentElement; a && a !== d; a = a.parentElement)
      if (getComputedStyle(a).overflowX !== 'visible') right = Math.min(right, a.getBoundingClientRect().right);
    if (right > w + 0.5) past.push(e.tagName + (e.id ? '#' + e.id : ''));
    if ((s.overflowX === 'auto' || s.overflowX === 'scroll') && e.scrollWidth > e.clientWidth + 1) boxes++;
  });
  document.body.setAttribute('data-fit', 'width=' + w + ' scroll=' + d.scrollWidth + ' past=' + past.length +
    ' boxes=' + boxes + (past.length ? ' first=' + past[0] : ''));
})();
</script></body></html>
EOF
cat "$out/measure.html" >>"$out/fit.html"
mkdir -p "$(dirname "$shot")"
for w in 1400 800; do
    # shellcheck disable=SC2086
    timeout 120 "$browser" $flags --window-size=$w,2000 --dump-dom "file://$out/fit.html" 2>/dev/null |
        grep -o 'data-fit="[^"]*"' >"$out/fit-$w"
    expect "at $w px: the page's width, its scroll width, elements past the edge, scroll boxes" \
        "data-fit=\"width=$w scroll=$w past=0 boxes=0\"" "$(cat "$out/fit-$w")"
    # shellcheck disable=SC2086
    timeout 120 "$browser" $flags --window-size=$w,2600 --screenshot="$shot-$w.png" "file://$out/report.html" \
        >/dev/null 2>&1
    expect "screenshot at $w px written" yes "$([ -s "$shot-$w.png" ] && echo yes)"
done

# kgate trajectory's page, from three iteration folders of recorded runs: the
# plot with a marker an iteration, the table, and the fit at 800 px
for i in 1 2 3; do mkdir -p "$out/loop/it-$i"; done
cp "$repo/tests/data/recorded/run-h200-1.json" "$out/loop/it-1/r.json"
cp "$repo/tests/data/recorded/run-h200-diagnose.json" "$out/loop/it-2/r.json"
cp "$repo/tests/data/recorded/run-h200-2.json" "$out/loop/it-3/r.json"
"$kgate" trajectory "$out/loop" -o "$out/traj.html"
expect "kgate trajectory -o: exit" 0 $?
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --dump-dom "file://$out/traj.html" >"$out/traj-dom.html" 2>/dev/null
rows=$(sed -n '/id="iterations"/,/<\/table>/p' "$out/traj-dom.html" | grep -o '<tr' | wc -l | tr -d ' ')
expect "trajectory: the plot, a marker an iteration, the table's rows" "1 3 4" \
    "$(grep -c '<svg id="trajectory"' "$out/traj-dom.html") $(count '<circle class="it"' "$out/traj-dom.html") $rows"
sed 's|<meta http-equiv="Content-Security-Policy"[^>]*>||; s|</body></html>||' "$out/traj.html" >"$out/traj-fit.html"
cat "$out/measure.html" >>"$out/traj-fit.html"
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --window-size=800,1600 --dump-dom "file://$out/traj-fit.html" 2>/dev/null |
    grep -o 'data-fit="[^"]*"' >"$out/traj-fit-800"
expect "trajectory at 800 px: nothing past the edge" 'data-fit="width=800 scroll=800 past=0 boxes=0"' \
    "$(cat "$out/traj-fit-800")"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
