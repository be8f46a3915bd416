#!/bin/sh
# The Python route on the GPU (needs python3 with torch and Triton):
#   - callables that are right, slow, wrong, crash, hang, return the wrong
#     kind of thing or work on another stream get the verdicts their names say;
#   - the Triton kernels of libkgate_triton.so, launched by Triton's JIT from
#     Python, get the same verdicts as through the .so (their times are
#     recorded by scripts/gpu.sh python-route, not asserted here);
#   - a problem outside the catalog (kgate.Problem) is judged, a wrong
#     candidate of it refused;
#   - PyTorch and torch.compile timed as library paths of a catalog operator;
#   - KernelBench problems end to end (when .cache/kernelbench or
#     KG_KERNELBENCH has them): reference-as-solution is not rejected, a
#     correct but slow solution is admitted by KernelBench's gate and SLOW,
#     and a problem's solutions judged in one run.
. "$(dirname "$0")/common.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
py=${KGATE_PYTHON:-python3}
if ! "$py" -c 'import torch, triton' 2>/dev/null; then
    echo "SKIP: $py lacks torch or Triton"
    exit 77
fi
export KGATE_PYTHON=$py
# every run under a deadline (KG_STEP_TIMEOUT s): a hang fails its checks, not the whole call
kg() { timeout -k 5 "${KG_STEP_TIMEOUT:-240}" "$kgate" "$@"; }
t=$build/tests/python
mkdir -p "$t"
get() { # get JSON KERNEL FIELD
    python3 -c "import json,sys; r=[x for x in json.load(open('$1'))['results'] if x['kernel']=='$2']; print(r[0].get('$3') if r else 'MISSING')"
}

# 1. behaviours
kg check "$src/tests/python/behaviours.py" --shape large --timeout 25 --json "$t/behaviours.json" \
    >"$t/behaviours.txt" 2>&1
for kv in relu_ok=OK relu_out=OK relu_slow=SLOW relu_wrong=INCORRECT relu_raises=CRASH relu_none=INCORRECT \
          relu_shape=INCORRECT relu_dtype=INCORRECT relu_cpu=INCORRECT relu_hang=TIMEOUT \
          relu_other_stream=IMPOSSIBLE relu_host=SLOW relu_host_hidden=SLOW \
          relu_subclass=INCORRECT relu_mode_left=CRASH relu_profile_left=CRASH relu_in_copy=INCORRECT \
          relu_strided=INCORRECT relu_copy_kernel=INCORRECT; do
    expect "${kv%%=*}" "${kv#*=}" "$(get "$t/behaviours.json" "${kv%%=*}" verdict)"
done
# relu_host: judged on its host time beyond its GPU time (judge/verdict.h),
# 2 ms less the ~0.25 ms of GPU work or so
expect "relu_host is flagged host-work, judged on 1.5 to 2.5 ms" "True 1" \
    "$(python3 -c "import json; r=[x for x in json.load(open('$t/behaviours.json'))['results'] if x['kernel']=='relu_host'][0]; print('host-work' in r['flags'], int(1.5e-3 < r['summaries']['time/judged']['value'] < 2.5e-3))")"
# relu_host_hidden rebinds the worker host's clock so that its own host time
# reads 0: the worker takes at most 25 us off the call's host time for the
# host's glue (src/gpu/provider.h), so 2 ms are still charged
expect "relu_host_hidden is flagged host-work, judged on 1.5 to 2.5 ms" "True 1" \
    "$(python3 -c "import json; r=[x for x in json.load(open('$t/behaviours.json'))['results'] if x['kernel']=='relu_host_hidden'][0]; print('host-work' in r['flags'], int(1.5e-3 < r['summaries']['time/judged']['value'] < 2.5e-3))")"
# relu_ok is torch.relu: PyTorch's own kernel, the reference's (the library
# fallback, docs/security.md), is flagged library-kernels and named (kg_trace_vendor)
expect "relu_ok (torch.relu) is flagged library-kernels, named PyTorch's" "True True" \
    "$(python3 -c "import json; r=[x for x in json.load(open('$t/behaviours.json'))['results'] if x['kernel']=='relu_ok'][0]; print('library-kernels' in r['flags'], \"named like PyTorch's\" in r.get('detail', ''))")"
# a Python candidate's launch path is allowed 100 us of host time (judge/verdict.h)
expect "a Python candidate's gate allows 100 us of host time" "0.0001" \
    "$(python3 -c "import json; print(json.load(open('$t/behaviours.json'))['gate']['host_allowance'])")"
