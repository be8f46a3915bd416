#!/bin/sh
# kgate batch on the CPU, with tests/fake_check.sh standing in for the
# `kgate check` of each job and fake GPUs (KG_BATCH_GPUS): every job once,
# spread over the GPUs; a GPU that fails its health check drained and its
# job moved; a killed batch resumed with every job recorded once; the bad
# inputs of docs/scale.md; and 64 ranks as processes (Slurm's variables;
# mpirun's too when Open MPI is installed) sharding one manifest, merged.
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$(cd "$2" && pwd)
t=$(mktemp -d)
trap 'rm -f "$t/left.run"; rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
export KG_BATCH_RUNNER=$src/tests/fake_check.sh KG_BATCH_GPUS=2
unset CUDA_VISIBLE_DEVICES # the jobs' view is the batch's to set
export KGATE_LOCK_DIR=$t/locks # the GPU locks' directory, this test's own
ids() { python3 -c "import json,sys; ids=[json.loads(l)['id'] for l in open(sys.argv[1])]; print(len(ids), len(set(ids)))" "$1"; }
cd "$t"
for i in $(seq 1 60); do : >c$i.so; done
: >c_slow.so
: >c_wrong.so
{ for i in $(seq 1 60); do echo "{\"candidate\":\"c$i.so\",\"op\":\"relu\"}"; done
  echo '{"candidate":"c_slow.so"}'; echo '{"candidate":"c_wrong.so"}'; } >m.jsonl

# 1. two GPUs: every job once, both used
KG_FAKE_LOG=$t/log1 "$kgate" batch m.jsonl -o r1.jsonl >out1.txt 2>&1
expect "two GPUs: exit" 0 "$?"
expect "two GPUs: lines, distinct ids" "62 62" "$(ids r1.jsonl)"
expect "two GPUs: both GPUs ran jobs" 2 "$(cut -d' ' -f2 log1 | sort -u | wc -l)"
expect "two GPUs: the summary counts the verdicts" 1 "$(grep -c 'OK 60 SLOW 1 INCORRECT 1' out1.txt)"
expect "two GPUs: the summary's rate" 1 "$(grep -c '^time: 62 job(s) in [0-9.]* s on 2 GPU(s): [0-9.]* verdicts a minute$' out1.txt)"
expect "without --lib-cache no line about it" 0 "$(grep -c '^library times' out1.txt)"
# where the jobs' time went (the fake's phases: listing 0.01 s, the library
# job 3.5 s, the kernel's worker 0.02 s; no fork server, no lock waits)
expect "two GPUs: where the jobs' time went" 1 "$(grep -c "^job time over the file's 62 job(s): [0-9.]* s a job: the Python fork server's imports 0.00 s (0%), listing 0.01 s ([0-9]*%), library jobs 3.50 s ([0-9]*%), kernels' workers 0.02 s ([0-9]*%), waiting for the GPU lock 0.00 s (0%), the rest [0-9.]* s ([0-9]*%)$" out1.txt)"
expect "no shared GPU, no line about it" 0 "$(grep -c '^shared GPUs' out1.txt)"
# results flagged shared-gpu (another process on their GPU) are counted
KG_FAKE_LOG=$t/log1s KG_FAKE_SHARED_GPU=1 "$kgate" batch m.jsonl -o r1s.jsonl >out1s.txt 2>&1
expect "shared GPU: the summary counts the flagged results" "$(grep -c ' 1 ' log1s)" \
    "$(sed -n 's/^shared GPUs: \([0-9]*\) result(s) of the file measured while another process held a context on their GPU (flag shared-gpu)$/\1/p' out1s.txt)"
# 1a. each job sees only its GPU: CUDA_VISIBLE_DEVICES=its UUID and --device 0,
# and its result names that GPU; where the UUID does not select the GPU (a
# health check under it names another), the GPU's jobs see every GPU, said once
KG_FAKE_ENVLOG=$t/env1 "$kgate" batch m.jsonl -o r1v.jsonl >out1v.txt 2>&1
expect "one GPU a job: exit, lines" "0 62" "$? $(wc -l <r1v.jsonl)"
expect "one GPU a job: every job saw its GPU alone as device 0" 62 "$(grep -c '^\([01]\) 0 GPU-fake-\1 -$' env1)"
expect "one GPU a job: each result's GPU is the batch's" 62 \
    "$(python3 -c "import json,sys; print(sum(json.loads(l)['check']['device']['uuid'] == 'GPU-fake-%d' % json.loads(l)['gpu'] for l in open(sys.argv[1])))" r1v.jsonl)"
expect "one GPU a job: nothing said" 0 "$(grep -c 'did not select' out1v.txt)"
KG_FAKE_ENVLOG=$t/env2 KG_FAKE_IGNORE_CVD=1 "$kgate" batch m.jsonl -o r1w.jsonl >out1w.txt 2>&1
expect "a UUID that selects another GPU: exit, lines" "0 62" "$? $(wc -l <r1w.jsonl)"
expect "a UUID that selects another GPU: said once" 1 \
    "$(grep -c '^kgate: batch: GPU 1: CUDA_VISIBLE_DEVICES=GPU-fake-1 did not select it: its jobs see every GPU$' out1w.txt)"
expect "a UUID that selects another GPU: GPU 1's jobs as --device 1 among all, GPU 0's alone" 62 \
    "$(grep -c '^1 1 - -$\|^0 0 GPU-fake-0 -$' env2)"
