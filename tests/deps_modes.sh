#!/bin/sh
# scripts/deps.sh installs what its mode needs and no more: `run` (make build,
# make run) nothing that only the tests use; `test` (make test) adds the
# tests' packages; another mode is a usage error. A fake dpkg on PATH says
# which packages are installed; KG_DEPS_DRY=1 prints instead of installing.
#   tests/deps_modes.sh SOURCE_DIR
src=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
printf '#!/bin/sh\nfor p in $FAKE_INSTALLED; do [ "$p" = "$2" ] && exit 0; done\nexit 1\n' >"$t/dpkg"
chmod +x "$t/dpkg"
run_pkgs="cmake libcjson-dev libdlpack-dev libseccomp-dev python3-pip unzip"
test_pkgs="clang libclang-rt-14-dev libcmocka-dev python3-jsonschema chromium openmpi-bin"
dry() { PATH="$t:$PATH" FAKE_INSTALLED="$1" KG_DEPS_DRY=1 sh "$src/scripts/deps.sh" $2; }
expect "run, the main job's packages there" "kgate (run) would install: nothing" "$(dry "$run_pkgs" run)"
expect "run asks for none of the tests' packages" "kgate (run) would install: cmake" "$(dry "${run_pkgs#cmake }" run)"
expect "test adds the tests' packages" "kgate (test) would install: $test_pkgs" "$(dry "$run_pkgs" test)"
expect "test, everything there" "kgate (test) would install: nothing" "$(dry "$run_pkgs $test_pkgs" test)"
dry "" bogus 2>/dev/null
expect "an unknown mode: exit" 3 $?
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
