#!/bin/sh
# The fat binaries hold code for every arch of KG_CUDA_ARCHS and no other:
# cuobjdump lists, in each file, SASS (--list-elf) of each -real arch and
# PTX (--list-ptx) of each -virtual one (a plain entry: both), as many of
# each as of the others (every .cu of the file was built for every arch).
# The check itself fails on a list naming an arch the file lacks.
#   tests/fatbin_archs.sh CUOBJDUMP "ARCHS" FILE...
# Exit 77 (skipped) without cuobjdump (scripts/deps.sh fetches one).
cuobjdump=$1
archs=$2
shift 2
if [ ! -x "$cuobjdump" ]; then
    echo "skip: no cuobjdump (scripts/deps.sh puts one in .deps/bin)"
    exit 77
fi
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }

# the archs of a list as cuobjdump names them: "sm_90a" (SASS) or "sm_100" (PTX)
want() { # want real|virtual ARCHS
    echo "$2" | tr ';, ' '\n\n\n' | while read -r e; do
        [ -n "$e" ] || continue
        case $e in
        *-real) [ "$1" = real ] && echo "sm_${e%-real}" ;;
        *-virtual) [ "$1" = virtual ] && echo "sm_${e%-virtual}" ;;
        *) echo "sm_$e" ;;
        esac
    done | sort -u | tr '\n' ' '
}

# 0 when FILE holds exactly the archs of ARCHS, each as often; else says why
holds() { # holds FILE ARCHS
    "$cuobjdump" --list-elf "$1" 2>/dev/null | sed -n 's/.*\.\(sm_[0-9]*[af]\{0,1\}\)\.cubin$/\1/p' >"$t/elf"
    "$cuobjdump" --list-ptx "$1" 2>/dev/null | sed -n 's/.*\.\(sm_[0-9]*[af]\{0,1\}\)\.ptx$/\1/p' >"$t/ptx"
    ok=0
    for kind in elf ptx; do
        w=$(want "$([ $kind = elf ] && echo real || echo virtual)" "$2")
        got=$(sort -u "$t/$kind" | tr '\n' ' ')
        if [ "$got" != "$w" ]; then
            echo "  $(basename "$1") $kind: [$got], want [$w]"
            ok=1
        fi
        counts=$(sort "$t/$kind" | uniq -c | awk '{print $1}' | sort -u | wc -l)
        if [ "$counts" -gt 1 ]; then
            echo "  $(basename "$1") $kind: not every arch as often: $(sort "$t/$kind" | uniq -c | tr '\n' ' ')"
            ok=1
        fi
    done
    return $ok
}

for f in "$@"; do
    [ -f "$f" ] || continue
    holds "$f" "$archs"
    expect "$(basename "$f") holds $archs" 0 $?
done
# the check fails where the file lacks an arch of the list
first=$1
holds "$first" "$archs;75-real" >/dev/null
expect "$(basename "$first") against a list with sm_75 too" 1 $?
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
