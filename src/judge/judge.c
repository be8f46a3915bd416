/* Judging: a kernel's evidence (its summaries, the library's times, its
 * flags) to its verdict, reason and flags, in one place. Live results
 * (kg_judge, kg_judge_kernel), recorded ones (kg_rejudge), the cliff between
 * a kernel's shapes, a kernel this GPU cannot run (kg_judge_not_here); the
 * gate's own rules (kg_decide, kg_host_charge) are in verdict.c. Plain C;
 * no GPU. */
#include "judge.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------ shared evidence */

/* The library-kernels flag: the library's kernels doing part of the
 * kernel's work. Computing ones (a reduction, a multiply, a GEMM) from
 * vendor_compute of its kernel time on; fills, copies and casts beside its
 * own kernel (torch.zeros_like's output, a .contiguous()) only when, with
 * the rest, they are vendor_all of it (a transpose by .contiguous()). A
 * result of an older worker by its share of all (vendor_share), or without
 * one by their count. */
static unsigned library_kernels(const kg_result *r, const kg_gate *g)
{
    double vendor = 0, share = 0, computing = 0;
    int flag;
    if (kg_result_get(r, "time/vendor_compute_share", &computing))
        flag = computing >= g->vendor_compute || (kg_result_get(r, "time/vendor_share", &share) && share >= g->vendor_all);
    else if (kg_result_get(r, "time/vendor_share", &share))
        flag = share >= g->vendor_share;
    else
        flag = kg_result_get(r, "time/vendor", &vendor) && vendor > 0;
    return flag ? KG_FLAG(LIBRARY_KERNELS) : 0;
}

/* ------------------------------------------------------------ live results */

#define KG_SPAN_SLACK_S 15e-6

/* What kg_judge learns of the library measurement: the path E_lib uses and
 * the best known time (a library path or the bundled fast variant). */
typedef struct judged_lib {
    const kg_libpath *chosen;
    double t_best, best_lo, best_hi;
} judged_lib;

/* The library paths into r (their times, the chosen one, the best, its own
 * rho and the flags they raise). */
static void judge_library(kg_result *r, const kg_op *op, kg_types types, const kg_work *w, const kg_roofs *roofs,
                          const kg_libref *lib, const kg_gate *g, judged_lib *jl)
{
    memset(jl, 0, sizeof *jl);
    r->n_libs = lib->n;
    memcpy(r->libs, lib->paths, sizeof lib->paths);
    for (int i = 0; i < lib->n; i++) {
        const kg_libpath *p = &lib->paths[i];
        if (p->status == KG_LIB_WRONG)
            r->flags |= KG_FLAG(BASELINE_WRONG);
        if (p->status == KG_LIB_OK && p->t > 0 && (!jl->chosen || p->t < jl->chosen->t))
            jl->chosen = p;
    }
    if (lib->job_wall_s > 0) {
        kg_result_set(r, "lib/job/wall", lib->job_wall_s);
        kg_result_set(r, "lib/job/startup", lib->job_startup_s);
    }
    const kg_libpath *chosen = jl->chosen;
    if (chosen) {
        kg_result_set(r, "lib/time/median", chosen->t);
        snprintf(r->baseline, sizeof r->baseline, "%s", chosen->name);
        snprintf(r->baseline_note, sizeof r->baseline_note, "%s", chosen->note);
        jl->t_best = chosen->t;
        jl->best_lo = chosen->lo > 0 ? chosen->lo : chosen->t;
        jl->best_hi = chosen->hi > 0 ? chosen->hi : chosen->t;
        snprintf(r->best, sizeof r->best, "%s", chosen->name);
    } else {
        snprintf(r->baseline_note, sizeof r->baseline_note, "%s",
                 op->no_baseline_why && lib->n == 0 ? op->no_baseline_why
                 : lib->n ? "no vendor path ran or passed the check here (see libraries)"
                          : "no vendor library path");
    }
    if (lib->have_best && (!(jl->t_best > 0) || lib->best_t < jl->t_best)) {
        jl->t_best = lib->best_t;
        jl->best_lo = lib->best_lo > 0 ? lib->best_lo : lib->best_t;
        jl->best_hi = lib->best_hi > 0 ? lib->best_hi : lib->best_t;
        snprintf(r->best, sizeof r->best, "%s", lib->best_name);
    }
    if (jl->t_best > 0)
        kg_result_set(r, "best/time/median", jl->t_best);
    kg_roof_eval le;
    if (chosen && kg_roofline(w, op->unit, types.data, roofs, chosen->t, &le) == 0) {
        kg_result_set(r, "lib/roof/fraction", le.rho);
        if (le.rho < g->rho_fair)
            r->flags |= KG_FLAG(BASELINE_WEAK);
    }
}

