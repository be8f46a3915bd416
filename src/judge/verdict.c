/* The gate: turns correctness, E_lib and rho into a verdict with flags. */
#include "verdict.h"
#include "../catalog/plugin_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int code;
} verdicts[] = {
#define X(e, s, c) {s, c},
    KG_VERDICTS(X)
#undef X
};

const char *kg_verdict_name(kg_verdict v) { return (unsigned)v < KG_V_COUNT ? verdicts[v].name : "?"; }
int kg_verdict_exit_code(kg_verdict v) { return (unsigned)v < KG_V_COUNT ? verdicts[v].code : 2; }

int kg_verdict_parse(const char *s, kg_verdict *out)
{
    for (int i = 0; i < KG_V_COUNT; i++)
        if (strcmp(s, verdicts[i].name) == 0) {
            *out = (kg_verdict)i;
            return 0;
        }
    return -1;
}

static const char *flag_names[] = {
#define X(e, s, d) s,
    KG_FLAGS(X)
#undef X
};
static const char *flag_desc[] = {
#define X(e, s, d) d,
    KG_FLAGS(X)
#undef X
};

const char *kg_flag_name(int b) { return b >= 0 && b < KG_FLAG_COUNT ? flag_names[b] : "?"; }
const char *kg_flag_describe(int b) { return b >= 0 && b < KG_FLAG_COUNT ? flag_desc[b] : "?"; }

int kg_flag_parse(const char *s)
{
    for (int i = 0; i < KG_FLAG_COUNT; i++)
        if (strcmp(s, flag_names[i]) == 0)
            return i;
    return -1;
}

void kg_gate_defaults(kg_gate *g)
{
    g->e_ok = 0.80;
    g->rho_ok = 0.80;
    g->rho_fair = 0.50;
    g->rho_impossible = 1.05;
    g->suspect_e = 2.0;
    g->suspect_rho = 0.8;
    g->band = 0.1;
    g->vendor_share = 0.20;
    g->vendor_compute = 0.05;
    g->vendor_all = 0.50;
    g->host_allowance = KG_HOST_ALLOWANCE_S;
}

static int passes(const kg_gate *g, int have_e, double e, int have_rho, double rho)
{
    return (have_e && e >= g->e_ok) || (have_rho && rho >= g->rho_ok);
}

kg_verdict kg_decide(const kg_gate *g, const kg_evidence *ev, unsigned *flags, char *reason,
                     size_t size)
{
    if (!ev->correct) {
        snprintf(reason, size, "output does not match the fp64 reference");
        return KG_V_INCORRECT;
    }
    /* the relative anchor: E_best when known, else E_lib */
    int have_a = ev->have_best || ev->have_e;
    double a = ev->have_best ? ev->best : ev->e, a_lo = ev->have_best ? ev->best_lo : ev->e_lo,
           a_hi = ev->have_best ? ev->best_hi : ev->e_hi;
    const char *a_name = ev->have_best ? "E_best" : "E_lib";
    if (!have_a && !ev->have_rho) {
        snprintf(reason, size, "no timing: neither E nor rho could be computed");
        return KG_V_SKIPPED;
    }
    if (!ev->have_e)
        *flags |= KG_FLAG(NO_BASELINE);
    if (ev->have_rho && ev->rho > g->rho_impossible) {
        if (ev->rho_lo <= g->rho_impossible)
            *flags |= KG_FLAG(AMBIGUOUS);
        snprintf(reason, size, "rho %.2f > %.2f: faster than the hardware allows", ev->rho,
                 g->rho_impossible);
        return KG_V_IMPOSSIBLE;
    }
    int ok = passes(g, have_a, a, ev->have_rho, ev->rho);
    int ok_lo = passes(g, have_a, a_lo, ev->have_rho, ev->rho_lo);
    int ok_hi = passes(g, have_a, a_hi, ev->have_rho, ev->rho_hi);
    if (ok_lo != ok_hi || (ev->have_rho && ev->rho_hi > g->rho_impossible))
        *flags |= KG_FLAG(AMBIGUOUS);
    if (have_a && ev->have_rho) {
        if (ev->have_e && ev->e > g->suspect_e && ev->rho < g->suspect_rho)
            *flags |= KG_FLAG(BASELINE_SUSPECT);
        /* E and rho disagree at the paper's mark: rho alone would pass the
         * kernel at rho_fair while E fails it (E decides up to rho_ok), or
         * fail it just under rho_fair while E passes it */
        const int pe = a >= g->e_ok, fair = ev->rho >= g->rho_fair;
        if (pe != fair && ((!pe && ev->rho < g->rho_ok) || (pe && g->rho_fair - ev->rho <= g->band)))
            *flags |= KG_FLAG(JUDGMENT_BAND);
    }
    char e_txt[64] = "no reference time", r_txt[64] = "no roof", lib_txt[48] = "";
    if (have_a)
        snprintf(e_txt, sizeof e_txt, "%s %.2f %s %.2f", a_name, a, a >= g->e_ok ? ">=" : "<",
                 g->e_ok);
    if (ev->have_rho)
        snprintf(r_txt, sizeof r_txt, "rho %.2f %s %.2f", ev->rho,
                 ev->rho >= g->rho_ok ? ">=" : "<", g->rho_ok);
    if (ev->have_best && ev->have_e)
        snprintf(lib_txt, sizeof lib_txt, " (E_lib %.2f)", ev->e);
    snprintf(reason, size, "%s, %s%s", e_txt, r_txt, lib_txt);
    return ok ? KG_V_OK : KG_V_SLOW;
}

double kg_host_charge(double gpu_s, double host_s, double allowance_s)
{
    double free_s = gpu_s + fmax(allowance_s, gpu_s);
    return host_s <= free_s ? gpu_s : fmin(host_s, gpu_s + 2 * (host_s - free_s));
}

double kg_host_own(double claimed_s, double measured_s, double glue_max_s)
{
    if (!(claimed_s >= 0 && claimed_s <= measured_s))
        return measured_s;
    return fmax(claimed_s, measured_s - glue_max_s);
}

double kg_host_allowance_for(const char *path)
{
    return kg_source_is_python(path) ? KG_HOST_ALLOWANCE_PYTHON_S : KG_HOST_ALLOWANCE_S;
}
