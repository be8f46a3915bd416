/* JSON forms of the diagnosis (diagnose/diag.h, diagnose/diagnose.h): a kernel's
 * facts and a cause, as the worker sends them (docs/worker.md) and as
 * results carry them (docs/results.md). Reading validates every field:
 * the facts come from a worker, which the candidate controls.
 * Plain C; no GPU. */
#ifndef KG_DIAG_JSON_H
#define KG_DIAG_JSON_H

#include <cjson/cJSON.h>

#include "diagnose.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The whole diagnosis of one result. */
typedef struct kg_diagnosis {
    char note[512];   /* what could not be collected, and why ("" when all was) */
    int passes;       /* profiler passes (0: no counters) */
    int launches;     /* kernel launches in the profiled call */
    double busy_s;    /* summed kernel time of that call (0: unknown) */
    double wall_s;    /* wall time the diagnosis added in the worker */
    int n_kernels;
    kg_kfacts kernels[KG_DIAG_KERNELS_MAX];
    int n_causes;
    kg_cause causes[KG_CAUSES_MAX];
} kg_diagnosis;

/* The cause a table shows for d: its top one, or NULL when none fired or
 * the best scores under 0.005 (it would print as 0.00: a rule that holds
 * with no gain to win). */
const kg_cause *kg_diag_top(const kg_diagnosis *d);

/* Appends "; "-separated text (fmt with one %s) to d->note, dropping what
 * does not fit. */
void kg_diag_note(kg_diagnosis *d, const char *fmt, const char *what);

/* New objects (caller owns); NULL when out of memory. */
cJSON *kg_kfacts_to_cjson(const kg_kfacts *k);
cJSON *kg_cause_to_cjson(const kg_cause *c);
/* Strict readers: KG_EXIT_FAIL naming the field on anything out of range,
 * of the wrong type, too long, or with characters a name cannot hold. */
int kg_kfacts_from_cjson(const cJSON *o, kg_kfacts *k, kg_err *err);
int kg_cause_from_cjson(const cJSON *o, kg_cause *c, kg_err *err);
/* A diagnosis object {"note","passes","launches","busy_s","wall_s",
 * "kernels":[...],"causes":[...]} and back. */
cJSON *kg_diagnosis_to_cjson(const kg_diagnosis *d);
int kg_diagnosis_from_cjson(const cJSON *o, kg_diagnosis *d, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
