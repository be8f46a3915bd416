/* kgate explain, and the glue between a judged result and the diagnosis
 * rules: the subject-wide context (time, rho, E_best, work model) comes
 * from the result and its operator, the kernels' facts from the worker
 * (or an Nsight Compute CSV). */
#include "explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "../diagnose/diag_json.h"
#include "../diagnose/ncu_csv.h"
#include "../catalog/problem.h"
#include "../report/report.h"
#include "../gpu/profile.h"

void kg_explain_ctx(const kg_result *r, const kg_op *op, const kg_shape *sh, kg_types ty, kg_diag_ctx *c)
{
    double v;
    memset(c, 0, sizeof *c);
    if (op && sh) {
        kg_work w;
        kg_op_work(op, sh, ty, &w);
        c->bytes = w.bytes;
        c->flops = w.flops;
        /* a judged result holds the work of its call's scalars (attention's
         * causal halves the FLOPs); the defaults' work is the fallback */
        double v_bytes, v_flops;
        if (kg_result_get(r, "work/bytes", &v_bytes) && v_bytes > 0 &&
            kg_result_get(r, "work/flops", &v_flops) && v_flops >= 0) {
            c->bytes = v_bytes;
            c->flops = v_flops;
        }
        /* a reduction along rows: the tolerance's reductions, and the
         * index-returning ones (argmax) */
        c->reduction = op->reduction || op->out[0].cmp == KG_CMP_ARG;
        /* a problem (KernelBench, Python) counts as a reduction for its
         * tolerance, whatever it computes: its rows mean nothing here */
        if (c->reduction && !kg_problem_of(op)) {
            int64_t rows, cols;
            kg_input0_matrix(op, sh, &rows, &cols);
            c->row = cols > 0 ? (double)cols : 0;
            c->elem = (double)kg_dtype_size(ty.data);
        }
        /* fp32 data has no tensor-core path that passes its tolerance */
        c->matrix = (op->family == KG_FAMILY_GEMM || op->family == KG_FAMILY_ATTENTION ||
                     op->family == KG_FAMILY_CONVOLUTION) &&
                    kg_roof_unit(op->unit, ty.data) == KG_UNIT_TENSOR;
    }
    if (kg_result_get(r, "time/gpu/median", &v))
        c->t_s = v;
    if (kg_result_get(r, "roof/fraction", &v))
        c->rho = v;
    if (kg_result_get(r, "best/efficiency", &v) || kg_result_get(r, "lib/efficiency", &v))
        c->e_best = v;
    if (!op && kg_result_get(r, "roof/compute_bound", &v))
        c->matrix = v > 0;
    if (kg_result_get(r, "time/host/median", &v))
        c->host_s = v;
    if (kg_result_get(r, "time/judged", &v))
        c->judged_s = v;
    if (r->diag) {
        c->busy_s = r->diag->busy_s;
        c->launches = r->diag->launches;
    }
}

void kg_explain_result(kg_result *r, const kg_diag_params *p)
{
    const kg_op *op = kg_op_find(r->op);
    kg_shape sh;
    kg_types ty = {KG_FP16, KG_I64};
    kg_err e = {0, ""};
    int known = op && kg_shape_parse(op, r->shape, &sh, &e) == 0 && kg_dtype_parse(r->dtype, &ty.data) == 0;
    if (known && r->index_dtype[0])
        kg_dtype_parse(r->index_dtype, &ty.index);
    if (!r->diag)
        return;
    kg_diag_ctx c;
    kg_explain_ctx(r, known ? op : NULL, known ? &sh : NULL, ty, &c);
    kg_diagnose(r->diag->kernels, r->diag->n_kernels, &c, p, r->diag->causes, KG_CAUSES_MAX, &r->diag->n_causes);
}

static void print_rules(FILE *f)
{
    fprintf(f, "rules (docs/diagnosis.md):\n");
    for (int i = 0; i < kg_diag_rule_count(); i++) {
        int dup = 0;
        for (int k = 0; k < i; k++)
            dup |= strcmp(kg_diag_rule_id(k), kg_diag_rule_id(i)) == 0;
        if (dup)
            continue;
        char loci[64] = ""; /* an id's rules may differ in where the fix belongs (RC0b) */
        size_t o = 0;
        for (int k = i; k < kg_diag_rule_count(); k++)
            if (strcmp(kg_diag_rule_id(k), kg_diag_rule_id(i)) == 0 && !strstr(loci, kg_diag_rule_locus(k)))
                kg_append(loci, sizeof loci, &o, "%s%s", o ? " or " : "", kg_diag_rule_locus(k));
        fprintf(f, "  %-7s %s\n          fix (%s): %s\n", kg_diag_rule_id(i), kg_diag_rule_title(i), loci,
                kg_diag_rule_hint(i));
    }
    fprintf(f, "\nthresholds (--diag-set NAME=VALUE):\n");
    for (int i = 0; i < kg_diag_param_count(); i++)
        fprintf(f, "  %-16s %8g  %s\n", kg_diag_param_name(i), kg_diag_param_default(i), kg_diag_param_doc(i));
    /* one line each, comma-separated: what `ncu --metrics` takes */
    fprintf(f, "\ncounters (default): ");
    for (int i = 0; i < kg_prof_n_default; i++)
        fprintf(f, "%s%s", i ? "," : "", kg_prof_default_metrics[i]);
    fprintf(f, "\ncounters (extended): ");
    for (int i = 0; i < kg_prof_n_extended; i++)
        fprintf(f, "%s%s", i ? "," : "", kg_prof_extended_metrics[i]);
    fprintf(f, "\n");
}