expect "a UUID that selects another GPU: GPU 1 still ran jobs" 1 "$(grep -c '^1 1 - -$' env2 | awk '{print ($1 > 0)}')"

# 1b. every job with --lib-cache: the summary counts the results that reused
# library times and those that timed them (the first on each GPU)
mkdir libdir
KG_FAKE_LOG=$t/log1c KG_FAKE_LIBDIR=$t/libdir "$kgate" batch m.jsonl -o r1c.jsonl -- --lib-cache >out1c.txt 2>&1
expect "lib-cache: exit, lines" "0 62" "$? $(wc -l <r1c.jsonl)"
used=$(cut -d' ' -f2 log1c | sort -u | wc -l)
expect "lib-cache: reused by all but the first job of each GPU used" "$((62 - used)) $used" \
    "$(sed -n 's/^library times: reused from --lib-cache by \([0-9]*\) result(s) of the file, timed by \([0-9]*\)$/\1 \2/p' out1c.txt)"

# the merged file reads as results: kgate report and kgate compare take it
"$kgate" report r1.jsonl -o r1.md >/dev/null 2>&1
expect "kgate report reads a batch results file" 62 "$(grep -c '^| k |' r1.md)"
"$kgate" compare r1.jsonl r1.jsonl >cmp.txt 2>&1
expect "kgate compare reads batch results files: exit" 0 "$?"
echo '{"schema":"kgate.batch/1","id":"x","check":{"schema":"kgate.results/7"}}' >bad_check.jsonl
"$kgate" report bad_check.jsonl -o x.md >bad_check.txt 2>&1
expect "a batch line whose check is of another schema: exit" 6 "$?"

