#!/bin/sh
# kgate has one version, python/kgate/VERSION: the CLI (`kgate version`, from
# CMake's project()), the Python package (kgate.__version__) and its
# packaging metadata (pyproject.toml, through setuptools) all give it, and no
# file states another.
#   tests/version.sh KGATE SOURCE_DIR
kgate=$1 src=$2
py=${KGATE_PYTHON:-python3}
fails=0 n=0
status() { # status NAME WANT GOT
    n=$((n + 1))
    if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = '$3', want '$2'"; fails=$((fails + 1)); fi
}
none() { # none NAME FILE PATTERN: no line of FILE matches PATTERN
    n=$((n + 1))
    if grep -nE "$3" "$2"; then echo "FAIL: $1: $2 states a version of its own"; fails=$((fails + 1)); else echo "ok: $1"; fi
}

v=$(cat "$src/python/kgate/VERSION")
n=$((n + 1))
if echo "$v" | grep -qE '^[0-9]+\.[0-9]+\.[0-9]+$'; then echo "ok: VERSION is $v"; else
    echo "FAIL: python/kgate/VERSION holds '$v', not MAJOR.MINOR.PATCH"; fails=$((fails + 1)); fi

status "kgate version" "$v" "$("$kgate" version | sed -n 's/^kgate \([^ ]*\) (commit .*/\1/p')"
status "kgate.__version__" "$v" "$(cd / && PYTHONPATH=$src/python "$py" -c 'import kgate; print(kgate.__version__)' 2>&1)"
none "CMakeLists.txt reads VERSION" "$src/CMakeLists.txt" '^project\(.*VERSION +[0-9]'
none "pyproject.toml reads VERSION" "$src/python/pyproject.toml" '^version *= *"'
if "$py" -c 'import setuptools.config.pyprojecttoml' 2>/dev/null; then
    status "pyproject.toml's version (setuptools)" "$v" "$(cd / && "$py" -W ignore -c \
        'import sys; from setuptools.config.pyprojecttoml import read_configuration as r; print(r(sys.argv[1])["project"]["version"])' \
        "$src/python/pyproject.toml" 2>&1)"
else
    echo "skip: pyproject.toml's version: $py has no setuptools >= 61"
fi
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
