#!/bin/sh
# Stands in for cuobjdump in tests/test_sass_run.c (KG_CUOBJDUMP). A test
# cubin is NUL-separated text: a tag, then the names of its functions; a tag
# holding WIDE gives each function a 16-byte load. Prints `-sass` listings
# for the -fun names the file holds (all of the file's without -fun; a
# name it lacks only warns, as cuobjdump does), and logs to $FAKE_LOG its
# argv, whether fd 9 is open, what its stdin is and its TMPDIR.
#   FAKE_FAIL=1      exit 3 after printing
#   FAKE_SLEEP=S     first start a child `sleep 61.5` (its pid to $FAKE_LOG.child), then sleep S
fun="" file="" whole=1
while [ $# -gt 0 ]; do
    case $1 in
    -fun) fun=$2 whole=0; shift 2 ;;
    -sass) shift ;;
    *) file=$1; shift ;;
    esac
done
{
    echo "argv: fun=[$fun] whole=$whole"
    [ -e /proc/$$/fd/9 ] && echo "fd9: open" || echo "fd9: closed"
    echo "stdin: $(readlink /proc/$$/fd/0)"
    echo "tmpdir: ${TMPDIR:-}"
} >>"$FAKE_LOG"
if [ -n "${FAKE_SLEEP:-}" ]; then
    sleep 61.5 &
    echo $! >"$FAKE_LOG.child"
    sleep "$FAKE_SLEEP"
fi
tag=$(tr '\0' '\n' <"$file" | head -1)
has=$(tr '\0' '\n' <"$file" | tail -n +2)
if [ $whole = 1 ]; then
    names=$has
else
    names=
    for f in $(echo "$fun" | tr ',' ' '); do
        if echo "$has" | grep -qx -- "$f"; then names="$names $f"; else echo "cuobjdump warning : Function listed in --function '$f' not found" >&2; fi
    done
fi
echo "Fatbin elf code:"
for f in $names; do
    printf '\t\tFunction : %s\n' "$f"
    printf '\t.headerflags\t@"EF_CUDA_SM90"\n'
    case $tag in *WIDE*) printf '        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x000 */\n' ;; esac
    printf '        /*0010*/                   LDG.E.U16 R6, desc[UR4][R2.64] ;  /* 0x000 */\n'
    printf '        /*0020*/                   EXIT ;  /* 0x000 */\n'
    printf '        ..........\n'
done
[ -n "${FAKE_FAIL:-}" ] && exit 3
exit 0
