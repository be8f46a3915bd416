#!/bin/sh
# kgate installed like a normal tool (README.md, "Install"): `cmake --install`
# of this build into a temporary prefix, which is then moved (the tree must
# not lean on where it was put, nor on the build). From there: each file in
# its place; RUNPATHs that name $ORIGIN or the CUDA toolkit, never the build
# or source tree, and the carried libraries found by them; no path of the
# build tree in what the binaries load; README's commands that need no GPU,
# with their documented exit codes (`kgate run` without one shows the
# sample run shipped in share/kgate); a C candidate built against the
# installed headers alone; a Python candidate validated through the
# installed package and libkgate.so; and `pip install` of the installed
# package, whose `kgate` command runs the installed kgate.
#   tests/install.sh CMAKE BUILD_DIR SOURCE_DIR [SANITIZED]
# SANITIZED (ON): the build is ASan's: its libkgate.so loads into no plain
# Python, its worker loads no nvcc-linked candidate, and the sanitizers name
# source files in what they load; those parts skip.
cmake=$1 build=$(cd "$2" && pwd -P) src=$(cd "$3" && pwd -P) sanitized=${4:-OFF}
fails=0 n=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
ok() { n=$((n + 1)); echo "ok: $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL: $1"; }
status() { # status NAME WANT GOT
    if [ "$2" = "$3" ]; then ok "$1 = $3"; else bad "$1 = $3, want $2"; fi
}
has() { # has NAME FILE PATTERN: a line of FILE matches PATTERN
    if grep -qE -- "$3" "$2"; then ok "$1"; else bad "$1: no line matching '$3' in:"; head -5 "$2"; fi
}

"$cmake" --install "$build" --prefix "$t/first" >"$t/install.log" 2>&1
status "cmake --install: exit" 0 $?
mv "$t/first" "$t/prefix"
p=$t/prefix
(cd "$p" && find . -type f | sort) >"$t/files"
echo "installed:"; sed 's/^/  /' "$t/files"

# --- each file in its place (lib is GNUInstallDirs' LIBDIR)
lib=$(dirname "$(find "$p" -name libkgate.so | head -1)")
for f in bin/kgate include/kgate/plugin.h include/kgate/kgate.h include/kgate/dlpack/dlpack.h share/kgate/python/pyproject.toml \
    share/kgate/python/kgate/__init__.py share/kgate/python/kgate/_cli.py share/kgate/python/kgate/_worker.py \
    share/kgate/python/kgate/VERSION share/kgate/sample-run.json; do
    if [ -f "$p/$f" ]; then ok "installed: $f"; else bad "not installed: $f"; fi
done
for f in libkgate.so kgate/libkgate_bundled.so kgate/libkgate_ablation.so kgate/libcjson.so.1 kgate/libseccomp.so.2; do
    if [ -f "$lib/$f" ]; then ok "installed: ${lib#"$p"/}/$f"; else bad "not installed: LIBDIR/$f"; fi
done
for c in tilelang/libkgate_tilelang.so triton/libkgate_triton.so; do # when this build has them
    [ -f "$build/$c" ] || continue
    if [ -f "$lib/kgate/$c" ]; then ok "installed: ${lib#"$p"/}/kgate/$c"; else bad "not installed: LIBDIR/kgate/$c"; fi
done
status "the Python package's VERSION" "$(cat "$src/python/kgate/VERSION")" "$(cat "$p/share/kgate/python/kgate/VERSION")"
n=$((n + 1))
if grep -E '__pycache__|\.pyc$|libcmocka|libkgate\.a' "$t/files"; then
    fails=$((fails + 1)); echo "FAIL: build leftovers installed (above)"
else echo "ok: no bytecode, test library or static library installed"; fi

# --- RUNPATHs: $ORIGIN-relative or the CUDA toolkit's; the carried libraries found through them
if command -v readelf >/dev/null; then
    for f in $(cd "$p" && find . -type f -name '*.so*' -o -type f -path ./bin/kgate); do
        rp=$(readelf -d "$p/$f" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
        odd=$(echo "$rp" | tr ':' '\n' | grep -v -e '^$' -e '^\$ORIGIN' -e '/cuda[^/]*/' | head -1)
        case ":$rp:" in
            *"$build"* | *"$src"*) bad "$f: RUNPATH $rp names the build or source tree" ;;
            *) if [ -n "$odd" ]; then bad "$f: RUNPATH $rp has $odd, neither \$ORIGIN nor CUDA's"
               else ok "$f: RUNPATH ${rp:-(none)}"; fi ;;
        esac
    done
    readelf -d "$p/bin/kgate" >"$t/rp"
    has "kgate's RUNPATH: its lib/kgate, from its own place" "$t/rp" 'R[UN]*PATH.*\[\$ORIGIN/\.\./[^]:]*kgate:'
