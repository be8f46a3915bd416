# Shared by the GPU tests: skip (exit 77) with a message where there is no GPU.
kgate=$1 build=$2
# absolute, so that a test may cd (gpu.sh passes the packed build as a relative path)
case $kgate in /*) ;; */*) kgate=$PWD/$kgate ;; esac
build=$(CDPATH='' cd -P -- "$build" && pwd) || exit 1
if ! "$kgate" devices >/dev/null 2>&1; then
    echo "SKIP: no CUDA GPU here ($("$kgate" devices 2>&1 | head -1))"
    exit 77
fi
fails=0 n=0
expect() { # expect NAME WANT GOT
    n=$((n + 1))
    if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi
}
verdict() { # verdict JSON KERNEL SHAPE -> prints the verdict
    python3 -c "import json,sys; r=json.load(open('$1'))['results']; print(' '.join(x['verdict'] for x in r if x['kernel']=='$2' and ('$3'=='' or x['shape']=='$3')) or 'MISSING')"
}
# each operator's bundled fast variant (op_vN), as `kgate ops` names it
fast_variants() { "$kgate" ops | sed -n 's/.*bundled fast variant \([a-z0-9_]*\)$/\1/p' | tr '\n' ' '; }
finish() { echo "$((n - fails)) passed, $fails failed"; [ "$fails" = 0 ]; }
