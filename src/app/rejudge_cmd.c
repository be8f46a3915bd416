/* kgate rejudge: recorded results judged again by this kgate's gate (or
 * --e-ok / --rho-ok), listing every verdict that changes and why. */
#include "rejudge_cmd.h"

#include <stdio.h>
#include <string.h>

#include "../judge/judge.h"
#include "../report/report.h"

/* The flags of a result, comma-separated, or "" (bounded by out). */
static void flag_list(unsigned flags, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int b = 0; b < KG_FLAG_COUNT && used < size; b++)
        if (flags & (1u << b)) {
            int k = snprintf(out + used, size - used, "%s%s", used ? "," : "", kg_flag_name(b));
            used = k > 0 && (size_t)k < size - used ? used + (size_t)k : size;
        }
}

/* Judges one file's results again; prints the changes; returns how many. */
static int rejudge_one(kg_report *rep, const kg_gate *g, const char *path, FILE *f)
{
    int changed = 0, judged = 0;
    const kg_gate was = rep->gate;
    for (int i = 0; i < rep->n; i++) {
        kg_result *r = &rep->results[i];
        const kg_verdict before = r->verdict;
        judged += before == KG_V_OK || before == KG_V_SLOW;
        if (!kg_rejudge(r, g))
            continue;
        char flags[256];
        flag_list(r->flags, flags, sizeof flags);
        fprintf(f, "  %s %s %s: %s -> %s: %s%s%s%s\n", r->kernel, r->dtype, r->shape, kg_verdict_name(before),
                kg_verdict_name(r->verdict), r->reason, flags[0] ? " [" : "", flags, flags[0] ? "]" : "");
        changed++;
    }
    rep->gate = *g;
    fprintf(f, "%s: %d of %d judged result(s) change under e_ok %.2f, rho_ok %.2f (recorded with e_ok %.2f, "
               "rho_ok %.2f)\n",
            path, changed, judged, g->e_ok, g->rho_ok, was.e_ok, was.rho_ok);
    return changed;
}

int kg_cmd_rejudge(const kg_options *o)
{
    kg_err err = {0, ""};
    if (o->n_inputs == 0)
        kg_err_set(&err, KG_EXIT_USAGE, "rejudge needs results: kgate rejudge RESULTS.json... [--json NEW.json]");
    else if (o->json && o->n_inputs != 1)
        kg_err_set(&err, KG_EXIT_USAGE, "rejudge --json writes one results file: give one input");
    else if (o->json)
        kg_output_path_check("--json", o->json, (const char *const *)o->inputs, o->n_inputs, &err);
    for (int i = 0; !err.code && i < o->n_inputs; i++) {
        kg_report rep;
        kg_report_init(&rep);
        if (kg_report_read_json(o->inputs[i], &rep, &err) == 0) {
            rejudge_one(&rep, &o->gate, o->inputs[i], stdout);
            if (o->json)
                kg_report_write_json(&rep, o->json, &err);
        }
        kg_report_free(&rep);
    }
    if (err.code) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    return 0;
}