for kv in "relu_none=NoneType" "relu_shape=shape" "relu_dtype=torch.float32" "relu_cpu=cpu" \
          "relu_raises=the kernel gave up" "relu_subclass=a subclass of torch.Tensor" \
          "relu_mode_left=a torch function mode active" "relu_profile_left=profile hook" \
          "relu_strided=is a view" "relu_copy_kernel=registered over aten::copy_"; do
    k=${kv%%=*} want=${kv#*=}
    d="$(get "$t/behaviours.json" "$k" detail) $(get "$t/behaviours.json" "$k" reason)"
    case $d in *"$want"*) got=yes ;; *) got="no: $d" ;; esac
    expect "$k says '$want'" yes "$got"
done

# 2. Triton JIT (Python) against Triton AOT (.so): the same verdicts
for shape in small large; do
    kg check "$src/tests/python/triton_jit.py" --shape $shape --json "$t/jit-$shape.json" \
        >"$t/jit-$shape.txt" 2>&1
    kg check "$build/triton/libkgate_triton.so" --shape $shape --json "$t/aot-$shape.json" \
        >"$t/aot-$shape.txt" 2>&1
    for pair in layer_norm_bf16 rms_norm_fp16 matmul_fp16 argmax_fp16; do
        expect "jit_$pair at $shape, as triton_$pair" "$(get "$t/aot-$shape.json" "triton_$pair" verdict)" \
            "$(get "$t/jit-$shape.json" "jit_$pair" verdict)"
    done
done
# the worker host's glue runs none of PyTorch's kernels in a Triton kernel's samples
expect "no Triton JIT or AOT result is flagged library-kernels" "False" \
    "$(python3 -c "import json; print(any('library-kernels' in r['flags'] for f in ('jit-small', 'jit-large', 'aot-small', 'aot-large') for r in json.load(open('$t/' + f + '.json'))['results']))")"
# the same kernels, two launch paths, two allowances (judge/verdict.h); the worker
# host's glue is recorded for the Python ones and believed to 25 us a call
expect "the .so's gate allows a C launch's 50 us" "5e-05" \
    "$(python3 -c "import json; print(json.load(open('$t/aot-small.json'))['gate']['host_allowance'])")"
expect "each JIT result records its allowance and the host's glue" "True" \
    "$(python3 -c "import json; rs=json.load(open('$t/jit-small.json'))['results']; print(all(r['summaries']['time/host/allowance']['value'] == 1e-4 and r['summaries']['time/host/glue']['value'] >= 0 for r in rs))")"
# what the glue bound (25 us a call) leaves an honest candidate: its mean glue, logged
python3 -c "import json; print('host glue (mean us a call, fraction over 25 us):', ' '.join('%s %.1f %.2f' % (r['kernel'], r['summaries']['time/host/glue']['value'] * 1e6, r['summaries']['time/host/glue_over']['value']) for r in json.load(open('$t/jit-small.json'))['results']))"
# where a Python job's wall goes before its kernels' workers: the fork
# server's imports (list/warm) and the listing (list/wall), both recorded
lw=$(python3 -c "import json; s=json.load(open('$t/jit-small.json'))['results'][0]['summaries']; print(' '.join('%.2f' % s[k]['value'] if k in s else 'none' for k in ('list/warm', 'list/wall', 'job/wall')))")
echo "jit small: list/warm list/wall job/wall = $lw"
expect "a Python file's listing waited for the fork server and took time" yes \
    "$(echo "$lw" | awk '$1 != "none" && $1 > 0 && $2 != "none" && $2 > 0 { print "yes" }')"

# 3. a problem outside the catalog
kg check "$src/tests/python/problem_cand.py" --json "$t/problem.json" >"$t/problem.txt" 2>&1
v=$(get "$t/problem.json" addmm_gelu verdict)
case $v in OK | SLOW) v=judged ;; esac
expect "addmm_gelu (linear_gelu) judged" judged "$v"
expect "approx_gelu (linear_gelu)" INCORRECT "$(get "$t/problem.json" approx_gelu verdict)"
expect "linear_gelu's library path" torch "$(python3 -c "import json; r=json.load(open('$t/problem.json'))['results'][0]; print(r.get('baseline'))")"

# 3b. the same problem from Python: kgate.check(fn, reference=, inputs=)
v=$(cd "$src/tests/python" && KGATE_BIN="$kgate" PYTHONPATH="$src/python${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 "${KG_STEP_TIMEOUT:-240}" "$py" -c "
import kgate, problem_cand as P
for fn in (P.fused, P.approx):
    r = kgate.check(fn, reference=P.ref_fn, inputs=P.make_inputs, problem_name='linear_gelu_fn', family='gemm')
    print(r.results[0]['verdict'])" 2>"$t/problem-fn.err" | tr '\n' ' ')
case $v in "OK INCORRECT " | "SLOW INCORRECT ") v=judged ;; esac
[ "$v" = judged ] || tail -3 "$t/problem-fn.err"
expect "kgate.check(fused / approx, reference=, inputs=)" judged "$v"

