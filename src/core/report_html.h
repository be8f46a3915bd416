/* Reports of recorded results for readers other than the terminal: one
 * self-contained HTML page, a Markdown summary for pull-request comments,
 * and CSV for spreadsheets and scripts. `kgate report` writes them from
 * one or more results files (several runs, GPUs or commits side by side).
 *
 * The HTML page, top to bottom:
 *   - the runs: date, commit, device, driver, roofs and gate of each report;
 *   - a roofline per device (<svg id="roofline-D">, D = 0, 1, ... in the
 *     order devices first appear; reports of one device share a plot and
 *     are told apart by marker shape). Log-log: arithmetic intensity
 *     (FLOP/B) across, attained FLOP/s up. Lines: the measured memory roof
 *     (roofs.bw, a copy's bandwidth) rising to the ridges, the fp16 and
 *     bf16 tensor-core roofs and the fp32 CUDA-core roof flat after theirs;
 *     each ridge (roof / bw) is marked.
 *   - one point per timed result (a median time and a rho), coloured by
 *     verdict, its <title> tooltip naming kernel, op, dtype, shape, verdict,
 *     time, rho and E_best:
 *       * work with FLOPs sits at (roof/intensity, rate/flops): its attained
 *         FLOP/s (rho x roof/peak x intensity when rate/flops is missing).
 *         A memory-bound kernel's rho is taken against the roof of its own
 *         read/write mix (roofline.h), up to 5% above the copy roof drawn,
 *         so a kernel at rho 1 may sit a little above the line;
 *       * FLOP-free work (copies, gathers, transposes: intensity 0, which a
 *         log axis cannot show) sits in a shaded band at the left edge, one
 *         column per operator, at rho x the memory roof line at that column:
 *         its distance below the line reads as its rho exactly as for the
 *         memory-bound points to its right;
 *   - an arrow (class="cliff") from each naive variant to each result whose
 *     "cliff" summary is measured against it: the first earlier result of
 *     the same candidate, op, dtype, index dtype and shape, the rule
 *     `kgate run` uses to set "cliff" (src/app/commands.c);
 *   - the verdict table (<table id="verdicts">, one row per result of every
 *     report): kernel, op, dtype, shape, verdict, time, best, E_best, E_lib,
 *     rho, cliff, top cause, flags; the per-family medians (<table
 *     id="families">, kg_report_families); the passes-but-slow list
 *     (<section id="slow">); every diagnosed result's causes with evidence
 *     and fix (<section id="diagnosis">).
 * Everything a candidate or a results file supplies (kernel names, details,
 * evidence) is HTML-escaped; the page loads nothing (no script, font, style
 * sheet or image from anywhere) and says so in a Content-Security-Policy.
 *
 * Plain C; no GPU. */
#ifndef KG_REPORT_HTML_H
#define KG_REPORT_HTML_H

#include <stdio.h>

#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the HTML page (above) for reps[0..n) to f. The reports stay the
 * caller's; nothing is kept. n may be 0 (a page that says so). Returns 0,
 * or KG_EXIT_IO with err naming the problem: reps NULL or holding a NULL,
 * out of memory, or the stream failed (a write error or a full buffer). */
int kg_report_html(const kg_report *const *reps, int n, FILE *f, kg_err *err);

/* Writes a Markdown summary for pull-request comments to f: per report a
 * line on the run, the verdict table (the HTML table's columns, with a run
 * column when n > 1) and the passes-but-slow list. Text is escaped for
 * GitHub-flavoured Markdown: '|' as "\|", Markdown punctuation with a
 * backslash, '<', '>' and '&' as entities, line breaks as spaces. Returns
 * 0 or KG_EXIT_IO as kg_report_html. */
int kg_report_markdown(const kg_report *const *reps, int n, FILE *f, kg_err *err);

/* Writes CSV to f: a header, then one record per result of every report.
 * Columns: run (1-based report index), date, commit, device, kernel, op,
 * dtype, index_dtype, shape, verdict, reason, flags (comma-separated), best
 * (what t_best is), baseline, top_cause, top_cause_score, then every
 * summary in result.h's KG_SUMMARIES list under its own name, in that
 * list's order, empty where the result lacks it. The verdict table's
 * numeric columns are among those: time = time/gpu/median, best =
 * best/time/median, E_best = best/efficiency, E_lib = lib/efficiency,
 * rho = roof/fraction, cliff = cliff (seconds and ratios, not formatted).
 * Quoting is RFC 4180 (a field with a comma, quote or space at either end
 * is quoted, quotes doubled; records end in CRLF); line breaks inside a
 * field become spaces, so each record is one line, and a text field that a
 * spreadsheet would take for a formula (leading = + - @) is prefixed with
 * a quote ('). Returns 0 or KG_EXIT_IO as kg_report_html. */
int kg_report_csv(const kg_report *const *reps, int n, FILE *f, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
