/* The commands that read recorded results and need no GPU: compare (and,
 * with report/report_html.h, report). Thin: the logic is report/compare.c. */
#include "results_cmds.h"

#include "../report/trajectory.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../report/compare.h"
#include "../report/html_report.h"
#include "../report/report.h"
#include "../store/ledger.h"

int kg_cmd_compare(const kg_options *o)
{
    kg_err err = {0, ""};
    kg_report a, b;
    kg_compare_row *rows = NULL;
    int n = 0, rc = 0;
    kg_compare_cfg cfg;
    if (o->help) {
        fputs(kg_usage("compare"), stdout);
        return 0;
    }
    kg_report_init(&a);
    kg_report_init(&b);
    kg_compare_defaults(&cfg);
    cfg.same = o->same;
    cfg.regress = o->regress;
    /* with --ledger: B is the one file given, A the ledger's newest suite run on B's GPU */
    char from_ledger[PATH_MAX];
    const char *pa = o->ledger ? from_ledger : o->candidate, *pb = o->ledger ? o->candidate : o->second;
    const char *inputs[3] = {o->candidate, o->second, o->ledger};
    if ((o->json && kg_output_path_check("--json", o->json, inputs, 3, &err)) || kg_report_read_json(pb, &b, &err) ||
        (o->ledger && kg_ledger_newest_suite(o->ledger, b.device, from_ledger, sizeof from_ledger, &err)) ||
        kg_report_read_json(pa, &a, &err) || kg_compare(&a, &b, &cfg, &rows, &n, &err))
        goto out;
    rc = kg_compare_print(&a, &b, rows, n, stdout) > 0;
    if (o->json)
        kg_compare_write_json(&a, &b, pa, pb, &cfg, rows, n, o->cmdline, o->json, &err);
out:
    free(rows);
    kg_report_free(&a);
    kg_report_free(&b);
    if (err.code) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    return rc;
}

/* The format: --format, else FILE's extension, else HTML. */
/* --format, else the output's extension (.html or .htm, .md, .csv), else
 * Markdown for standard output; NULL for another extension. */
static const char *format_of(const kg_options *o)
{
    if (o->format)
        return o->format;
    if (strcmp(o->output, "-") == 0)
        return "md"; /* a terminal's reading */
    const char *dot = strrchr(o->output, '.'), *slash = strrchr(o->output, '/');
    if (!dot || (slash && dot < slash))
        return NULL;
    if (strcmp(dot, ".md") == 0)
        return "md";
    if (strcmp(dot, ".csv") == 0)
        return "csv";
    return strcmp(dot, ".html") == 0 || strcmp(dot, ".htm") == 0 ? "html" : NULL;
}

int kg_cmd_report(const kg_options *o)
{
    kg_err err = {0, ""};
    kg_report reps[KG_MAX_SHAPES];
    const kg_report *ptr[KG_MAX_SHAPES];
    int n = 0;
    if (o->help) {
        fputs(kg_usage("report"), stdout);
        return 0;
    }
    if (strcmp(o->output, "-") != 0 && kg_output_path_check("-o", o->output, o->inputs, o->n_inputs, &err))
        goto out;
    const char *fmt = format_of(o);
    if (!fmt) {
        kg_err_set(&err, KG_EXIT_USAGE, "report -o %.200s: not .html, .md or .csv: give --format", o->output);
        goto out;
    }
    for (; n < o->n_inputs; n++) {
        kg_report_init(&reps[n]);
        if (kg_report_read_json(o->inputs[n], &reps[n], &err)) {
            kg_report_free(&reps[n]);
            goto out;
        }
        ptr[n] = &reps[n];
    }
    {
        /* written whole, then renamed into place: a failed report leaves nothing */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f) {
            kg_err_set(&err, KG_EXIT_ENV, "out of memory");
            goto out;
        }
        int rc = strcmp(fmt, "md") == 0    ? kg_report_markdown(ptr, n, f, &err)
                 : strcmp(fmt, "csv") == 0 ? kg_report_csv(ptr, n, f, &err)
                                           : kg_report_html(ptr, n, f, &err);
        fclose(f);
        if (!rc) {
            if (strcmp(o->output, "-") == 0)
                fwrite(text, 1, len, stdout);
            else
                kg_write_file_atomic(o->output, text, &err);
        }
        free(text);
    }
out:
    for (int i = 0; i < n; i++)
        kg_report_free(&reps[i]);
    if (err.code) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    return 0;
}

/* The trajectory's page, written whole then renamed into place (- : stdout). */
static int trajectory_page(const char *out, const kg_trajectory *t, kg_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory");
    double e_ok = t->n && t->v[0].rep.gate.e_ok > 0 ? t->v[0].rep.gate.e_ok : 0.80;
    int rc = kg_traj_html(t, e_ok, f);
    fclose(f);
    if (rc)
        kg_err_set(err, KG_EXIT_ENV, "out of memory for the page");
    else if (strcmp(out, "-") == 0)
        fwrite(text, 1, len, stdout);
    else
        kg_write_file_atomic(out, text, err);
    free(text);
    return err->code;
}

int kg_cmd_trajectory(const kg_options *o)
{
    kg_err err = {0, ""};
    kg_trajectory t = {NULL, 0, 0};
    if (o->help) {
        fputs(kg_usage("trajectory"), stdout);
        return 0;
    }
    if (o->n_inputs == 0) {
        fprintf(stderr, "kgate: trajectory: give the loop's results files or folders (kgate help trajectory)\n");
        return KG_EXIT_USAGE;
    }
    const char *dot = o->output ? strrchr(o->output, '.') : NULL;
    if (o->output && strcmp(o->output, "-") != 0 && !(dot && strcmp(dot, ".html") == 0)) {
        fprintf(stderr, "kgate: trajectory -o %.200s: the page is HTML: name it .html (or - for stdout)\n", o->output);
        return KG_EXIT_USAGE;
    }
    if (o->output && strcmp(o->output, "-") != 0 &&
        kg_output_path_check("-o", o->output, o->inputs, o->n_inputs, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    for (int i = 0; i < o->n_inputs && !err.code; i++)
        kg_traj_add_path(&t, o->inputs[i], &err);
    if (!err.code && t.n == 0)
        kg_err_set(&err, KG_EXIT_IO, "%s: no iteration (no results file, answer or iteration folder)", o->inputs[0]);
    if (!err.code && o->output)
        trajectory_page(o->output, &t, &err);
    else if (!err.code)
        kg_traj_print(&t, stdout);
    kg_traj_free(&t);
    if (err.code) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    return 0;
}
