#!/bin/sh
# Stands in for `kgate __worker` in tests/test_job.c: reads the job from
# stdin like the real one, then behaves as $KG_FAKE says.
fd=1 under_tool=0
while [ $# -gt 0 ]; do
    [ "$1" = --fd ] && fd=$2
    [ "$1" = --under-tool ] && under_tool=1
    shift
done
job=$(cat)
case $job in *'"proto":"kgate.worker/2"'*) ;; *) echo "fake worker: no job on stdin" >&2; exit 9 ;; esac
nonce=$(printf '%s' "$job" | sed -n 's/.*"nonce":"\([0-9a-f]*\)".*/\1/p')
ev() { echo "$1" | sed "s/NONCE/$nonce/" >&"$fd"; }
hello='{"ev":"hello","proto":"kgate.worker/2","device":"fake","pid":1}'
ev "$hello"
case $KG_FAKE in
under_tool)
    # its median says whether kgate told it that it runs under a tool: 2e-4, else 1e-4
    ev "{\"ev\":\"sum\",\"subject\":\"kernel\",\"name\":\"time/gpu/median\",\"value\":$([ $under_tool = 1 ] && echo 2e-4 || echo 1e-4),\"unit\":\"s\"}"
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
ok)
    ev '{"ev":"check","subject":"kernel","what":"trial 1","pass":true,"rel_l2":1e-4,"max_abs_err":1e-3,"inputs_mutated":false,"desc":"fine"}'
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4,"unit":"s"}'
    ev '{"ev":"timing","subject":"kernel","stop":"noise","escaped":false,"throttled":0,"note":""}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
library)
    ev '{"ev":"subject","subject":"lib","path":"cudnn-softmax","note":"fake library"}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/gpu/median","value":2e-4}'
    ev '{"ev":"unsupported","subject":"lib","path":"cub-softmax","msg":"not for this shape"}'
    ev '{"ev":"subject","subject":"best","path":"softmax_v2_fp16","note":"bundled"}'
    ev '{"ev":"sum","subject":"best","path":"softmax_v2_fp16","name":"time/gpu/median","value":5e-5}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
lib_disturbed)
    # library timing that dropped throttled samples, was timed again, and saw work on other streams
    ev '{"ev":"subject","subject":"lib","path":"cudnn-softmax","note":"fake library"}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/gpu/median","value":2e-4}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/throttled","value":2}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/foreign","value":0}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/retimed","value":1}'
    ev '{"ev":"timing","subject":"lib","path":"cudnn-softmax","stop":"noise","escaped":false,"throttled":2,"note":"graph batch not measured: x; timed again after 1 record(s) on other streams, the first [memcpy]"}'
    ev '{"ev":"subject","subject":"best","path":"softmax_v2_fp16","note":"bundled"}'
    ev '{"ev":"sum","subject":"best","path":"softmax_v2_fp16","name":"time/gpu/median","value":5e-5}'
    ev '{"ev":"sum","subject":"best","path":"softmax_v2_fp16","name":"time/foreign","value":3}'
    ev '{"ev":"timing","subject":"best","path":"softmax_v2_fp16","stop":"noise","escaped":true,"throttled":0,"note":"3 record(s) on other streams, the first _Z4side"}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
lib_negative_foreign)
    ev '{"ev":"subject","subject":"lib","path":"cudnn-softmax","note":"fake library"}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/foreign","value":-1}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
incorrect)
    ev '{"ev":"fail","subject":"kernel","kind":"incorrect","msg":"trial 1 (uniform): 3 of 100 elements wrong"}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
crash_after_timing)
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    kill -SEGV $$ ;;
hang)
    ev '{"ev":"sum","subject":"kernel","name":"check/trials","value":3}'
    sleep 30 ;;
closes_and_waits)
    # a candidate constructor that closes every descriptor, then waits forever
    exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- 2>&- 1>&-
    eval "exec $fd>&-"
    sleep 30 ;;
lib_twice)
    # a candidate's own library path (a problem outside the catalog) sending
    # its time a second time, faster, to move E_lib
    ev '{"ev":"subject","subject":"lib","path":"cudnn-softmax","note":"fake library"}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/gpu/median","value":2e-4}'
    ev '{"ev":"sum","subject":"lib","path":"cudnn-softmax","name":"time/gpu/median","value":9e-4}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
libcrash)
    ev '{"ev":"subject","subject":"lib","path":"cublaslt","note":"fake"}'
    ev '{"ev":"fail","subject":"lib","path":"cublaslt","kind":"crash","msg":"an illegal memory access was encountered"}'
    ev '{"ev":"done","code":2,"nonce":"NONCE"}'
    exit 3 ;;
badfile)
    ev '{"ev":"error","code":4,"msg":"x.so: no kgate_plugin_v2 symbol: not a kgate candidate","nonce":"NONCE"}'
    ev '{"ev":"done","code":4,"nonce":"NONCE"}'
    exit 3 ;;
