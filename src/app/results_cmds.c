/* The commands that read recorded results and need no GPU: compare (and,
 * with core/report_html.h, report). Thin: the logic is core/compare.c. */
#include "results_cmds.h"

#include <stdio.h>
#include <stdlib.h>

#include "../core/compare.h"
#include "../core/report.h"

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
    if (kg_report_read_json(o->candidate, &a, &err) || kg_report_read_json(o->second, &b, &err) ||
        kg_compare(&a, &b, &cfg, &rows, &n, &err))
        goto out;
    rc = kg_compare_print(&a, &b, rows, n, stdout) > 0;
    if (o->json)
        kg_compare_write_json(&a, &b, o->candidate, o->second, &cfg, rows, n, o->cmdline, o->json, &err);
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
