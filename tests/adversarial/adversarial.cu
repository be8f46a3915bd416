// kgate's fault-injection set: candidate kernels written to fool a kernel
// evaluator, each with the verdict kgate must give (expected.txt; run.sh
// checks them at the small, medium and large presets).
//
// Each kernel is an honest operator (adv.cuh: one block per row, fp32
// accumulation) plus ONE cheat, so the cheat is the only reason it may fail.
// KG_ADV_HONEST=1 in the environment turns every cheat off: the control run,
// where every kernel must be OK or SLOW. KG_ADV_STRICT=1 makes ref_tamper
// fail (a CRASH naming it) where its scan finds no reference, to tell a scan
// that missed from a kgate that defends.
//
// Run on an H200 against main's kgate (ea4cd27) at all three presets: every
// case below got its expected verdict except those marked "main:" and
// host_compute (no host-work flag), forge_events (SLOW: the forged summary
// was accepted), setsid_child (TIMEOUT: the sleeper holds the event pipe,
// and is left behind); the control run passed every kernel (OK or SLOW).
//
// Exploit classes (docs/security.md's threats):
//  1 escaped stream, 3 timer tampering, 4 forged results, 5 stale output,
//  6 input mutation / caching, 7 tampering with the expected output,
//  9 tolerance and precision, 10 calling the library, 11 hard-coded
//  shapes / skipped work, 12 evaluator detection, 13 persisting L2 / replay
//  caches, 15 caches keyed on the inputs' content, 16 one forged
//  verdict-changing line, 17 learning the phase from the evaluator's own
//  behaviour; "fault" is a plain fault the evaluator must contain.
//
// case               op/dtype          class cheat                                  expected          kgate defense that must catch it
// ------------------ ----------------- ----- -------------------------------------- ----------------- -----------------------------------------
// side_stream        layer_norm bf16   1     all work on a private non-blocking     IMPOSSIBLE or     escaped-stream: a subject kernel on a stream
//                                            stream, never synchronized             INCORRECT         other than the given one (checks and timing);
//                                                                                                     INCORRECT where a timed call's re-check reads
//                                                                                                     the output before the escaped work ends
// side_stream_join   layer_norm bf16   1     same, joined both ways with events     IMPOSSIBLE        escaped-stream (CUPTI sees the foreign kernel)
// legacy_stream      layer_norm bf16   1     launches on the legacy stream 0        IMPOSSIBLE|INC.   escaped-stream (as side_stream)
// per_thread_stream  layer_norm bf16   1     launches on cudaStreamPerThread        IMPOSSIBLE|INC.   escaped-stream (as side_stream)
// graph_elsewhere    layer_norm bf16   1,13  graph captured once per buffers,       IMPOSSIBLE|INC.   escaped-stream (as side_stream)
//                                            launched on its own stream
// host_thread        layer_norm bf16   1,2   a persistent host thread launches on   IMPOSSIBLE or     escaped-stream, or the output is not ready
//                                            its own stream; launch returns at once INCORRECT         when compared
// deferred_thread    layer_norm bf16   1,12  when the stream is held (timed), queues IMPOSSIBLE or    deferred work: the subject's records on the
//                                            a marker and returns; a host thread    INCORRECT, and    timing stream between a sample's probe and
//                                            queues the work on the given stream    time/deferred > 0 the next blocker (kg_trace_deferred), or a
//                                            once the marker ran (after the probe)  at some preset    re-checked output not ready
// named_flush        layer_norm bf16   3,12  an empty kernel, then the work in a    IMPOSSIBLE        kgate's kernels counted by name against what
//                                            kernel named read_flush (kgate's L2                      it queued: one flush a sample (a split that
//                                            flush) on the given stream                               took it for kgate's would time the empty one)
// oob_after          softmax fp16      fault correct + y[ROWS*COLS] = 0           INCORRECT         guard bytes after every tensor
// oob_before         softmax fp16      fault correct + y[-1] = 0                  INCORRECT         guard bytes before every tensor
// mutate             softmax fp16      6     correct, then flips the sign of x[0]   INCORRECT         input checksums around every call
// pointer_cache      softmax fp16      6     computes once per output pointer,      INCORRECT         outputs poisoned before every call
//                                            then launches nothing
// stale_output       softmax fp16      5     copies its first output into y on      INCORRECT         fresh inputs every trial, re-check after
//                                            every later call of that size                            timing
// ref_tamper         softmax fp16      7     finds the worker's fp64 reference      INCORRECT         the reference must not be writable by, or
//                                            (cuMemGetAddressRange walk), writes                      must be checked after, the candidate
//                                            1/COLS into y and into the reference                     (main: fooled, SLOW at every preset)
// ref_copy           softmax fp16      7     finds the worker's fp64 reference the  INCORRECT         the reference is computed only after the
//                                            same way and copies it into y                            call and overwritten (NaN) once compared
// bf16_mean          layer_norm bf16   9     mean and variance accumulated and      INCORRECT         a trial with a common offset: passes with
//                                            held in bf16                                             zero-mean-ish data (worst error 0.4 of the
//                                                                                                     tolerance), fails from an offset of 4
// zeros              softmax fp16      9     writes 0                               INCORRECT         rel-L2 bound beside atol
// constant           softmax fp16      9     writes 1/COLS (uniform softmax)        INCORRECT         rel-L2 bound beside atol
// ignores_eps        layer_norm bf16   9     declares eps, uses 1e-5                INCORRECT         the trial with eps = 0.5
// fp16_compute       softmax fp32      9     rounds fp32 inputs to fp16             INCORRECT         fp32 tolerance (2e-5)
// tf32_compute       matmul fp32       9     rounds operands to TF32 (tensor        INCORRECT         fp32 tolerance (1e-5, atol scaled by
//                                            cores' fp32)                                             the sum's RMS)
// fp16_mean          mean_reduction    9     converts to fp16, sums in fp16         INCORRECT         fp32 tolerance (2e-5); only built when
//                    fp32                                                                             src/ops/mean_reduction.c exists
// hardcoded_shape    softmax fp16      11    rows of 32768 (the large preset)       INCORRECT         extra shapes (unaligned, tiny, unnamed)
//                                            whatever COLS is
// no_tail            softmax fp16      11    8-element chunks, no tail loop         INCORRECT         extra unaligned shapes
// warmup_count       softmax fp16      12    right for 3 calls, then launches       INCORRECT         poisoned outputs, checks after warm-up,
//                                            nothing                                                  re-checks of timed calls
// held_stream        softmax fp16      12    skips the work when the given stream   INCORRECT         re-checks of timed calls
//                                            stays busy 5 ms (kgate's blocker)
// persisting_l2      softmax fp16      13    persisting-L2 carve-out + access       OK or SLOW,       carve-out and window undone before every
//                                            window over x on the given stream      flag persisting-l2 sample (setting the limit synchronizes: kgate
//                                                                                                     then times without its blocker)
// content_cache      matmul fp16       6,13  replays C when a sampled hash of A, B  SLOW              every timed call gets inputs of its own: the
//                                            matches the last call's                                  cache never hits (before: SLOW at small,
//                                                                                                     IMPOSSIBLE above, a copy timed for 2MNK FLOPs)
// host_compute       softmax fp16      1     x to the host, CPU threads, y back     SLOW, flag        judged on its host time (judge/verdict.h)
//                                            (synchronous, on the given stream)     host-work
// illegal_address    softmax fp16      fault writes to the null page              CRASH             worker isolation
// spin_forever       layer_norm fp16   fault never finishes (checked at small)    TIMEOUT           per-job timeout
// forge_events       softmax fp16      4     writes a time/gpu/median of 1 ns to    CRASH (worker     a summary set twice is a protocol violation
//                                            the worker's event fd, then computes   protocol violation)
// setsid_child       softmax fp16      fault forks a child that setsid()s, keeps  OK or SLOW, and   the worker's descendants are killed even
//                                            the event pipe open, sleeps 600 s      no kg_adv_sleeper out of its process group
//                                                                                   left afterwards
// timer_hook         softmax fp16      3     slow honest kernel (a warp per row)    SLOW (or CRASH /  GOT hardening, or a cross-check of the
//                                            that patches kgate's GOT entries for   IMPOSSIBLE when   reported times against wall time
//                                            cudaEventElapsedTime and               the tampering is
//                                            cuptiActivityGetNextRecord to report   caught)           (main: fooled, OK at every preset)
//                                            rho ~0.7
// cupti_off          softmax fp16      3,12  honest, but turns off CUPTI's kernel   IMPOSSIBLE        a trace without kgate's own records (its
//                                            records (cuptiActivityDisable)                           blockers, probes, flushes) is time/trace_lost
// calls_cublas       matmul fp16       10    computes with cuBLAS's cublasGemmEx    OK or SLOW, with  kernels named like a library's among the
//                                                                                   library-kernels   subject's (kg_trace_vendor: nvjet_, xmma_...)
// content_memo_full  softmax fp16      15    slow honest softmax + a replay cache   SLOW              every timed call gets inputs no earlier call
//                                            keyed on a hash of all of x (paced by                    saw: the cache never hits (main: OK, timed
//                                            the hash and copy: rho ~0.6)                             calls on one input set)
// content_memo_sampled softmax fp16    15    the same keyed on 64 sampled elements  SLOW              the same
// late_skip          softmax fp16      17    honest for 64 calls, then half the     INCORRECT         re-checks spread over the whole run (main:
//                                            rows when called within 2 ms of its                      all of them among the first ~50 samples)
//                                            last return
// phase_supports     softmax fp16      17    half the rows once supports() is asked OK or SLOW        supports() asked about every shape before
//                                            about another shape after a call                         the first call: it never learns the phase
//                                                                                                     (main: asked between checks and timing)
// forged_unsupported softmax fp16      4,16  writes a check/unsupported summary on  CRASH (protocol   check/unsupported is said only in the
//                                            fd 3, then computes slowly             violation)        nonce-bearing done event (main: SKIPPED,
//                                                                                                     exit 0)
// zero_time          softmax fp16      3,16  timer_hook's hooks reporting 0         IMPOSSIBLE        a kernel that ran has a GPU time above 0
//                                                                                                     (main: SKIPPED "no timing", exit 0)
#include "adv.cuh"