forged_table)
    # candidate code writing on the channel: a table with no name
    ev '{"ev":"table","kernels":[{"op":"softmax"}]}' ;;
forged_sum)
    ev '{"ev":"sum","subject":"kernel","name":"lib/time/median","value":1e9}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
forged_unsupported)
    # candidate code declaring the shape unsupported on the channel, to be SKIPPED (exit 1) not judged
    ev '{"ev":"sum","subject":"kernel","name":"check/unsupported","value":1}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
second_timing)
    # a forged timing event first would put its note where the worker's goes
    ev '{"ev":"timing","subject":"kernel","stop":"noise","escaped":false,"throttled":0,"note":"all clear"}'
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4,"unit":"s"}'
    ev '{"ev":"timing","subject":"kernel","stop":"noise","escaped":true,"throttled":0,"note":"3 record(s) on other streams"}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
unsupported)
    # the worker's own word: the kernel's supports() refused the job's shape
    ev '{"ev":"done","code":0,"nonce":"NONCE","unsupported":true}' ;;
unsupported_library)
    ev '{"ev":"done","code":0,"nonce":"NONCE","unsupported":true}' ;;
zero_time)
    ev '{"ev":"check","subject":"kernel","what":"trial 1","pass":true,"rel_l2":1e-4,"max_abs_err":1e-3,"inputs_mutated":false,"desc":"fine"}'
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":0,"unit":"s"}'
    ev '{"ev":"timing","subject":"kernel","stop":"noise","escaped":false,"throttled":0,"note":""}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
no_time)
    ev '{"ev":"check","subject":"kernel","what":"trial 1","pass":true,"rel_l2":1e-4,"max_abs_err":1e-3,"inputs_mutated":false,"desc":"fine"}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
forged_judged)
    # the time the gate judges is the supervisor's to set
    ev '{"ev":"sum","subject":"kernel","name":"time/judged","value":1e-9}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
flood)
    # names of its own, enough to fill a result, then the times: refused at
    # the first unknown name (supervise/job.c kernel_sum_ok)
    for i in $(seq 1 100); do ev '{"ev":"sum","subject":"kernel","name":"check/junk'"$i"'","value":1}'; done
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":4e-6}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
forged_code)
    ev '{"ev":"error","code":-9,"msg":"x","nonce":"NONCE"}' ;;
forged_error)
    # candidate code stopping the whole command (a batch, a KernelBench
    # group) with an environment error it wrote itself, without the nonce
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    ev '{"ev":"error","code":5,"msg":"no CUDA GPU: all CUDA-capable devices are busy","nonce":"0123456789abcdef0123456789abcdef"}'
    ev '{"ev":"done","code":5,"nonce":"NONCE"}'
    exit 3 ;;
scratch)
    # a diagnosis killed while its cubins are on disk: where they were goes
    # to $KG_FAKE_NOTE ("none" without a scratch directory)
    dir=$(printf '%s' "$job" | sed -n 's/.*"scratch":"\([^"]*\)".*/\1/p')
    if [ -n "$dir" ] && [ -d "$dir" ]; then
        : >"$dir/kg-cubin-left" && echo "$dir" >"$KG_FAKE_NOTE"
    else
        echo none >"$KG_FAKE_NOTE"
    fi
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    kill -KILL $$ ;;
orphan)
    # a candidate that forks a child which leaves the process group
    setsid sleep 61.25 </dev/null >/dev/null 2>&1 &
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
dup_sum)
    # candidate code forging a plausible timing before the worker's own
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-9}'
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
forged_done)
    # a complete, plausible result forged without the job's nonce
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    ev '{"ev":"done","code":0,"nonce":"0123456789abcdef0123456789abcdef"}' ;;
unknown_event)
    ev '{"ev":"verdict","value":"OK"}' ;;
stderr_flood)
    # 4096 bytes and more on stderr, no newline
    head -c 5000 /dev/zero | tr '\0' 'x' >&2
    ev '{"ev":"done","code":0,"nonce":"NONCE"}' ;;
stderr_junk)
    # a crash whose last stderr line is bytes of no UTF-8, C1 controls as
    # UTF-8 and raw, a terminal escape and a bidi override
    ev '{"ev":"sum","subject":"kernel","name":"time/gpu/median","value":1e-4}'
    printf 'junk-start \377\376 \302\233[31m \233[2J \033]0;t\007 \342\200\256 \300\257 junk-end\n' >&2
    kill -SEGV $$ ;;
long_line)
    # a line over 64 KiB that is not a table
    { head -c 70000 /dev/zero | tr '\0' 'y'; echo; } >&"$fd"
    sleep 30 ;;
huge_line)
    # more than the supervisor's line buffer (4 MiB, a table's), no newline
    head -c 4200000 /dev/zero | tr '\0' 'y' >&"$fd"
    sleep 30 ;;
esac