/* A SKIPPED result that is not to be judged by the gate: a shape the kernel
 * declared unsupported, --verify-only, or a time it cannot have (IMPOSSIBLE).
 * 1 when it is settled so. */
static int judge_unjudged(kg_result *r)
{
    double unsupported = 0, t = 0;
    if (kg_result_get(r, "check/unsupported", &unsupported) && unsupported > 0) {
        snprintf(r->reason, sizeof r->reason, "the kernel declares it does not support this shape");
        return 1;
    }
    if (r->flags & KG_FLAG(VERIFIED)) {
        snprintf(r->reason, sizeof r->reason, "correct at this shape; not timed (--verify-only)");
        return 1;
    }
    /* a kernel that ran to the end was timed: no time, or a time of 0, is
     * one the worker cannot have measured (a hooked timer, a lost trace),
     * never a reason to leave the kernel unjudged */
    if (!(kg_result_get(r, "time/gpu/median", &t) && t > 0)) {
        r->verdict = KG_V_IMPOSSIBLE;
        snprintf(r->reason, sizeof r->reason, "the kernel ran, but its GPU time is %s: the timing was tampered "
                 "with or lost", kg_result_get(r, "time/gpu/median", &t) ? "0" : "missing");
        return 1;
    }
    return 0;
}

/* The flags the kernel's own summaries raise before the gate. */
static void judge_flags(kg_result *r, const kg_gate *g)
{
    double reset = 0, blocking = 0;
    if (kg_result_get(r, "time/persist_reset", &reset) && reset > 0)
        r->flags |= KG_FLAG(PERSIST_L2);
    r->flags |= library_kernels(r, g);
    /* a launch call that holds the host until the work is done: the work
     * (or part of it) ran on the host, or the call synchronizes */
    if (kg_result_get(r, "time/blocking", &blocking) && blocking > 0)
        r->flags |= KG_FLAG(HOST_WORK);
}

/* The evidence for the gate from the kernel's time (host work charged), the
 * roofline and the library's times; the rates and fractions into r. */
static void judge_evidence(kg_result *r, const kg_op *op, kg_types types, const kg_work *w, const kg_roofs *roofs,
                           const judged_lib *jl, const kg_gate *g, kg_evidence *ev)
{
    double t = 0, lo, hi, host = 0;
    memset(ev, 0, sizeof *ev);
    ev->correct = 1;
    kg_result_get(r, "time/gpu/median", &t);
    if (!kg_result_get(r, "time/gpu/ci_lo", &lo) || lo <= 0)
        lo = t;
    if (!kg_result_get(r, "time/gpu/ci_hi", &hi) || hi <= 0)
        hi = t;
    /* work done on the host inside the launch call is part of the cost: the
     * kernel is judged on its host time beyond the launch path's allowance
     * when that is longer than its GPU time */
    int have_host = kg_result_get(r, "time/host/median", &host);
    double charged = have_host ? kg_host_charge(t, host, g->host_allowance) : t;
    if (charged > t) {
        r->flags |= KG_FLAG(HOST_WORK);
        lo = hi = t = charged;
    }
    kg_result_set(r, "time/judged", t);
    if (have_host)
        kg_result_set(r, "time/host/allowance", g->host_allowance);
    kg_result_set(r, "rate/bandwidth", w->bytes / t);
    kg_result_set(r, "rate/flops", w->flops / t);
    kg_roof_eval re;
    if (kg_roofline(w, op->unit, types.data, roofs, t, &re) == 0) {
        ev->have_rho = 1;
        ev->rho = re.rho;
        ev->rho_lo = re.rho * t / hi;
        ev->rho_hi = re.rho * t / lo;
        kg_result_set(r, "roof/fraction", re.rho);
        kg_result_set(r, "roof/peak", re.peak);
        kg_result_set(r, "roof/intensity", re.intensity);
        kg_result_set(r, "roof/ridge", re.ridge);
        kg_result_set(r, "roof/compute_bound", re.compute_bound);
    }
    const kg_libpath *chosen = jl->chosen;
    if (chosen && chosen->t > 0) {
        double llo = chosen->lo > 0 ? chosen->lo : chosen->t, lhi = chosen->hi > 0 ? chosen->hi : chosen->t;
        ev->have_e = 1;
        ev->e = chosen->t / t;
        ev->e_lo = llo / hi;
        ev->e_hi = lhi / lo;
        kg_result_set(r, "lib/efficiency", ev->e);
    }
    if (jl->t_best > 0) {
        ev->have_best = 1;
        ev->best = jl->t_best / t;
        ev->best_lo = jl->best_lo / hi;
        ev->best_hi = jl->best_hi / lo;
        kg_result_set(r, "best/efficiency", ev->best);
    }
}

