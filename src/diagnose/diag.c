/* The diagnosis inputs' small helpers (diagnose/diag.h). */
#include "diag.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void kg_kfacts_init(kg_kfacts *k)
{
    memset(k, 0, sizeof *k);
    k->time_share = -1;
    k->regs = k->static_smem = k->dyn_smem = k->local_bytes = k->max_blocks_per_sm = -1;
    k->occupancy = k->waves = -1;
    k->sms = -1;
    for (int i = 0; i < 3; i++)
        k->grid[i] = k->block[i] = -1;
}

double kg_kfacts_metric(const kg_kfacts *k, const char *name)
{
    for (int i = 0; i < k->n_m; i++)
        if (strcmp(k->m[i].name, name) == 0)
            return k->m[i].value;
    return NAN;
}

int kg_kfacts_set(kg_kfacts *k, const char *name, double value)
{
    for (int i = 0; i < k->n_m; i++)
        if (strcmp(k->m[i].name, name) == 0) {
            k->m[i].value = value;
            return 0;
        }
    if (k->n_m >= KG_KMETRICS_MAX)
        return -1;
    snprintf(k->m[k->n_m].name, sizeof k->m[k->n_m].name, "%s", name);
    k->m[k->n_m++].value = value;
    return 0;
}