else
    echo "skip: RUNPATHs: no readelf"
fi
if command -v ldd >/dev/null; then
    ldd "$p/bin/kgate" >"$t/ldd" 2>&1
    has "the moved kgate loads libcjson from its tree" "$t/ldd" "libcjson\.so\.1 => $p/(bin/\.\./)?lib[^ ]*/kgate/libcjson\.so\.1"
    has "the moved kgate loads libseccomp from its tree" "$t/ldd" "libseccomp\.so\.2 => $p/(bin/\.\./)?lib[^ ]*/kgate/libseccomp\.so\.2"
    ldd "$lib/libkgate.so" >"$t/lddlib" 2>&1
    has "the moved libkgate.so loads libcjson from its tree" "$t/lddlib" "libcjson\.so\.1 => $lib/kgate/libcjson\.so\.1"
    n=$((n + 1))
    if grep "not found" "$t/ldd" "$t/lddlib"; then fails=$((fails + 1)); echo "FAIL: a library not found (above)"
    else echo "ok: every library of kgate and libkgate.so found"; fi
else
    echo "skip: libraries found: no ldd"
fi

# --- no path of the build tree in what the binaries load (debug sections, which name it, left out)
if [ "$sanitized" = ON ]; then
    echo "skip: build-tree paths: ASan and UBSan name each source file, generated ones too, in what they load"
elif command -v strip >/dev/null && command -v strings >/dev/null; then
    for f in $(cd "$p" && find . -type f -name '*.so*' -o -type f -path ./bin/kgate); do
        strip --strip-debug -o "$t/stripped" "$p/$f" && strings -a "$t/stripped" >"$t/strings"
        if grep -F "$build" "$t/strings" | head -3 | grep .; then bad "$f names the build tree (above)"
        else ok "$f: no path of the build tree"; fi
    done
else
    echo "skip: build-tree paths: no strip or strings"
fi

# --- README's commands that need no GPU, from the installed tree, elsewhere
cd "$t" || exit 1
unset KGATE_BIN KGATE_LIB PYTHONPATH
PATH=$p/bin:$PATH
export PATH
v=$(cat "$src/python/kgate/VERSION")
run() { # run WANT_EXIT NAME ARGS...: kgate ARGS exits WANT_EXIT
    want=$1 name=$2
    shift 2
    kgate "$@" >"$t/out" 2>"$t/err"
    status "$name: exit" "$want" $?
}
run 0 "kgate version" version
has "kgate version: the one version" "$t/out" "^kgate $v \(commit "
run 0 "kgate help check" help check
has "kgate help check: its options" "$t/out" "--sandbox"
run 0 "kgate ops" ops
has "kgate ops: the catalog" "$t/out" "layer_norm"
run 3 "kgate help nosuchcommand" help nosuchcommand
rec=$src/tests/data/recorded/run-h200-diagnose.json # with --diagnose: kgate explain re-ranks its causes
run 0 "kgate explain RESULT.json" explain "$rec"
run 0 "kgate report RESULT.json -o out.html" report "$rec" -o "$t/out.html"
status "kgate report: the page written" yes "$([ -s "$t/out.html" ] && echo yes)"
run 0 "kgate compare A.json A.json" compare "$rec" "$rec"
if python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
    echo "skip: the GPU commands' exit 5: libcuda.so.1 loads here"
    gpu=yes
else
    gpu=no
    run 5 "kgate devices (no GPU)" devices
    has "kgate devices: one line, why" "$t/err" "^kgate: no usable CUDA GPU"
    run 5 "kgate peaks (no GPU)" peaks
    if [ "$sanitized" = ON ]; then # ASan's worker cannot load a library nvcc linked (tests/no_driver.sh)
        echo "skip: kgate check BUNDLED.so: an ASan build"
    else
        run 5 "kgate check BUNDLED.so --op layer_norm (no GPU)" check "$lib/kgate/libkgate_bundled.so" --op layer_norm \
            --sizes small,large --json "$t/out.json"
    fi
    run 5 "kgate run --live (no GPU)" run --live
    run 0 "kgate run (no GPU)" run
    has "kgate run: the recorded sample shipped in the moved tree" "$t/out" "^  file: +.*/prefix/share/kgate/sample-run\.json$"
