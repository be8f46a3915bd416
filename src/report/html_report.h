/* Reports of recorded results for people and tools other than the terminal:
 * one self-contained HTML page (an SVG roofline per device, the verdict
 * table, the per-family summary, the diagnoses), Markdown for pull-request
 * comments, and CSV. `kgate report` writes them (docs/cli.md).
 *
 * The roofline: log-log, arithmetic intensity (FLOP/B) across, FLOP/s up;
 * the measured memory roof rising to the ridge and the fp16 matrix roof
 * flat after it. A timed kernel sits at its intensity and at rho x the roof
 * there, which is its attained FLOP/s when it does FLOPs; kernels without
 * FLOPs (copies, gathers) sit at the left edge at rho x the memory roof
 * there. An arrow runs from each naive variant to the variants of the same
 * operator, dtype and shape that it is the cliff of.
 *
 * Everything a candidate wrote (kernel names, summaries, details) is
 * escaped; the page loads nothing from anywhere. Plain C; no GPU. */
#ifndef KG_HTML_REPORT_H
#define KG_HTML_REPORT_H

#include <stdio.h>

#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The page for reps[0..n) (one roofline per report). KG_EXIT_IO when the
 * stream fails. Element ids: roofline-I, verdicts, families, diagnosis. */
int kg_report_html(const kg_report *const *reps, int n, FILE *f, kg_err *err);
/* The verdict table and the passes-but-slow list in Markdown. */
int kg_report_markdown(const kg_report *const *reps, int n, FILE *f, kg_err *err);
/* One CSV row per result (RFC 4180 quoting): identity, verdict, reason,
 * flags, top cause, then every summary kgate knows (result.h) as a column. */
int kg_report_csv(const kg_report *const *reps, int n, FILE *f, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