/* --from-ncu: every profiled launch of the CSV becomes a kernel of one
 * result, diagnosed with the operator's work model when --op and --shape
 * say what it computed. */
static int explain_ncu(const kg_options *o, kg_err *err)
{
    kg_result r;
    memset(&r, 0, sizeof r);
    r.diag = calloc(1, sizeof *r.diag);
    char warn[512] = "";
    if (!r.diag)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory");
    int n = 0;
    kg_err perr = {0, ""};
    if (kg_ncu_csv_parse_file(o->from_ncu, r.diag->kernels, KG_DIAG_KERNELS_MAX, &n, warn, sizeof warn, &perr)) {
        if (perr.code == KG_EXIT_USAGE) /* a format error: name the file */
            kg_err_set(err, KG_EXIT_USAGE, "%s: %s", o->from_ncu, perr.msg);
        else
            *err = perr;
        goto out;
    }
    /* a CSV holds every profiled launch, often of several calls: the rows
     * of one kernel count once, with the first row's counters */
    int kept = 0, repeats = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < kept && !seen; k++)
            seen = strcmp(r.diag->kernels[k].name, r.diag->kernels[i].name) == 0;
        if (seen)
            repeats++;
        else if (kept != i)
            r.diag->kernels[kept++] = r.diag->kernels[i];
        else
            kept++;
    }
    n = kept;
    r.diag->n_kernels = n;
    r.diag->launches = n;
    {
        char rep[96] = "";
        if (repeats)
            snprintf(rep, sizeof rep, "%d row(s) of kernels already seen (repeated calls) left out", repeats);
        snprintf(r.diag->note, sizeof r.diag->note, "%.400s%s%s", warn, warn[0] && rep[0] ? "; " : "", rep);
    }
    const kg_op *op = o->op;
    kg_shape sh;
    int have_shape = op && o->n_shapes == 1 && kg_shape_parse(op, o->shape_texts[0], &sh, err) == 0;
    if (err->code)
        goto out;
    kg_types ty = {o->have_dtype ? o->dtype : op ? op->dtypes[0] : KG_FP16, KG_I64};
    /* the subject's time is the launches' summed duration */
    double busy = 0;
    for (int i = 0; i < n; i++) {
        double t = kg_kfacts_metric(&r.diag->kernels[i], "gpu__time_duration.sum");
        busy += t > 0 ? t * 1e-9 : 0;
    }
    r.diag->busy_s = busy;
    kg_result_set(&r, "time/gpu/median", busy);
    kg_diag_ctx c;
    kg_explain_ctx(&r, have_shape ? op : NULL, have_shape ? &sh : NULL, ty, &c);
    /* rho needs this GPU's roofs, which a CSV does not carry: no saving is
     * capped by it here */
    kg_diagnose(r.diag->kernels, n, &c, &o->diag, r.diag->causes, KG_CAUSES_MAX, &r.diag->n_causes);
    printf("%s: %d kernel(s)%s%s%s\n", o->from_ncu, n, have_shape ? ", as " : "",
           have_shape ? op->name : "", have_shape ? " (its work model)" : " (no --op/--shape: no work model)");
    kg_report_print_diagnosis(&r, NULL, stdout, 1);
out:
    free(r.diag);
    return err->code;
}

int kg_cmd_explain(const kg_options *o)
{
    kg_err err = {0, ""};
    if (o->help) {
        fputs(kg_usage("explain"), stdout);
        return 0;
    }
    if (o->rules) {
        print_rules(stdout);
        return 0;
    }
    if (o->from_ncu) {
        if (explain_ncu(o, &err))
            goto fail;
        return 0;
    }
    kg_report rep;
    kg_report_init(&rep);
    if ((o->json && kg_output_path_check("--json", o->json, &o->candidate, 1, &err)) ||
        kg_report_read_json(o->candidate, &rep, &err)) {
        kg_report_free(&rep);
        goto fail;
    }
    int shown = 0;
    for (int i = 0; i < rep.n; i++) {
        kg_result *x = &rep.results[i];
        if (!x->diag)
            continue;
        kg_explain_result(x, &o->diag);
        printf("%s %s %s: %s: %s\n", x->kernel, x->dtype, x->shape, kg_verdict_name(x->verdict), x->reason);
        kg_report_print_diagnosis(x, &rep.gate, stdout, 1);
        shown++;
    }
    if (shown && o->json && kg_report_write_json(&rep, o->json, &err)) {
        kg_report_free(&rep);
        goto fail;
    }
    kg_report_free(&rep);
    if (!shown) {
        kg_err_set(&err, KG_EXIT_USAGE, "%s: no result carries a diagnosis (kgate check --diagnose --json)",
                   o->candidate);
        goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "kgate: %s\n", err.msg);
    return err.code;
}