fi

# --- a C candidate against the installed headers alone, which kgate validates
if command -v cc >/dev/null; then
    cc -shared -fPIC -std=c11 -I"$p/include" -MD -MF "$t/good.d" "$src/tests/plugins/good.c" -o "$t/good.so"
    status "a candidate built with -I PREFIX/include: exit" 0 $?
    has "its dlpack.h: the installed one" "$t/good.d" "$p/include/kgate/dlpack/dlpack\.h"
    [ $gpu = no ] && run 5 "kgate check good.so: valid, then no GPU" check "$t/good.so" --shape small
    run 4 "kgate check good.so:nosuchkernel" check "$t/good.so:nosuchkernel" --shape small
    has "kgate check good.so:nosuchkernel: its table read" "$t/err" "good\.so: no kernel named 'nosuchkernel'"
else
    echo "skip: a candidate built against the installed headers: no cc"
fi

# --- a Python candidate: the worker host imports the installed package and loads the installed libkgate.so
if [ "$sanitized" = ON ]; then
    echo "skip: a Python candidate: ASan's libkgate.so does not load into a plain Python"
elif command -v python3 >/dev/null; then
    printf '%s\n' 'import os, kgate' 'raise SystemExit("package %s library %s" % (kgate.__file__, os.environ["KGATE_LIB"]))' \
        >"$t/where.py"
    run 4 "kgate check where.py (it exits on import)" check "$t/where.py"
    has "its worker imports the installed package and names the installed libkgate.so" "$t/err" \
        "package $p/share/kgate/python/kgate/__init__\.py library $lib/libkgate\.so"
    printf '%s\n' 'import kgate' "KGATE_KERNELS = [kgate.Kernel(abs, op='nosuchop', dtype='fp16')]" >"$t/nosuchop.py"
    run 4 "kgate check nosuchop.py" check "$t/nosuchop.py"
    has "libkgate.so, loaded, refuses its operator" "$t/err" "unknown operator 'nosuchop'"
else
    echo "skip: a Python candidate: no python3"
fi

# --- pip install of the installed package: a `kgate` command that runs the installed kgate.
# The first Python here that builds a wheel with no index: setuptools >= 61 and wheel
# (KGATE_PYTHON, python3, Debian's python3, which deps.sh's python3-pip brings wheel to).
py=
for cand in "${KGATE_PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$cand" ] && command -v "$cand" >/dev/null || continue
    if "$cand" -c 'import venv, wheel, setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 61)' 2>/dev/null; then
        py=$cand
        break
    fi
done
if [ "$sanitized" = ON ]; then
    echo "skip: pip install: the ordinary build runs it"
elif [ -z "$py" ]; then
    echo "skip: pip install: no Python with venv, setuptools >= 61 and wheel"
else
    "$py" -m venv --without-pip --system-site-packages "$t/venv" &&
        "$t/venv/bin/python" -m pip install -q --no-deps --no-build-isolation --no-index "$p/share/kgate/python" \
            >"$t/pip.log" 2>&1
    status "pip install PREFIX/share/kgate/python ($py): exit" 0 $?
    status "its metadata's version" "$v" "$("$t/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kgate"))')"
    # the installed kgate on PATH, after the venv's own kgate command
    PATH=$t/venv/bin:$p/bin:$PATH kgate version >"$t/out" 2>"$t/err"
    status "venv's kgate version: exit" 0 $?
    has "venv's kgate version: the installed kgate's answer" "$t/out" "^kgate $v \(commit "
    PATH=$t/venv/bin:$p/bin:$PATH kgate help nosuchcommand >"$t/out" 2>"$t/err"
    status "venv's kgate help nosuchcommand: kgate's exit" 3 $?
    PATH=$t/venv/bin:/usr/bin:/bin KGATE_BIN=$p/bin/kgate kgate ops >"$t/out" 2>"$t/err"
    status "venv's kgate ops with KGATE_BIN: exit" 0 $?
    PATH=$t/venv/bin:/usr/bin:/bin kgate version >"$t/out" 2>"$t/err"
    status "venv's kgate with no kgate anywhere: exit" 5 $?
    status "venv's kgate with no kgate anywhere: lines" 1 "$(wc -l <"$t/err")"
    has "venv's kgate with no kgate anywhere: says how to get one" "$t/err" "make install PREFIX="
fi
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