/* kgate's own device clock (blocker release to probe start) bounds the
 * subject's time from above, plus a constant of two event records and a
 * launch (6-7 us on the H200: layer_norm 3.30 us in a 9.25 us span, 33.3 in
 * 40.0); a reported time under half the span with more than
 * KG_SPAN_SLACK_S unexplained was forged (a hooked timer: 5.46 us reported
 * in a 35.7 us span), whatever the rest of the evidence says. */
static void judge_timer_mismatch(kg_result *r)
{
    double t = 0, span = 0;
    if (kg_result_get(r, "time/gpu/median", &t) && kg_result_get(r, "time/span/median", &span) &&
        span - t > KG_SPAN_SLACK_S && t < 0.5 * span) {
        r->flags |= KG_FLAG(TIMER_MISMATCH);
        r->verdict = KG_V_IMPOSSIBLE;
        snprintf(r->reason, sizeof r->reason,
                 "reported %.3g s but kgate's own device clock saw %.3g s: the timing was tampered with", t, span);
    }
}

/* Work that escaped the timed calls or the given stream: IMPOSSIBLE, with
 * what escaped. */
static void judge_escaped(kg_result *r)
{
    double deferred = 0, foreign = 0, lost = 0;
    r->verdict = KG_V_IMPOSSIBLE;
    kg_result_get(r, "time/foreign", &foreign);
    if (kg_result_get(r, "time/deferred", &deferred) && deferred > 0)
        snprintf(r->reason, sizeof r->reason,
                 "work escaped the timed calls: %.0f kernel(s) or copies on the timing stream that no sample "
                 "timed (queued after a call returned, named like kgate's own, or without their times; the "
                 "detail says which)%s",
                 deferred, foreign > 0 ? ", and work on other streams" : "");
    else if (foreign > 0)
        snprintf(r->reason, sizeof r->reason,
                 "work escaped the given stream: %.0f kernel(s) or copies on other streams while sampling (the "
                 "detail names the first)",
                 foreign);
    else if (kg_result_get(r, "time/trace_lost", &lost) && lost > 0)
        snprintf(r->reason, sizeof r->reason,
                 "the kernel trace lacked kgate's own records while sampling (CUPTI turned off or its records "
                 "taken)");
    else
        snprintf(r->reason, sizeof r->reason,
                 "work escaped the given stream: the device was still busy after the end event");
}

void kg_judge(kg_result *r, const kg_op *op, kg_types types, const kg_shape *s, const kg_scalars *sc,
              const kg_roofs *roofs, const kg_libref *lib, const kg_gate *g)
{
    kg_work w;
    judged_lib jl;
    memset(&jl, 0, sizeof jl);
    kg_op_work_call(op, s, types, sc, &w);
    kg_result_set(r, "work/bytes", w.bytes);
    kg_result_set(r, "work/flops", w.flops);
    if (lib && lib->measured)
        judge_library(r, op, types, &w, roofs, lib, g, &jl);
    if (r->verdict != KG_V_SKIPPED)
        return; /* INCORRECT, CRASH, TIMEOUT stand */
    if (judge_unjudged(r))
        return;
    kg_evidence ev;
    judge_flags(r, g);
    judge_evidence(r, op, types, &w, roofs, &jl, g, &ev);
    r->verdict = kg_decide(g, &ev, &r->flags, r->reason, sizeof r->reason);
    judge_timer_mismatch(r);
    if (r->flags & KG_FLAG(ESCAPED))
        judge_escaped(r);
    if (r->sums_dropped) { /* loud: flagged and said */
        r->flags |= KG_FLAG(TRUNCATED);
        snprintf(r->detail + strlen(r->detail), sizeof r->detail - strlen(r->detail),
                 "%s%d summaries did not fit in the result (at most %d) and were dropped",
                 r->detail[0] ? "; " : "", r->sums_dropped, KG_MAX_SUMMARIES);
    }
}

void kg_judge_kernel(kg_result *r, const kg_op *op, kg_types types, const kg_shape *s, const kg_scalars *sc,
                     const kg_roofs *roofs, const kg_libref *lib, int verify_only, int lib_others,
                     const kg_gate *g)
{
    int lib_shared = !verify_only && lib_others > 0;
    /* work on other streams of the library job's own process while it was
     * timed: a problem's library job loads the candidate's file, whose code
     * may run beside the library to slow it */
    int lib_foreign = !verify_only && !lib_shared && lib && lib->foreign > 0;
    kg_judge(r, op, types, s, sc, roofs, verify_only || lib_shared || lib_foreign ? NULL : lib, g);
    if (lib_shared)
        snprintf(r->baseline_note, sizeof r->baseline_note,
                 "not used: %d other process(es) held a context on the GPU around the library job (shared-gpu)",
                 lib_others);
    else if (lib_foreign)
        snprintf(r->baseline_note, sizeof r->baseline_note,
                 "not used: %.0f kernel(s) or copies ran beside the library job's timed calls%s%.160s%s",
                 lib->foreign, lib->timing_note[0] ? " (" : "", lib->timing_note, lib->timing_note[0] ? ")" : "");
}

