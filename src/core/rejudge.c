/* A recorded result judged again by a gate (kgate rejudge): the evidence
 * the result kept (E_best, E_lib, rho and their intervals, the library
 * path's own rho, the share of library kernels) through kg_decide, the one
 * rule. Plain C; no GPU. */
#include "rejudge.h"

#include <stdio.h>
#include <string.h>

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

int kg_rejudge(kg_result *r, const kg_gate *g)
{
    double t = kg_result_time(r), lo, hi, v; /* time/judged, or an older kgate's GPU median */
    if ((r->verdict != KG_V_OK && r->verdict != KG_V_SLOW) || !(t > 0))
        return 0;
    /* the GPU median's interval, as the judged time's when they are one */
    double med = 0;
    lo = hi = t;
    if (kg_result_get(r, "time/gpu/median", &med) && med == t) {
        if (kg_result_get(r, "time/gpu/ci_lo", &v) && v > 0)
            lo = v;
        if (kg_result_get(r, "time/gpu/ci_hi", &v) && v > 0)
            hi = v;
    }
    kg_evidence ev;
    memset(&ev, 0, sizeof ev);
    ev.correct = 1;
    if (kg_result_get(r, "roof/fraction", &ev.rho)) {
        ev.have_rho = 1;
        ev.rho_lo = ev.rho * t / hi;
        ev.rho_hi = ev.rho * t / lo;
    }
    const kg_libpath *lib = chosen_path(r);
    if (kg_result_get(r, "lib/efficiency", &ev.e)) {
        ev.have_e = 1;
        const double lt = ev.e * t, llo = lib && lib->lo > 0 ? lib->lo : lt, lhi = lib && lib->hi > 0 ? lib->hi : lt;
        ev.e_lo = llo / hi;
        ev.e_hi = lhi / lo;
    }
    if (kg_result_get(r, "best/efficiency", &ev.best)) {
        ev.have_best = 1;
        /* the best's own interval when it was that library path, else its point */
        const int is_lib = lib && strcmp(r->best, lib->name) == 0;
        const double bt = ev.best * t, blo = is_lib && lib->lo > 0 ? lib->lo : bt, bhi = is_lib && lib->hi > 0 ? lib->hi : bt;
        ev.best_lo = blo / hi;
        ev.best_hi = bhi / lo;
    }
    unsigned flags = r->flags & ~GATE_FLAGS;
    if (kg_result_get(r, "lib/roof/fraction", &v) && v < g->rho_fair)
        flags |= KG_FLAG(BASELINE_WEAK);
    double share = 0, count = 0;
    if (kg_result_get(r, "time/vendor_share", &share) ? share >= g->vendor_share
                                                        : kg_result_get(r, "time/vendor", &count) && count > 0)
        flags |= KG_FLAG(LIBRARY_KERNELS);
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
