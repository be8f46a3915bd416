#!/bin/sh
# Stands in for `kgate __worker` in tests/test_job.c: behaves as $KG_FAKE says.
fd=1
while [ $# -gt 0 ]; do [ "$1" = --fd ] && fd=$2; shift; done
ev() { echo "$1" >&"$fd"; }
ev '{"ev":"hello","device":"fake"}'
case $KG_FAKE in
ok)
    ev '{"ev":"baseline","name":"cudnn-softmax","note":"fake library","fallback":false}'
    ev '{"ev":"sum","subject":"lib","name":"lib/time/median","value":2e-4}'
    ev '{"ev":"check","subject":"kernel","what":"trial 1","pass":true}'
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    ev '{"ev":"timing","subject":"kernel","stop":"noise","escaped":false,"throttled":0,"note":""}'
    ev '{"ev":"done","code":0}' ;;
incorrect)
    ev '{"ev":"fail","kind":"incorrect","msg":"3 of 100 elements wrong"}'
    ev '{"ev":"done","code":0}' ;;
crash_after_timing)
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    kill -SEGV $$ ;;
hang)
    ev '{"ev":"sum","subject":"kernel","name":"check/trials","value":3}'
    sleep 30 ;;
libcrash)
    ev '{"ev":"baseline","name":"cublaslt","note":"fake","fallback":false}'
    ev '{"ev":"fail","subject":"lib","kind":"crash","msg":"an illegal memory access was encountered"}'
    ev '{"ev":"done","code":2}'
    exit 3 ;;
badfile)
    ev '{"ev":"error","code":4,"msg":"x.so: no kgate_plugin_v1 symbol: not a kgate candidate"}'
    ev '{"ev":"done","code":4}'
    exit 3 ;;
esac