void kg_judge_cliff(kg_result *r, const kg_result *first)
{
    double tn, tt;
    if (kg_result_get(first, "time/gpu/median", &tn) && kg_result_get(r, "time/gpu/median", &tt) && tt > 0 &&
        first->verdict != KG_V_INCORRECT)
        kg_result_set(r, "cliff", tn / tt);
}

void kg_judge_not_here(kg_result *r, const char *why)
{
    r->verdict = KG_V_SKIPPED;
    snprintf(r->reason, sizeof r->reason, "not on this GPU: %s", why);
}

/* -------------------------------------------------------- recorded results */

/* The library path E_lib was measured against, or NULL. */
static const kg_libpath *chosen_path(const kg_result *r)
{
    for (int i = 0; i < r->n_libs && i < KG_MAX_LIBPATHS; i++)
        if (strcmp(r->libs[i].name, r->baseline) == 0)
            return &r->libs[i];
    return NULL;
}

/* Flags kg_judge and kg_decide set from the gate's thresholds, which a new
 * gate sets afresh. */
#define GATE_FLAGS                                                                                           \
    (KG_FLAG(JUDGMENT_BAND) | KG_FLAG(AMBIGUOUS) | KG_FLAG(BASELINE_SUSPECT) | KG_FLAG(NO_BASELINE) |          \
     KG_FLAG(BASELINE_WEAK) | KG_FLAG(LIBRARY_KERNELS))

/* The evidence a recorded result kept, as kg_judge gave it to the gate. */
static void recorded_evidence(const kg_result *r, double t, kg_evidence *ev)
{
    double lo = t, hi = t, v, med = 0;
    /* the GPU median's interval, as the judged time's when they are one */
    if (kg_result_get(r, "time/gpu/median", &med) && med == t) {
        if (kg_result_get(r, "time/gpu/ci_lo", &v) && v > 0)
            lo = v;
        if (kg_result_get(r, "time/gpu/ci_hi", &v) && v > 0)
            hi = v;
    }
    memset(ev, 0, sizeof *ev);
    ev->correct = 1;
    if (kg_result_get(r, "roof/fraction", &ev->rho)) {
        ev->have_rho = 1;
        ev->rho_lo = ev->rho * t / hi;
        ev->rho_hi = ev->rho * t / lo;
    }
    const kg_libpath *lib = chosen_path(r);
    if (kg_result_get(r, "lib/efficiency", &ev->e)) {
        ev->have_e = 1;
        const double lt = ev->e * t, llo = lib && lib->lo > 0 ? lib->lo : lt, lhi = lib && lib->hi > 0 ? lib->hi : lt;
        ev->e_lo = llo / hi;
        ev->e_hi = lhi / lo;
    }
    if (kg_result_get(r, "best/efficiency", &ev->best)) {
        ev->have_best = 1;
        /* the best's own interval when it was that library path, else its point */
        const int is_lib = lib && strcmp(r->best, lib->name) == 0;
        const double bt = ev->best * t, blo = is_lib && lib->lo > 0 ? lib->lo : bt,
                     bhi = is_lib && lib->hi > 0 ? lib->hi : bt;
        ev->best_lo = blo / hi;
        ev->best_hi = bhi / lo;
    }
}

int kg_rejudge(kg_result *r, const kg_gate *g)
{
    double t = kg_result_time(r), v; /* time/judged, or an older kgate's GPU median */
    if ((r->verdict != KG_V_OK && r->verdict != KG_V_SLOW) || !(t > 0))
        return 0;
    kg_evidence ev;
    recorded_evidence(r, t, &ev);
    unsigned flags = r->flags & ~GATE_FLAGS;
    if (kg_result_get(r, "lib/roof/fraction", &v) && v < g->rho_fair)
        flags |= KG_FLAG(BASELINE_WEAK);
    flags |= library_kernels(r, g);
    char reason[sizeof r->reason];
    const kg_verdict was = r->verdict;
    const kg_verdict now = kg_decide(g, &ev, &flags, reason, sizeof reason);
    if (now == KG_V_SKIPPED) /* nothing to judge it by: it stands */
        return 0;
    r->verdict = now;
    r->flags = flags;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
    return now != was;
}
