#!/bin/sh
# The profile of session 12 (run from the repository root on the H200, with
# a packed build of 3696251 plus phases.patch in .devbuild-prof: kgate and
# libkgate.so print "PHASE <unix time> <what>" to stderr under KGATE_PHASES=1).
B=.devbuild-prof
export XDG_CACHE_HOME=$OUT/cache
wt() { python3 -c 'import subprocess,sys,time; t=time.time(); subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL); print("%.3f"%(time.time()-t))' "$@"; }
echo "version: $(wt $B/kgate version) $(wt $B/kgate version) $(wt $B/kgate version)"
echo "devices: $(wt $B/kgate devices) $(wt $B/kgate devices)"
LD_DEBUG=statistics $B/kgate version 2>&1 | grep -i "total startup\|relocation" | head -4
$B/kgate peaks >/dev/null 2>&1
for k in softmax_v1_fp16 softmax_v1_fp16 softmax_v1_fp16; do
  python3 -c 'import time;print("PHASE %.6f spawn"%time.time())' >>$OUT/phases-$k.txt
  KGATE_PHASES=1 $B/kgate check $B/libkgate_bundled.so:$k --sizes small --lib-cache --min-time 0.05 --json $OUT/r.json 2>>$OUT/phases-$k.txt >/dev/null
  python3 -c 'import time;print("PHASE %.6f exited"%time.time())' >>$OUT/phases-$k.txt
  python3 -c 'import json;r=json.load(open("'$OUT'/r.json"))["results"][0]["summaries"];print(" ".join("%s=%.4f"%(k,v["value"]) for k,v in r.items() if "phase" in k or "wall" in k or "startup" in k or "cache" in k))' >>$OUT/phases-$k.txt
done
# (the first call also ran, with ctypes: cuInit, cuDevicePrimaryCtxRetain and
# nvmlInit_v2 timed, and nvmlDeviceGetComputeRunningProcesses_v3 with and
# without a child process holding a torch context)
