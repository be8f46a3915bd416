#!/bin/sh
# A/B of the Python worker host's glue: A = abglue/python (44e02a4), B = python/ (working tree)
set -u
O=${OUT:-/tmp/out}; mkdir -p $O /tmp/A
cp -r .devbuild /tmp/A/bin && cp -r abglue/python /tmp/A/python
export XDG_CACHE_HOME=$O/cache
for round in 1; do for v in A B; do
  if [ $v = A ]; then k=/tmp/A/bin/kgate; else k=.devbuild/kgate; fi
  for sh in small large; do
    timeout 120 $k check tests/python/triton_jit.py --shape $sh --json $O/$v-$round-$sh.json >$O/$v-$round-$sh.txt 2>&1
    echo "$v $round $sh exit $?"
  done
done; done
python3 - $O <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/*-*-*.json")):
    d = json.load(open(f))
    print(os.path.basename(f), " ".join("%s %s glue %.1f over %.2f host %.1f gpu %.1f" % (r["kernel"], r["verdict"], r["summaries"]["time/host/glue"]["value"]*1e6, r["summaries"]["time/host/glue_over"]["value"], r["summaries"]["time/host/median"]["value"]*1e6, r["summaries"]["time/gpu/median"]["value"]*1e6 if "time/gpu/median" in r["summaries"] else -1) for r in d["results"] if "time/host/glue" in r["summaries"]))
PY
