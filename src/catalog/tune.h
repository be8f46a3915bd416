/* Configuration spaces (`kgate tune`, docs/tune.md): a candidate's
 * kgate_tunables_v1 table validated, a kernel's space as text and back, and
 * its configurations enumerated or sampled. Plain C, no GPU.
 *
 * The rules: a tunable names a kernel of the table, at most once; 1 to 16
 * knobs with names [a-z_][a-z0-9_]* (at most 31 bytes), unique; 1 to 64
 * distinct values each; a launch function. A space is at most 2^40
 * configurations. Configuration i is the mixed-radix decoding of i (the last
 * knob fastest); a budgeted sample is `budget` distinct indices drawn from a
 * seed, sorted, so the same seed gives the same configurations. */
#ifndef KG_TUNE_H
#define KG_TUNE_H

#include <kgate/plugin.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_MAX_KNOBS 16
#define KG_MAX_KNOB_VALUES 64
#define KG_SPACE_TEXT 1024

typedef struct kg_space {
    int n_knobs;
    char name[KG_MAX_KNOBS][32];
    int n_values[KG_MAX_KNOBS];
    int64_t values[KG_MAX_KNOBS][KG_MAX_KNOB_VALUES];
} kg_space;

/* Validates a tunables table against its kernel table (errors name `path`). */
int kg_tunables_validate(const kgate_tunables *t, const kgate_plugin *p, const char *path, kg_err *err);
/* The tunable of kernel `name`, or NULL. */
const kgate_tunable *kg_tunable_find(const kgate_tunables *t, const char *name);
/* A tunable's space. */
void kg_space_of(const kgate_tunable *t, kg_space *s);

/* "block_m=64|128;warps=4|8" and back (the text travels in the table event). */
int kg_space_format(const kg_space *s, char *buf, size_t size);
int kg_space_parse(const char *text, kg_space *s, kg_err *err);
/* The number of configurations (as a double: it may be large). */
double kg_space_size(const kg_space *s);
/* Configuration `index` into cfg[n_knobs]. */
void kg_space_config(const kg_space *s, uint64_t index, int64_t *cfg);
/* "block_m=128,warps=8". */
int kg_config_format(const kg_space *s, const int64_t *cfg, char *buf, size_t size);
/* Whether every value of cfg is allowed for its knob; msg names the first that is not. */
int kg_config_check(const kg_space *s, const int64_t *cfg, int n, char *msg, size_t size);
/* Restricts s to the values that specs name, each "KNOB=V[,V...]" (--knob):
 * the knob keeps those of its values, in its own order. Errors
 * (KG_EXIT_USAGE, naming the spec): not KNOB=V,..; a knob the space lacks
 * (the knobs listed); a value the knob does not take (its values listed); a
 * knob or a value given twice. */
int kg_space_restrict(kg_space *s, const char *const *specs, int n, kg_err *err);
/* The configurations to time: all of them when there are at most `budget`
 * (or budget <= 0 and at most `cap`), else `budget` distinct ones drawn from
 * seed, in increasing index order. *idx is malloc'd. Errors: an empty
 * sample, a space over `cap` without a budget. */
int kg_space_pick(const kg_space *s, long budget, long cap, unsigned long long seed, uint64_t **idx, long *n,
                  kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
