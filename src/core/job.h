/* Supervising workers and judging what they report.
 *
 * kg_spawn runs `kgate __worker ...` (this same executable) with an event
 * pipe and a watchdog: events arrive as JSON lines; a child that outlives its
 * budget is killed (TIMEOUT); one that dies by a signal is a CRASH whose
 * stderr tail is kept. kg_job_run turns one worker's events into a
 * kg_result; kg_judge adds E_lib, rho and the verdict. */
#ifndef KG_JOB_H
#define KG_JOB_H

#include "op.h"
#include "result.h"
#include "stats.h"
#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cJSON cJSON;
typedef void (*kg_event_fn)(void *ud, const cJSON *ev);

typedef struct kg_child {
    int exited, code;   /* normal exit and its status */
    int signaled, sig;  /* killed by a signal */
    int timed_out;      /* killed by the watchdog */
    double wall_s;
    char stderr_tail[1024];
} kg_child;

/* Runs the executable `exe` with argv (argv[0] included, NULL-terminated),
 * passing the event pipe as --fd N appended by the caller's argv. */
int kg_spawn(const char *exe, char *const argv[], int event_fd_arg_index, double timeout_s,
             kg_event_fn on_event, void *ud, kg_child *st, kg_err *err);

/* The library time an operator/dtype/shape was judged against. */
typedef struct kg_libref {
    int have;
    double t, lo, hi;
    char name[64], note[320];
    int fallback, wrong;
} kg_libref;

typedef struct kg_job_spec {
    const char *exe;     /* kgate itself */
    const char *plugin;  /* NULL for a baseline-only job */
    const char *kernel;  /* NULL for a baseline-only job, or with list */
    const kg_op *op;
    kg_dtype dtype;
    kg_shape shape;
    int baseline;        /* also measure the library baseline */
    int list;            /* only load and validate the plugin */
    int hot, memset_flush, trials, device, edge;
    unsigned long long seed;
    kg_stop_cfg stop;
    double timeout_s;
} kg_job_spec;

/* Runs a worker for spec. Result fields and summaries go to *r (kernel part)
 * and *lib (baseline part). Returns non-zero only for errors that stop the
 * whole command (bad candidate file, no GPU); a kernel's crash, hang or
 * mismatch is a verdict in *r. With list, the table is returned in *table as
 * a cJSON array the caller deletes. */
int kg_job_run(const kg_job_spec *spec, kg_result *r, kg_libref *lib, cJSON **table, kg_err *err);

/* Derives rates, rho, E_lib and the verdict for a measured result. */
void kg_judge(kg_result *r, const kg_op *op, kg_dtype dt, const kg_shape *s,
              const kg_roofs *roofs, const kg_libref *lib, const kg_gate *g);

#ifdef __cplusplus
}
#endif
#endif
