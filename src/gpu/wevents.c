/* The events a worker sends (protocol/proto.h), one JSON line each on the
 * descriptor its supervisor gave it, about the bench's subject (bench.h). */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "../judge/result.h"

static FILE *ev_out;

void kg_wev_open(FILE *f) { ev_out = f; }

/* One event line already serialized (kg_event_to_json's). */
void kg_wev_line(const char *s)
{
    if (s && ev_out) {
        fprintf(ev_out, "%s\n", s);
        fflush(ev_out);
    }
}

void kg_wev_emit(const kg_event *e)
{
    char *s = kg_event_to_json(e);
    kg_wev_line(s);
    free(s);
}

kg_event kg_wev_new(kg_ev_kind kind, kg_subject who, const char *path)
{
    kg_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.subject = who;
    if (path)
        snprintf(e.path, sizeof e.path, "%s", path);
    return e;
}


/* An event about the bench's current subject (a library path or the
 * bundled variant carries its name). */
kg_event kg_wev_subject(const kg_bench *b, kg_ev_kind kind)
{
    return kg_wev_new(kind, b->who, b->who == KG_SUBJ_KERNEL ? NULL : b->path);
}

void kg_wev_sum(const kg_bench *b, const char *name, double v)
{
    if (!isfinite(v)) /* e.g. the statistics of no kept sample: absent, not NaN */
        return;
    kg_event e = kg_wev_subject(b, KG_EV_SUM);
    snprintf(e.name, sizeof e.name, "%s", name);
    snprintf(e.unit, sizeof e.unit, "%s", kg_summary_unit(name));
    e.value = v;
    kg_wev_emit(&e);
}

void kg_wev_fail(const kg_bench *b, const char *kind, const char *msg)
{
    kg_event e = kg_wev_subject(b, KG_EV_FAIL);
    snprintf(e.fail_kind, sizeof e.fail_kind, "%s", kind);
    snprintf(e.text, sizeof e.text, "%s", msg);
    kg_wev_emit(&e);
}

void kg_wev_timing(const kg_bench *b, const kg_timing *t)
{
    kg_wev_sum(b, "time/gpu/median", t->st.median);
    kg_wev_sum(b, "time/gpu/ci_lo", t->st.ci_lo);
    kg_wev_sum(b, "time/gpu/ci_hi", t->st.ci_hi);
    if (b->who != KG_SUBJ_KERNEL) {
        /* what disturbed a library path's timing: such a time is not kept (store/lib_cache.h),
         * and work of its process beside it (a trace without kgate's own records counts as
         * such) is not used */
        kg_wev_sum(b, "time/throttled", t->n_throttled);
        kg_wev_sum(b, "time/foreign", t->n_foreign + t->n_deferred + t->trace_lost);
    } else {
        kg_wev_sum(b, "time/gpu/min", t->st.min);
        kg_wev_sum(b, "time/gpu/p10", t->st.p10);
        kg_wev_sum(b, "time/gpu/p90", t->st.p90);
        kg_wev_sum(b, "time/gpu/relstd", t->st.relstd);
        kg_wev_sum(b, "time/gpu/spread", t->st.spread);
        kg_wev_sum(b, "time/samples", t->st.n);
        kg_wev_sum(b, "time/throttled", t->n_throttled);
        kg_wev_sum(b, "time/wall", t->wall_s);
        kg_wev_sum(b, "time/event/median", t->event_median_s);
        kg_wev_sum(b, "time/traced", t->n_traced);
        if (t->clock_mhz > 0)
            kg_wev_sum(b, "time/clock", t->clock_mhz);
        if (t->batched)
            kg_wev_sum(b, "time/batch/mean", t->batch_mean_s);
        if (t->escaped)
            kg_wev_sum(b, "time/escaped", t->escaped_s);
        kg_wev_sum(b, "time/foreign", t->n_foreign);
        if (t->n_deferred)
            kg_wev_sum(b, "time/deferred", t->n_deferred);
        if (t->trace_lost)
            kg_wev_sum(b, "time/trace_lost", 1);
        kg_wev_sum(b, "time/host/median", t->host_median_s);
        if (b->glue_n) {
            kg_wev_sum(b, "time/host/glue", b->glue_sum / (double)b->glue_n);
            kg_wev_sum(b, "time/host/glue_over", b->glue_over / (double)b->glue_n);
        }
        if (t->span_median_s > 0)
            kg_wev_sum(b, "time/span/median", t->span_median_s);
        if (t->n_blocker_timeouts)
            kg_wev_sum(b, "time/blocking", t->n_blocker_timeouts);
        kg_wev_sum(b, "time/verified", t->n_verified);
        if (t->n_persist_reset)
            kg_wev_sum(b, "time/persist_reset", t->n_persist_reset);
        if (t->vendor_seen) { /* always, so that a result says how much was the library's */
            kg_wev_sum(b, "time/vendor", t->n_vendor);
            kg_wev_sum(b, "time/vendor_share", t->vendor_share);
            kg_wev_sum(b, "time/vendor_compute_share", t->vendor_compute_share);
        }
    }
    kg_event e = kg_wev_subject(b, KG_EV_TIMING);
    snprintf(e.stop, sizeof e.stop, "%s", kg_stop_name(t->stop));
    e.escaped = t->escaped;
    e.throttled = t->n_throttled;
    snprintf(e.text, sizeof e.text, "%s", t->note);
    kg_wev_emit(&e);
}
