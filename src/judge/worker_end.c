/* The verdicts a worker's end decides (worker_end.h): CRASH, TIMEOUT and
 * INCORRECT from what the supervisor saw, and --memcheck's INCORRECT. */
#include "worker_end.h"

#include <stdio.h>
#include <string.h>

void kg_judge_worker_end(const kg_worker_end *w, kg_result *r)
{
    const char *tail = w->stderr_tail, *sep = tail[0] ? ": " : "";
    if (w->violation[0]) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "worker protocol violation: %.400s", w->violation);
    } else if (w->timed_out) {
        r->verdict = KG_V_TIMEOUT;
        snprintf(r->reason, sizeof r->reason, "no result within %.0f s: killed", w->timeout_s);
    } else if (w->crashed) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "%.500s", w->crash);
    } else if (w->signaled) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "worker killed by signal %d (%s)%s%.300s", w->sig, strsignal(w->sig),
                 sep, tail);
    } else if (w->incorrect) {
        r->verdict = KG_V_INCORRECT;
    } else if (!w->done) {
        r->verdict = KG_V_CRASH;
        snprintf(r->reason, sizeof r->reason, "worker exited with %d before finishing%s%.300s", w->code, sep, tail);
    } else {
        r->verdict = KG_V_SKIPPED; /* judged later */
        if (w->unsupported) /* said in the done event, never by a summary */
            kg_result_set(r, "check/unsupported", 1);
        else if (w->verify_only)
            r->flags |= KG_FLAG(VERIFIED);
    }
}

void kg_judge_sanitizer(kg_result *r, const char *tool, const char *report)
{
    r->verdict = KG_V_INCORRECT;
    snprintf(r->reason, sizeof r->reason, "compute-sanitizer %s found an error", tool);
    snprintf(r->detail, sizeof r->detail, "%.1000s", report);
}
