/* Tagged summaries of a result. */
#include "result.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name, *unit, *desc;
} table[] = {
#define X(n, u, d) {n, u, d},
    KG_SUMMARIES(X)
#undef X
};

/* every known summary fits in one result, so a worker that sends only known
 * names, each once, cannot crowd out the supervisor's (supervise/job.c) */
#define KG_COUNT_ONE(n, u, d) +1
_Static_assert(0 KG_SUMMARIES(KG_COUNT_ONE) <= KG_MAX_SUMMARIES, "KG_MAX_SUMMARIES holds every known summary");
#undef KG_COUNT_ONE

static int find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return (int)i;
    return -1;
}

const char *kg_summary_unit(const char *name)
{
    int i = find(name);
    return i < 0 ? "" : table[i].unit;
}

int kg_summary_known(const char *name) { return find(name) >= 0; }

const char *kg_summary_describe(const char *name)
{
    int i = find(name);
    return i < 0 ? "" : table[i].desc;
}

const char *kg_lib_status_name(kg_lib_status s)
{
    return s == KG_LIB_OK ? "ok" : s == KG_LIB_UNSUPPORTED ? "unsupported" : "incorrect";
}

int kg_result_set_unit(kg_result *r, const char *name, double v, const char *unit)
{
    for (int i = 0; i < r->n_sums; i++)
        if (strcmp(r->sums[i].name, name) == 0) {
            r->sums[i].value = v;
            if (unit)
                snprintf(r->sums[i].unit, sizeof r->sums[i].unit, "%s", unit);
            return 0;
        }
    if (r->n_sums == KG_MAX_SUMMARIES) {
        r->sums_dropped++;
        return -1;
    }
    kg_summary *s = &r->sums[r->n_sums++];
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->unit, sizeof s->unit, "%s", unit ? unit : kg_summary_unit(name));
    s->value = v;
    return 0;
}

int kg_result_set(kg_result *r, const char *name, double v) { return kg_result_set_unit(r, name, v, NULL); }

double kg_result_time(const kg_result *r)
{
    double t = 0;
    if (!kg_result_get(r, "time/judged", &t))
        kg_result_get(r, "time/gpu/median", &t);
    return t > 0 ? t : 0;
}

int kg_result_get(const kg_result *r, const char *name, double *v)
{
    for (int i = 0; i < r->n_sums; i++)
        if (strcmp(r->sums[i].name, name) == 0) {
            if (v)
                *v = r->sums[i].value;
            return 1;
        }
    return 0;
}