# 4. PyTorch as a library path of catalog operators (--torch-compile: eager and compiled)
kg check "$build/libkgate_bundled.so" --op softmax --dtype fp16 --shape medium --torch-compile \
    --json "$t/torch-lib.json" >"$t/torch-lib.txt" 2>&1
for p in torch torch.compile; do
    expect "softmax's library path $p" ok "$(python3 -c "import json; r=json.load(open('$t/torch-lib.json'))['results'][0]; print(next((l['status'] for l in r['libraries'] if l['name']=='$p'), 'MISSING'))")"
done

# 5. KernelBench end to end
kb=${KG_KERNELBENCH:-$src/.cache/kernelbench}
if [ -d "$kb/KernelBench/level1" ]; then
    for p in 1_Square_matrix_multiplication_ 40_LayerNorm 9_Tall_skinny_matrix_multiplication_; do
        ref=$t/ref_$p.py
        { cat "$kb/KernelBench/level1/$p.py"; echo; echo "ModelNew = Model"; } >"$ref"
        kg kernelbench "$kb/KernelBench/level1/$p.py" "$ref" --json "$t/kb-ref-$p.json" >"$t/kb-ref-$p.txt" 2>&1
        v=$(get "$t/kb-ref-$p.json" ModelNew verdict)
        case $v in OK | SLOW) v=judged ;; esac
        expect "KernelBench $p, reference as solution, judged" judged "$v"
        expect "KernelBench $p, reference as solution, KernelBench-correct" True \
            "$(python3 -c "import json; print(json.load(open('$t/kb-ref-$p.json'))['results'][0]['kernelbench']['correct'])")"
    done
    p=9_Tall_skinny_matrix_multiplication_
    kg kernelbench "$kb/KernelBench/level1/$p.py" "$src/tests/kernelbench/slow/$p.py" \
        --json "$t/kb-slow-$p.json" >"$t/kb-slow-$p.txt" 2>&1
    expect "KernelBench $p, slow solution" SLOW "$(get "$t/kb-slow-$p.json" ModelNew verdict)"
    expect "KernelBench $p, slow solution, KernelBench-correct" True \
        "$(python3 -c "import json; print(json.load(open('$t/kb-slow-$p.json'))['results'][0]['kernelbench']['correct'])")"
    # a problem's solutions in one run (kernelbench.candidate_group): each judged, the one
    # without ModelNew an error naming it, the others unaffected
    g=$t/kb-group
    rm -rf "$g"
    mkdir -p "$g/p" "$g/s"
    cp "$kb/KernelBench/level1/40_LayerNorm.py" "$g/p/"
    cp "$t/ref_40_LayerNorm.py" "$g/s/40_ref.py"
    cp "$src/tests/kernelbench/slow/40_LayerNorm.py" "$g/s/40_other.py"
    echo "x = 1" >"$g/s/40_bad.py"
    kg kernelbench "$g/p" "$g/s" --json "$t/kb-group.json" >"$t/kb-group.txt" 2>&1
    expect "KernelBench group: exit" 4 "$?"
    expect "KernelBench group: reference" OK "$(get "$t/kb-group.json" ModelNew.40_ref verdict)"
    expect "KernelBench group: the slow solution (one sample a call)" SLOW \
        "$(get "$t/kb-group.json" ModelNew.40_other verdict)"
    expect "KernelBench group: the one without ModelNew, an error naming it" 40_bad.py \
        "$(python3 -c "import json, os; print(' '.join(os.path.basename(e['solution']) for e in json.load(open('$t/kb-group.json')).get('errors', []) if 'ModelNew' in e['message']))")"
    # bad input: a problem file that does not import, a solution without ModelNew
    echo "import nosuchmodule" >"$t/bad_problem.py"
    kg kernelbench "$t/bad_problem.py" "$ref" >"$t/kb-bad.txt" 2>&1
    expect "a problem that does not import: exit" 4 "$?"
    echo "x = 1" >"$t/no_modelnew.py"
    kg kernelbench "$kb/KernelBench/level1/$p.py" "$t/no_modelnew.py" >"$t/kb-bad2.txt" 2>&1
    expect "a solution without ModelNew: exit" 4 "$?"
else
    echo "note: no KernelBench problems at $kb (scripts/kernelbench.sh fetch): that part skipped"
fi
finish
