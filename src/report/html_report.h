/* Reports of recorded results for people and tools other than the terminal:
 * one self-contained HTML page, Markdown for pull-request comments, and
 * CSV. `kgate report` writes them (docs/cli.md).
 *
 * The page: per report its run (command, commit, GPU, roofs, gate) and its
 * plots (report/html_roofline.h: a legend, the roofline, the bandwidth
 * panel of the kernels without FLOPs, the key of the numbered points); then
 * the verdict table, one row per result, numbered as its point: the kernel
 * (its operator, dtype and shape under it), the verdict and its flags, the
 * time, what t_best is (a library path, a bundled kernel, or the kernel
 * itself) and its time, E_best, E_lib, rho, the cliff, the top cause and
 * the reason; the per-family summary; the diagnoses. Long names are
 * shortened with the full text in a title. The page fits its window: the
 * plots scale, the reason wraps, and below 1000 px each row's reason goes
 * under it, across the table.
 *
 * Everything a candidate wrote (kernel names, summaries, details) is
 * escaped; the page loads nothing from anywhere and runs no script. Plain
 * C; no GPU. */
#ifndef KG_HTML_REPORT_H
#define KG_HTML_REPORT_H

#include <stdio.h>

#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The page for reps[0..n) (plots per report; results numbered from 1
 * across them). KG_EXIT_IO when the stream fails. Element ids: legend-I,
 * roofline-I, bandwidth-I, key-I, verdicts, families, diagnosis. */
int kg_report_html(const kg_report *const *reps, int n, FILE *f, kg_err *err);
/* The verdict table and the passes-but-slow list in Markdown. */
int kg_report_markdown(const kg_report *const *reps, int n, FILE *f, kg_err *err);
/* One CSV row per result (RFC 4180 quoting, CRLF): identity, verdict,
 * reason, flags, top cause, then every summary kgate knows (result.h) as a
 * column. A field without a value is empty (no cause, no flags); a text
 * that a spreadsheet would run as a formula (= + - @ or a tab first) gets a
 * leading '. */
int kg_report_csv(const kg_report *const *reps, int n, FILE *f, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
