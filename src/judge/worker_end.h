/* The verdicts a worker's end decides: what the supervisor saw of a kernel
 * job (a protocol violation, the watchdog, a crash report, a signal, a
 * failed check, an exit before the done) and compute-sanitizer's answer.
 * The gate's verdicts (OK, SLOW, IMPOSSIBLE) are judge.h's. */
#ifndef KG_WORKER_END_H
#define KG_WORKER_END_H

#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a kernel job's worker ended. Strings are never NULL ("" for none). */
typedef struct kg_worker_end {
    const char *violation; /* the first protocol violation */
    int timed_out;         /* killed by the watchdog after timeout_s */
    double timeout_s;
    int crashed;           /* the worker reported a crash: `crash` says what */
    const char *crash;
    int signaled, sig;     /* killed by a signal */
    int code;              /* its exit status otherwise */
    const char *stderr_tail;
    int incorrect;         /* a check failed (its reason and detail are in the result already) */
    int done;              /* the done event, with the job's nonce, came */
    int unsupported;       /* that done said the kernel does not take the shape */
    int verify_only;
} kg_worker_end;

/* Sets r's verdict (and reason) from how its worker ended, first match
 * wins: a violation or a crash report is CRASH, the watchdog TIMEOUT, a
 * signal CRASH, a failed check INCORRECT, an exit before the done CRASH;
 * a finished job stays SKIPPED for kg_judge (marked check/unsupported when
 * the done said so, or verified with verify_only). */
void kg_judge_worker_end(const kg_worker_end *w, kg_result *r);

/* --memcheck: compute-sanitizer `tool` found an error in one checked call
 * (its report's last line, or why the call failed): INCORRECT. */
void kg_judge_sanitizer(kg_result *r, const char *tool, const char *report);

#ifdef __cplusplus
}
#endif
#endif