#define SOFTMAX(name, fn, what) {name, "softmax", "fp16", NULL, 1, 1, fn, what, NULL, NULL}
#define LAYER_NORM(name, fn, what) {name, "layer_norm", "bf16", NULL, 3, 1, fn, what, "eps", NULL}

static const kgate_kernel kernels[] = {
    // class 1: escaped streams
    LAYER_NORM("side_stream", adv_side_stream, "CHEAT: all work on a private stream, never synchronized"),
    LAYER_NORM("side_stream_join", adv_side_stream_join, "CHEAT: work on a private stream joined by events"),
    LAYER_NORM("legacy_stream", adv_legacy_stream, "CHEAT: launches on the legacy default stream"),
    LAYER_NORM("per_thread_stream", adv_per_thread_stream, "CHEAT: launches on cudaStreamPerThread"),
    LAYER_NORM("graph_elsewhere", adv_graph_elsewhere, "CHEAT: a CUDA graph launched on its own stream"),
    LAYER_NORM("host_thread", adv_host_thread, "CHEAT: a host thread launches on its own stream"),
    LAYER_NORM("deferred_thread", adv_deferred_thread,
               "CHEAT: a host thread queues the work on the given stream after the call returned"),
    LAYER_NORM("named_flush", adv_named_flush, "CHEAT: the work in a kernel named like kgate's L2 flush"),
    // memory
    SOFTMAX("oob_after", adv_oob_after, "FAULT: writes one element past the end of y"),
    SOFTMAX("oob_before", adv_oob_before, "FAULT: writes the element before y[0]"),
    SOFTMAX("mutate", adv_mutate, "CHEAT: flips the sign of x[0] after computing"),
    SOFTMAX("pointer_cache", adv_pointer_cache, "CHEAT: computes once per output pointer"),
    SOFTMAX("stale_output", adv_stale_output, "CHEAT: replays its first output"),
    SOFTMAX("ref_tamper", adv_ref_tamper, "CHEAT: overwrites the worker's fp64 reference"),
    SOFTMAX("ref_copy", adv_ref_copy, "CHEAT: copies the worker's fp64 reference into y"),
    // numerics and shapes
    LAYER_NORM("bf16_mean", adv_bf16_mean, "CHEAT: row statistics accumulated in bf16"),
    SOFTMAX("zeros", adv_zeros, "CHEAT: writes zeros"),
    SOFTMAX("constant", adv_constant, "CHEAT: writes 1/COLS everywhere"),
    LAYER_NORM("ignores_eps", adv_ignores_eps, "CHEAT: declares eps, uses 1e-5"),
    {"fp16_compute", "softmax", "fp32", NULL, 1, 1, adv_fp16_compute, "CHEAT: fp32 data rounded to fp16", NULL,
     NULL},
    {"tf32_compute", "matmul", "fp32", NULL, 2, 1, adv_tf32_compute,
     "CHEAT: fp32 operands rounded to TF32, as TF32 tensor cores do", NULL, NULL},
#ifdef KG_ADV_MEAN_REDUCTION
    {"fp16_mean", "mean_reduction", "fp32", NULL, 1, 1, adv_fp16_mean, "CHEAT: fp32 row mean summed in fp16",
     NULL, NULL},
#endif
    SOFTMAX("hardcoded_shape", adv_hardcoded_shape, "CHEAT: assumes COLS = 32768"),
    SOFTMAX("no_tail", adv_no_tail, "CHEAT: 8-element chunks without a tail loop"),
    // evaluator detection, L2, replay
    SOFTMAX("warmup_count", adv_warmup_count, "CHEAT: right for 3 calls, then nothing"),
    SOFTMAX("held_stream", adv_held_stream, "CHEAT: skips the work while the stream is held"),
    SOFTMAX("persisting_l2", adv_persisting_l2, "CHEAT: persisting-L2 window over x"),
    {"content_cache", "matmul", "fp16", NULL, 2, 1, adv_content_cache,
     "CHEAT: replays C when a sampled hash of A and B matches", NULL, NULL},
    // the process
    SOFTMAX("host_compute", adv_host_compute, "CHEAT: computes on the host"),
    SOFTMAX("illegal_address", adv_illegal_address, "FAULT: writes to the null page"),
    {"spin_forever", "layer_norm", "fp16", NULL, 3, 1, adv_spin_forever, "FAULT: never finishes", "eps", NULL},
    SOFTMAX("forge_events", adv_forge_events, "CHEAT: forges a time/gpu/median event on fd 3"),
    SOFTMAX("setsid_child", adv_setsid_child, "FAULT: leaves a setsid() child behind"),
    SOFTMAX("timer_hook", adv_timer_hook, "CHEAT: patches kgate's GOT to shrink its own times"),
    SOFTMAX("cupti_off", adv_cupti_off, "CHEAT: turns off CUPTI's kernel records in the worker"),
    // class 10: the library itself
    {"calls_cublas", "matmul", "fp16", NULL, 2, 1, adv_calls_cublas, "CHEAT: calls cuBLAS (cublasGemmEx)", NULL,
     NULL},
    // classes 15-17: content caches, forged verdict lines, learning the phase (memo.cu, process.cu)
    SOFTMAX("content_memo_full", adv_content_memo_full, "CHEAT: replays y when a hash of all of x matches"),
    SOFTMAX("content_memo_sampled", adv_content_memo_sampled, "CHEAT: replays y when 64 sampled x match"),
    SOFTMAX("late_skip", adv_late_skip, "CHEAT: half the rows once past 64 calls in quick succession"),
    {"phase_supports", "softmax", "fp16", NULL, 1, 1, adv_phase_supports,
     "CHEAT: half the rows once supports() is asked about another shape after a call", NULL,
     adv_phase_supports_shape},
    SOFTMAX("forged_unsupported", adv_forged_unsupported, "CHEAT: writes a check/unsupported summary on fd 3"),
    SOFTMAX("zero_time", adv_zero_time, "CHEAT: patches kgate's GOT so that its times read 0"),
};

static const kgate_plugin plugin = KGATE_PLUGIN(kernels);
extern "C" const kgate_plugin *kgate_plugin_v2(void) { return &plugin; }