# 1b2. --timeout before -- is a check's option in the wrong place: refused, naming both
KG_BATCH_GPUS=1 "$kgate" batch ml.jsonl -o rt.jsonl --timeout 2 >outt.txt 2>&1
expect "batch --timeout: exit" 3 "$?"
expect "... names --job-timeout and where a check's --timeout goes" 1 \
    "$(grep -c "each job's limit is --job-timeout S; a check's --timeout (each candidate's) goes after --" outt.txt)"
expect "... ran nothing" 0 "$(cat rt.jsonl 2>/dev/null | wc -l)"
KG_BATCH_GPUS=1 "$kgate" batch ml.jsonl -o rt.jsonl --timeout=2 >outt.txt 2>&1
expect "batch --timeout=2: exit" 3 "$?"
# 1c. a job killed at --job-timeout leaves nothing running into the next one:
# what it left (here a process in a session of its own) is killed and
# reaped before the next job starts
: >c_leaver.so
{ echo '{"candidate":"c_leaver.so"}'; echo '{"candidate":"c1.so"}'; } >ml.jsonl
KG_FAKE_LEFT=$t/left KG_BATCH_GPUS=1 "$kgate" batch ml.jsonl -o rl.jsonl --job-timeout 2 >outl.txt 2>&1
expect "a killed job: both recorded" 2 "$(wc -l <rl.jsonl)"
expect "a killed job's leftover was gone when the next job started" gone "$(cat "$t/left.seen" 2>/dev/null)"
expect "a killed job's leftover is gone" 0 "$(kill -0 "$(cat "$t/left")" 2>/dev/null && echo 1 || echo 0)"
expect "a job past --job-timeout is asked to stop (SIGTERM) before it is killed" term "$(cat "$t/left.term" 2>/dev/null)"

# 1c2. a leftover that forks and exits as fast as it can, in a session of
# its own: its process group is killed with it, and it is gone before the
# next job starts
: >c_forker.so
{ echo '{"candidate":"c_forker.so"}'; echo '{"candidate":"c1.so"}'; } >mf.jsonl
rm -f "$t/left" "$t/left.seen"
KG_FAKE_LEFT=$t/left KG_BATCH_GPUS=1 "$kgate" batch mf.jsonl -o rf.jsonl --job-timeout=1 >outf.txt 2>&1
expect "a fast-forking leftover: both recorded" 2 "$(wc -l <rf.jsonl)"
expect "a fast-forking leftover was gone when the next job started" gone "$(cat "$t/left.seen" 2>/dev/null)"
rm -f "$t/left.run"

# 1c3. a job past --job-timeout is followed by a health check: a GPU it wedged
# is drained and the job moved on (once), like any other drain
mkdir wdg
: >c_wedge.so
{ echo '{"candidate":"c_wedge.so"}'; for i in $(seq 1 6); do echo "{\"candidate\":\"c$i.so\"}"; done; } >mw.jsonl
KG_BATCH_GPUS=3 KG_FAKE_BREAK_DIR=$t/wdg "$kgate" batch mw.jsonl -o rw.jsonl --job-timeout 1 >outw.txt 2>&1
expect "a wedging job: exit (left undone)" 5 "$?"
expect "a wedging job: two GPUs drained, not three; named" "2 1" \
    "$(ls wdg | wc -l) $(grep -c 'c_wedge.so.*, the second GPU it drained: drained, the job left undone' outw.txt)"
expect "a wedging job: not recorded, the others judged" "0 6 6" "$(grep -c c_wedge rw.jsonl) $(ids rw.jsonl)"
# a health check that finds its GPU's lock held says nothing of its health:
# the GPU is not drained, its jobs' failures recorded as they are, said once
KG_FAKE_BAD_GPU=1 KG_FAKE_HEALTH_UNKNOWN=1 "$kgate" batch m.jsonl -o ru.jsonl >outu.txt 2>&1
expect "health unknown: exit, lines, distinct ids" "0 62 62" "$? $(ids ru.jsonl)"
expect "health unknown: not drained, said once" "0 1" \
    "$(grep -c 'failed its health check' outu.txt) $(grep -c '^kgate: batch: GPU 1: its health could not be checked after job .*: not drained' outu.txt)"

# 1c4. a job whose results document is missing, over the 2 MiB cap or not
# JSON is recorded with an error saying so: it could not be judged
: >c_nojson.so
: >c_bigjson.so
: >c_badjson.so
{ echo '{"candidate":"c_nojson.so"}'; echo '{"candidate":"c_bigjson.so"}'; echo '{"candidate":"c_badjson.so"}'; } >mn.jsonl
KG_BATCH_GPUS=1 "$kgate" batch mn.jsonl -o rn.jsonl >outn.txt 2>&1
expect "no results document: exit, lines" "0 3" "$? $(wc -l <rn.jsonl)"
expect "no results document: each error names why" "1 1 1" \
    "$(grep -c '"error":"exit 0, but its results document (--json) is missing"' rn.jsonl) $(grep -c '"error":"exit 0, but its results document (--json) is over the 2 MiB cap' rn.jsonl) $(grep -c '"error":"exit 0, but its results document (--json) is not valid JSON' rn.jsonl)"
expect "no results document: counted as could not be judged" 1 "$(grep -c 'jobs that could not be judged: 3$' outn.txt)"
# 1c4b. a job whose results and last line hold bytes of no UTF-8, C1
# controls and escapes: its results line is UTF-8 with no control character
# in any string, and so are kgate report's and compare's outputs of it;
# kgate.read_batch reads it (the audit's invalid JSONL)
: >c_junk.so
echo '{"candidate":"c_junk.so"}' >mjunk.jsonl
KG_BATCH_GPUS=1 "$kgate" batch mjunk.jsonl -o rjunk.jsonl >outjunk.txt 2>&1
expect "junk text: exit, lines" "0 1" "$? $(wc -l <rjunk.jsonl)"
clean_py='import json, sys, unicodedata as u
def s(x):
    if isinstance(x, dict): [s(k) or s(v) for k, v in x.items()]
    elif isinstance(x, list): [s(v) for v in x]
    elif isinstance(x, str): assert not any(u.category(c) == "Cc" for c in x), repr(x)
text = open(sys.argv[1], "rb").read().decode("utf-8")
if sys.argv[2] == "jsonl":
    for l in text.splitlines(): s(json.loads(l))
    assert "end" in json.loads(text)["error"] and "end" in json.loads(text)["check"]["results"][0]["reason"]
elif sys.argv[2] == "json":
    s(json.loads(text))
else:  # lines (a CSV ends its with CR LF)
    assert not any(u.category(c) == "Cc" for c in text.replace(chr(13) + chr(10), "").replace(chr(10), "")), \
        "a control character"
print("clean")'
expect "junk text: the results line is UTF-8, no control character in a string" clean \
    "$(python3 -c "$clean_py" rjunk.jsonl jsonl 2>&1 | tail -1)"
# the job's own results document (the fake's, not cleaned) read by report and compare
KG_FAKE_LOG=/dev/null "$KG_BATCH_RUNNER" check c_junk.so --json junk.json 2>/dev/null
for fmt in md csv html; do
    "$kgate" report junk.json rjunk.jsonl -o "rjunk.$fmt" >/dev/null 2>&1
    expect "junk text: kgate report's $fmt is clean" clean "$(python3 -c "$clean_py" "rjunk.$fmt" text 2>&1 | tail -1)"
done
"$kgate" compare junk.json rjunk.jsonl --json cmpjunk.json >cmpjunk.txt 2>&1
expect "junk text: kgate compare's output is clean" clean "$(python3 -c "$clean_py" cmpjunk.txt text 2>&1 | tail -1)"
expect "junk text: kgate compare's JSON is clean" clean "$(python3 -c "$clean_py" cmpjunk.json json 2>&1 | tail -1)"
expect "junk text: kgate.read_batch reads it" 1 "$(PYTHONPATH=$src/python python3 -c \
    "import kgate, sys; print(len(list(kgate.read_batch(sys.argv[1]))))" rjunk.jsonl 2>&1)"
# the jobs' directories go in $TMPDIR; one that cannot be made is said, exit 6
TMPDIR=$t/no-such-dir "$kgate" batch mn.jsonl -o rn2.jsonl >outn2.txt 2>&1
expect "TMPDIR missing: exit, one line naming it and mkdtemp" "6 1" \
    "$? $(grep -c "^kgate: batch: $t/no-such-dir/kgate-batch-XXXXXX: mkdtemp: No such file or directory$" outn2.txt)"
# each supervisor holds its own pipes only (its job requests and the
# status), not the ends of the slots forked before it: all hold as many
KG_BATCH_GPUS=4 KG_FAKE_FDLOG=$t/fds "$kgate" batch m.jsonl -o rfd.jsonl >/dev/null 2>&1
expect "every supervisor holds as many pipe ends" 1 "$(cut -d' ' -f2 fds | sort -u | wc -l)"

# 1c5. a results file that cannot take a line (a file size limit here) stops
# the whole batch, exit 6, naming the file and the call; no torn line is
# left, and the same command again finishes the batch
mkdir tmpq
(ulimit -f 4; TMPDIR=$t/tmpq exec "$kgate" batch m.jsonl -o rq.jsonl) >outq.txt 2>&1
expect "results file full: exit" 6 "$?"
expect "results file full: said, naming the file and write" 1 \
    "$(grep -c '^kgate: batch: rq.jsonl: write: File too large after [0-9]* of [0-9]* bytes (the fragment cut off): the batch stops$' outq.txt)"
expect "results file full: no GPU drained" 0 "$(grep -c 'drained\|died' outq.txt)"
expect "results file full: whole lines only, some" yes \
    "$(python3 -c "import json,sys; d=open(sys.argv[1]).read(); [json.loads(l) for l in d.splitlines()]; print('yes' if d and d.endswith(chr(10)) else 'no')" rq.jsonl 2>&1)"
expect "results file full: nothing left in TMPDIR" 0 "$(ls tmpq | wc -l)"
"$kgate" batch m.jsonl -o rq.jsonl >outq2.txt 2>&1
expect "results file full, then rerun: exit, lines, distinct ids" "0 62 62" "$? $(ids rq.jsonl)"

# 1c6. a last line that lacks only its newline is a finished job; a torn
# one is cut off and its job run again: every id once either way
cp r1.jsonl rt.jsonl
truncate -s -1 rt.jsonl
"$kgate" batch m.jsonl -o rt.jsonl >outt.txt 2>&1
expect "a last line without its newline: exit, lines, distinct ids, none run" "0 62 62 1" \
    "$? $(ids rt.jsonl) $(grep -c '0 job(s) run, 62 already done' outt.txt)"
truncate -s -20 rt.jsonl
"$kgate" batch m.jsonl -o rt.jsonl >outt.txt 2>&1
expect "a torn last line: exit, lines, distinct ids, one run, said" "0 62 62 1 1" \
    "$? $(ids rt.jsonl) $(grep -c '1 job(s) run, 61 already done' outt.txt) $(grep -c '^kgate: batch: rt.jsonl: its torn last line (.* bytes, a killed run.s) cut off' outt.txt)"

# 1c7. stopped by a signal (SIGTERM to the batch, then to its process
# group): the jobs running are asked to stop, the batch waits for its
# supervisors, prints its summary and exits 7; what was recorded stays,
# nothing is left running or in $TMPDIR, and the same command again
# finishes the batch
for how in batch group; do
    mkdir "tmps-$how"
    TMPDIR=$t/tmps-$how KG_FAKE_SLEEP=2 KG_FAKE_STOPLOG=$t/stop-$how setsid "$kgate" batch m.jsonl -o "rs-$how.jsonl" \
        >"outs-$how.txt" 2>&1 &
    bpid=$!
    # two lines recorded, and a job running past the setting of its trap
    # (started, not finished: a shell slow to start under the sanitizers
    # would die of the SIGTERM before it could log it)
    for _ in $(seq 200); do
        done_n=$(cat "rs-$how.jsonl" 2>/dev/null | wc -l)
        [ "$done_n" -ge 2 ] && [ "$(cat "stop-$how.armed" 2>/dev/null | wc -l)" -gt "$done_n" ] && break
        sleep 0.1
    done
    if [ $how = batch ]; then kill -TERM "$bpid"; else kill -TERM -"$bpid"; fi
    wait "$bpid"
    expect "stopped ($how): exit" 7 "$?"
    expect "stopped ($how): the summary, then how many jobs were cut short" "1 1" \
        "$(grep -c '^batch: [0-9]* job(s) run' "outs-$how.txt") $(grep -c '^batch: stopped (Terminated): [0-9]* job(s) cut short and not recorded' "outs-$how.txt")"
    expect "stopped ($how): the jobs running were asked to stop" yes "$([ -s "stop-$how" ] && echo yes || echo no)"
    expect "stopped ($how): nothing of it left running" 0 "$(pgrep -s "$bpid" | wc -l)"
    expect "stopped ($how): nothing left in TMPDIR" 0 "$(ls "tmps-$how" | wc -l)"
    "$kgate" batch m.jsonl -o "rs-$how.jsonl" >"outs2-$how.txt" 2>&1
    expect "stopped ($how), then rerun: exit, lines, distinct ids" "0 62 62" "$? $(ids "rs-$how.jsonl")"
done

# 1d. --jobs-per-gpu 2: two jobs a GPU at once (two supervisors each), never
# three; every job once; a drained GPU's other supervisor stops too
mkdir conc
KG_FAKE_ENVLOG=$t/envj KG_FAKE_CONC=$t/conc KG_FAKE_SLEEP=0.3 "$kgate" batch m.jsonl -o rj.jsonl --jobs-per-gpu 2 >outj.txt 2>&1
expect "jobs-per-gpu 2: exit" 0 "$?"
expect "jobs-per-gpu 2: every job with KGATE_GPU_LOCK=require (an unusable lock fails it)" 62 \
    "$(awk '$4 == "require"' "$t/envj" | wc -l)"
expect "jobs-per-gpu 2: lines, distinct ids" "62 62" "$(ids rj.jsonl)"
expect "jobs-per-gpu 2: at most two jobs at once on GPU 0, and two were" 2 \
    "$(awk '$1 == 0 {print $2}' conc.log | sort -n | tail -1)"
expect "jobs-per-gpu 2: at most two jobs at once on GPU 1, and two were" 2 \
    "$(awk '$1 == 1 {print $2}' conc.log | sort -n | tail -1)"
KG_FAKE_BAD_GPU=1 "$kgate" batch m.jsonl -o rjd.jsonl --jobs-per-gpu 2 >outjd.txt 2>&1
expect "jobs-per-gpu 2, GPU 1 failing: exit, lines, distinct ids" "0 62 62" "$? $(ids rjd.jsonl)"
# both its supervisors fail a job: the GPU is drained once, and the second
# job, failed beside the first, is moved on, not held for a GPU breaker
expect "jobs-per-gpu 2, GPU 1 failing: nothing from it, drained once, no job left undone" "0 1 0" \
    "$(grep -c '"gpu":1' rjd.jsonl) $(grep -c 'GPU 1 failed its health check: drained' outjd.txt) $(grep -c 'left undone' outjd.txt)"
# several jobs a GPU only with a GPU lock that works
KGATE_GPU_LOCK=0 "$kgate" batch m.jsonl -o rjx.jsonl --jobs-per-gpu 2 >outjx.txt 2>&1
expect "--jobs-per-gpu 2 with the lock off: refused (exit 3), said" "3 1" \
    "$? $(grep -c 'jobs-per-gpu 2 needs the GPU lock, which KGATE_GPU_LOCK=0 turns off' outjx.txt)"
mkdir -m 755 open-locks
KGATE_LOCK_DIR=$t/open-locks "$kgate" batch m.jsonl -o rjx.jsonl --jobs-per-gpu 2 >outjx.txt 2>&1
expect "--jobs-per-gpu 2 with a lock directory open to others: refused (exit 6), said" "6 1" \
    "$? $(grep -c 'open-locks is not a directory of this user.s own with mode 0700' outjx.txt)"
expect "refused before any job ran" 0 "$(cat rjx.jsonl 2>/dev/null | wc -l)"
for bad in 0 5 x; do
    "$kgate" batch m.jsonl -o rjx.jsonl --jobs-per-gpu $bad >outjx.txt 2>&1
    expect "--jobs-per-gpu $bad: a usage error (exit 3) naming the range" "3 1" "$? $(grep -c "jobs-per-gpu: '$bad' is not a whole number in \[1, 4\]" outjx.txt)"
done

# 2. a rerun does nothing
KG_FAKE_LOG=$t/log1b "$kgate" batch m.jsonl -o r1.jsonl >out1b.txt 2>&1
expect "rerun: jobs run" 0 "$(cat log1b 2>/dev/null | wc -l)"
expect "rerun: says so" 1 "$(grep -c '0 job(s) run, 62 already done' out1b.txt)"
expect "rerun: no rate for no job" 0 "$(grep -c '^time:' out1b.txt)"

# 3. GPU 1 fails its health check: drained, its job moved, each job once
KG_FAKE_LOG=$t/log3 KG_FAKE_BAD_GPU=1 "$kgate" batch m.jsonl -o r3.jsonl >out3.txt 2>&1
expect "drain: exit" 0 "$?"
expect "drain: lines, distinct ids" "62 62" "$(ids r3.jsonl)"
expect "drain: GPU 1 named" 1 "$(grep -c 'GPU 1 failed its health check' out3.txt)"
expect "drain: no job recorded from GPU 1" 0 "$(grep -c '"gpu":1' r3.jsonl)"

# 3b. a candidate that breaks every GPU it runs on moves on once: it drains
# two GPUs of three, not all, and is left undone (exit 5); the rest is judged
mkdir brk
: >c_breaker.so
{ echo '{"candidate":"c_breaker.so"}'; for i in $(seq 1 10); do echo "{\"candidate\":\"c$i.so\"}"; done; } >mb.jsonl
KG_BATCH_GPUS=3 KG_FAKE_BREAK_DIR=$t/brk KG_FAKE_SLEEP=0.05 "$kgate" batch mb.jsonl -o rb.jsonl >outb.txt 2>&1
expect "a GPU breaker: exit (a job left undone)" 5 "$?"
expect "a GPU breaker: two GPUs drained, not three" 2 "$(ls brk | wc -l)"
expect "a GPU breaker: named, left undone" 1 "$(grep -c 'the second GPU it drained: drained, the job left undone' outb.txt)"
expect "a GPU breaker: the other jobs judged" "10 10" "$(ids rb.jsonl)"

# 3b2. two jobs a GPU: a breaker that breaks its GPU and fails after the job
# beside it failed there (that job reports the drain first) is still
# charged with it, as is every job in flight on a GPU when it drains: two
# GPUs of four drained, not four, the breaker left undone
mkdir brk2
{ echo '{"candidate":"c_breaker.so"}'; for i in $(seq 1 15); do echo "{\"candidate\":\"c$i.so\"}"; done; } >mb2.jsonl
KG_BATCH_GPUS=4 KG_FAKE_BREAK_DIR=$t/brk2 KG_FAKE_SLEEP=0.3 KG_FAKE_BREAK_AFTER=0.6 "$kgate" batch mb2.jsonl \
    -o rb2.jsonl --jobs-per-gpu 2 >outb2.txt 2>&1
expect "a GPU breaker beside other jobs: exit (left undone)" 5 "$?"
expect "a GPU breaker beside other jobs: two GPUs drained, not more" 2 "$(ls brk2 | wc -l)"
expect "a GPU breaker beside other jobs: named, not recorded" "1 0" \
    "$(grep -c 'c_breaker.so.*, the second GPU it drained: drained, the job left undone' outb2.txt) $(grep -c c_breaker rb2.jsonl)"
expect "a GPU breaker beside other jobs: no job twice" yes \
    "$(ids rb2.jsonl | awk '{print ($1 == $2 && $1 >= 13) ? "yes" : "no " $0}')"

# 3c. a candidate's crash is recorded as it is, nothing drained
: >c_crash.so
{ echo '{"candidate":"c_crash.so"}'; echo '{"candidate":"c1.so"}'; } >mc.jsonl
KG_FAKE_LOG=$t/log3c "$kgate" batch mc.jsonl -o r3c.jsonl >out3c.txt 2>&1
expect "a crash: recorded, nothing drained" "1 0" \
    "$(echo $(grep -c '"verdict":"CRASH"' r3c.jsonl) $(grep -c 'failed its health check' out3c.txt))"

# 4. killed mid-run, then resumed: every job recorded exactly once
(KG_FAKE_SLEEP=0.05 KG_FAKE_LOG=$t/log4 setsid "$kgate" batch m.jsonl -o r4.jsonl >/dev/null 2>&1 & echo $! >pid)
# killed once some jobs are recorded (however loaded the machine), long before all 62
for _ in $(seq 100); do [ "$(cat r4.jsonl 2>/dev/null | wc -l)" -ge 3 ] && break; sleep 0.1; done
kill -9 -"$(cat pid)" 2>/dev/null
sleep 0.2
before=$(wc -l <r4.jsonl)
KG_FAKE_LOG=$t/log4 "$kgate" batch m.jsonl -o r4.jsonl >out4.txt 2>&1
expect "resume: exit" 0 "$?"
expect "resume: the kill left some done and some not" yes "$([ "$before" -gt 0 ] && [ "$before" -lt 62 ] && echo yes || echo "no ($before)")"
expect "resume: lines, distinct ids" "62 62" "$(ids r4.jsonl)"
expect "resume: the finished jobs were not run again" "$((62 - before))" "$(grep -o '[0-9]* job(s) run' out4.txt | cut -d' ' -f1)"

# 5. bad input: each one line, the rest goes on
{ cat m.jsonl; echo 'not json'; echo '{"candidate":"missing.so"}'; echo '{"candidate":"c1.so","op":"relu"}'
  echo '{"candidate":"c2.so","colour":"red"}'; echo '{"candidate":"c3.so","options":["--json","x"]}'; } >bad.jsonl
KG_FAKE_LOG=$t/log5 "$kgate" batch bad.jsonl -o r5.jsonl >out5.txt 2>&1
expect "bad lines: exit" 3 "$?"
expect "bad lines: the good jobs ran" "62 62" "$(ids r5.jsonl)"
expect "bad line named: not JSON" 1 "$(grep -c 'bad.jsonl:63: not a JSON object' out5.txt)"
expect "bad line named: missing candidate" 1 "$(grep -c 'bad.jsonl:64: missing.so: no such readable candidate' out5.txt)"
expect "bad line named: duplicate id" 1 "$(grep -c "bad.jsonl:65: id .* appears twice" out5.txt)"
expect "bad line named: unknown field" 1 "$(grep -c "bad.jsonl:66: unknown field 'colour'" out5.txt)"
expect "bad line named: the batch's option" 1 "$(grep -c "bad.jsonl:67: option '--json' is the batch's" out5.txt)"
# an unparsable line alone (every candidate there) is still exit 3
{ cat m.jsonl; echo 'not json'; } >bad1.jsonl
"$kgate" batch bad1.jsonl -o r5b.jsonl >out5b.txt 2>&1
expect "an unparsable line alone: exit, the good jobs ran" "3 62" "$? $(wc -l <r5b.jsonl)"
# a NUL byte inside a line: the line is refused, named, not cut short and run
printf '{"candidate":"c1.so","id":"nul1"}\n{"candidate":"c2.so","id":"nul2"}\000,"op":"nosuchop"}\n' >nul.jsonl
"$kgate" batch nul.jsonl -o r5n.jsonl >out5n.txt 2>&1
expect "a NUL in a line: exit, named, the other job ran" "3 1 1" \
    "$? $(grep -c '^kgate: nul.jsonl:2: holds a NUL byte (line skipped)$' out5n.txt) $(wc -l <r5n.jsonl)"
# what is not a regular file (a FIFO, /dev/zero) as the manifest, --done or
# -o would block or never end: refused at once, one line, exit 6
mkfifo fifo
for args in "fifo -o rx.jsonl" "/dev/zero -o rx.jsonl" "m.jsonl -o fifo" "m.jsonl -o /dev/zero" \
    "m.jsonl -o rx.jsonl --done fifo" "m.jsonl -o rx.jsonl --done /dev/zero"; do
    # shellcheck disable=SC2086 # the words are the arguments
    timeout 60 "$kgate" batch $args >outx.txt 2>&1
    expect "batch $args: exit, one line saying what it is" "6 1" \
        "$? $(grep -c 'not a regular file (a \(FIFO\|device\))$' outx.txt)"
done
expect "refused before any job ran" 0 "$(cat rx.jsonl 2>/dev/null | wc -l)"
"$kgate" batch m.jsonl -o r6.jsonl --gpus 0,7 >out6.txt 2>&1
expect "a GPU that does not exist: exit" 3 "$?"
expect "a GPU that does not exist: said" 1 "$(grep -c 'GPU 7 does not exist (2 GPUs here)' out6.txt)"
echo '{"schema":"kgate.batch/0","id":"x"}' >old.jsonl
"$kgate" batch m.jsonl -o old.jsonl >out7.txt 2>&1
expect "a results file of another schema: exit" 6 "$?"
expect "a results file of another schema: said" 1 "$(grep -c 'old.jsonl: schema kgate.batch/0, this kgate writes kgate.batch/1' out7.txt)"
(KG_FAKE_SLEEP=0.3 "$kgate" batch m.jsonl -o r8.jsonl >/dev/null 2>&1 &)
sleep 0.3
"$kgate" batch m.jsonl -o r8.jsonl >out8.txt 2>&1
expect "two batches on one results file: exit" 6 "$?"
expect "two batches on one results file: said" 1 "$(grep -c 'r8.jsonl: another batch is writing it' out8.txt)"
"$kgate" batch nosuch.jsonl -o r9.jsonl >out9.txt 2>&1
expect "a missing manifest: exit" 6 "$?"
# no GPU: one line saying why (here, where CUDA sees no GPU; the fake count
# skipped)
if ! env -u KG_BATCH_GPUS "$kgate" devices >/dev/null 2>&1; then
    env -u KG_BATCH_GPUS "$kgate" batch m.jsonl -o r10.jsonl >out10.txt 2>&1
    expect "no GPU: exit, one line saying why" "5 1 1" \
        "$? $(wc -l <out10.txt) $(grep -c '^kgate: batch: no usable CUDA GPU: ' out10.txt)"
fi
KG_BATCH_GPUS=0 "$kgate" batch m.jsonl -o r11.jsonl >out11.txt 2>&1
expect "no GPU (the fake count 0): exit, one line" "5 1" "$? $(grep -c '^kgate: batch: no CUDA GPU (KG_BATCH_GPUS=0)$' out11.txt)"

# 5a. the warm slot: while a Python job runs, its supervisor starts the next
# job's fork server, handed over to that job's check (this process's child,
# behind a socket); a job that is not Python drops the slot, and nothing is
# left behind (the fork servers carry this test's marker in their environment)
for i in 1 2 3 4; do : >p$i.py; done
{ for i in 1 2 3; do echo "{\"candidate\":\"p$i.py\"}"; done; echo '{"candidate":"c1.so"}'; echo '{"candidate":"p4.py"}'; } >py.jsonl
KGATE_LIB=$(dirname "$kgate")/libkgate.so KG_FAKE_ZYLOG=$t/zylog KG_FAKE_SLEEP=0.5 KG_BATCH_GPUS=1 \
    "$kgate" batch py.jsonl -o rz.jsonl >outz.txt 2>&1
expect "warm slot: exit" 0 "$?"
expect "warm slot: the first job starts its own, the next two are handed theirs, a C job drops it" \
    "p1.py none,p2.py handed child socket python,p3.py handed child socket python,c1.so none,p4.py none" \
    "$(paste -sd, zylog)"
expect "warm slot: no fork server left" 0 \
    "$(grep -l "KG_FAKE_ZYLOG=$t/zylog" /proc/[0-9]*/environ 2>/dev/null | wc -l)"
KGATE_ZYGOTE=0 KGATE_LIB=$(dirname "$kgate")/libkgate.so KG_FAKE_ZYLOG=$t/zylog0 KG_BATCH_GPUS=1 \
    "$kgate" batch py.jsonl -o rz0.jsonl >outz0.txt 2>&1
expect "warm slot: none with KGATE_ZYGOTE=0" "0 5" "$? $(grep -c ' none$' zylog0)"

# 5b. jobs pinned to a GPU ("gpu"): the same kernels on GPU 0 and GPU 1 agree
# within 1% or are flagged; a kernel judged three times on GPU 0, 3% apart
# there, agrees by its median; a pin to a GPU the batch does not have is
# refused
: >c_skew.so
: >c_noisy.so
{ for k in c1 c2 c3 c_skew; do for g in 0 1; do echo "{\"candidate\":\"$k.so\",\"gpu\":$g}"; done; done
  echo '{"candidate":"c4.so","gpu":5}'
  for i in 1 2 3; do echo "{\"id\":\"noisy$i\",\"candidate\":\"c_noisy.so\",\"gpu\":0}"; done
  echo '{"id":"noisy4","candidate":"c_noisy.so","gpu":1}'; } >pin.jsonl
KG_FAKE_LOG=$t/logp "$kgate" batch pin.jsonl -o rp.jsonl >outp.txt 2>&1
expect "pinned: exit (one pin refused)" 3 "$?"
expect "pinned: each job on its GPU" "c1.so 0,c1.so 1,c2.so 0,c2.so 1,c3.so 0,c3.so 1,c_noisy.so 0,c_noisy.so 0,c_noisy.so 0,c_noisy.so 1,c_skew.so 0,c_skew.so 1" \
    "$(cut -d' ' -f1,2 logp | sort | paste -sd, -)"
expect "pinned: the noisy kernel's three times on GPU 0" "0.0001 0.0001015 0.000103" \
    "$(python3 -c "import json; print(' '.join(str(t) for t in sorted(json.loads(l)['check']['results'][0]['summaries']['time/gpu/median']['value'] for l in open('rp.jsonl') if json.loads(l).get('id', '').startswith('noisy') and json.loads(l)['gpu'] == 0)))")"
expect "pinned: the agreement summary" 1 "$(grep -c '5 kernel(s) judged on several GPUs, 4 agree within 1%, 1 flagged' outp.txt)"
expect "pinned: the flagged kernel named" 1 "$(grep -c 'cross-GPU: k|c_skew.so|relu|fp16|4: .*5.0% apart' outp.txt)"
expect "pinned: a GPU the batch lacks" 1 "$(grep -c 'pin.jsonl:9: GPU 5 is not one of' outp.txt)"

# 6. 64 ranks as processes (Slurm's variables), one fake GPU each, then merged
{ for i in $(seq 1 500); do echo "{\"id\":\"job$i\",\"candidate\":\"c$((i % 60 + 1)).so\",\"shape\":\"$i\"}"; done; } >big.jsonl
export KG_BATCH_GPUS=1
for r in $(seq 0 63); do
    SLURM_PROCID=$r SLURM_NTASKS=64 KG_FAKE_LOG=$t/log6 "$kgate" batch big.jsonl -o part.jsonl >/dev/null 2>&1 &
done
wait
expect "64 ranks: their results files" 64 "$(ls part.jsonl.rank-*-of-00064 | wc -l)"
"$kgate" batch --merge -o merged.jsonl part.jsonl.rank-* >out10.txt 2>&1
expect "64 ranks: merged, every job once" "500 500" "$(ids merged.jsonl)"
expect "64 ranks: each job run once" "500 500" "$(echo $(wc -l <log6) $(cut -d' ' -f1,3 log6 | sort -u | wc -l))"
"$kgate" batch --merge -o merged2.jsonl merged.jsonl part.jsonl.rank-00000-of-00064 >out11.txt 2>&1
expect "merge drops duplicate lines" 1 "$(grep -c '500 job(s), 8 duplicate line(s) dropped' out11.txt)"
# 6b. resharding after losing ranks: of the 64 ranks' files only those of
# ranks 0 and 1 are kept (the other nodes lost); the batch is rerun on 3
# ranks with --done naming the two kept files: the jobs they finished are not
# run again, and the merge of the kept files with the new ones has every job
# once
mv log6 log6.before
for r in 0 1 2; do
    SLURM_PROCID=$r SLURM_NTASKS=3 KG_FAKE_LOG=$t/log6b "$kgate" batch big.jsonl -o re.jsonl \
        --done part.jsonl.rank-00000-of-00064 --done part.jsonl.rank-00001-of-00064 >out12.txt 2>&1 &
done
wait
expect "--done: the finished jobs not run again" "484 0" \
    "$(echo $(wc -l <log6b) $(cut -d' ' -f1,3 log6b | sort | uniq -d | wc -l))"
"$kgate" batch --merge -o remerged.jsonl part.jsonl.rank-00000-of-00064 part.jsonl.rank-00001-of-00064 \
    re.jsonl.rank-* >/dev/null 2>&1
expect "--done: merged with the earlier files, every job once" "500 500" "$(ids remerged.jsonl)"
"$kgate" batch big.jsonl -o re2.jsonl --done no-such.jsonl >out13.txt 2>&1
expect "--done: a missing file, exit" 6 "$?"
expect "--done: ... named in one line" 1 "$(grep -c '^kgate: --done no-such.jsonl: ' out13.txt)"
echo '{"schema":"kgate.batch/0","id":"x"}' >old.jsonl
"$kgate" batch big.jsonl -o re2.jsonl --done old.jsonl >out14.txt 2>&1
expect "--done: another schema, exit" 6 "$?"
expect "--done: ... named" 1 "$(grep -c 'old.jsonl: schema kgate.batch/0' out14.txt)"
expect "--done: refused before the results file is made" no "$(test -e re2.jsonl && echo yes || echo no)"
mkdir adir
"$kgate" batch big.jsonl -o re2.jsonl --done adir >out15.txt 2>&1
expect "--done: a directory, exit" 6 "$?"
expect "--done: ... named in one line" 1 "$(grep -c '^kgate: --done adir: not a regular file (a directory)$' out15.txt)"
printf 'id,exit\njob1,0\njob2,1\n' >notes.csv
"$kgate" batch big.jsonl -o re2.jsonl --done notes.csv >out16.txt 2>&1
expect "--done: a file with no results line, exit" 6 "$?"
expect "--done: ... named" 1 "$(grep -c '^kgate: --done notes.csv: no results line (3 line(s)' out16.txt)"
"$kgate" batch big.jsonl -o re2.jsonl --done >out17.txt 2>&1
expect "--done without a value: exit" 3 "$?"
expect "--done without a value: said" 1 "$(grep -c 'option --done needs a value' out17.txt)"
if command -v mpirun >/dev/null 2>&1; then
    mpirun --oversubscribe --allow-run-as-root -n 64 -x KG_BATCH_RUNNER -x KG_BATCH_GPUS -x KG_FAKE_LOG=$t/log7 \
        "$kgate" batch big.jsonl -o mpi.jsonl >/dev/null 2>&1
    "$kgate" batch --merge -o mpim.jsonl mpi.jsonl.rank-* >/dev/null 2>&1
    expect "mpirun -n 64: merged, every job once" "500 500" "$(ids mpim.jsonl)"
else
    echo "note: no mpirun here (Debian's openmpi-bin): the mpirun case is skipped"
fi
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
