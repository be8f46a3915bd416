/* The plots of the HTML report, per report: a legend, the roofline, the
 * bandwidth panel and the key that names their numbered points.
 *
 * Every timed result (OK, SLOW, IMPOSSIBLE) is drawn once, coloured by
 * verdict and numbered as in the verdict table (its position in the page's
 * results, from 1); the key maps each number to the kernel and shape.
 *
 * The roofline (log-log): arithmetic intensity (essential FLOP per
 * essential byte) across, attained FLOP/s (essential FLOPs over the time
 * judged: rho x the kernel's own roof) up. The memory roof rises (the copy
 * rate, solid; the read-only stream dotted where it is faster) to each
 * compute roof in use: one per dtype for tensor-core operators (fp16,
 * bf16, tf32 for fp32 inputs) and the CUDA-core fp32 roof for the others.
 * An arrow runs from each naive variant to the variants of the same
 * operator, dtype and shape that it is the cliff of.
 *
 * The bandwidth panel: the kernels that do no FLOPs (copies, gathers,
 * transposes) are not on the roofline (they have no intensity and no FLOP
 * rate); each is a bar of its attained bytes/s over a grey bar of its own
 * memory roof.
 *
 * Numbers that would fall on each other are written once (e.g. "14,17"),
 * and each label is placed clear of the others and of the points, and off
 * the lines where that costs little distance (report/labels.h), with a
 * line to its point when it had to move away. Past 600 points the roofline
 * numbers none (placing labels grows with the square of their count); the
 * key and the points' tooltips still name them.
 *
 * Rates and roofs outside 1 to 1e30 per second are a file's nonsense and
 * are not drawn. Element ids: legend-I, roofline-I, bandwidth-I, key-I. Plain C; no GPU. */
#ifndef KG_HTML_ROOFLINE_H
#define KG_HTML_ROOFLINE_H

#include <stdio.h>

#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plots of rep, the idx-th report of the page, whose first result is
 * numbered first. */
void kg_html_plots(const kg_report *rep, int idx, int first, FILE *f);

/* The colour of a verdict's points and text (the page's CSS uses it too). */
const char *kg_html_verdict_color(kg_verdict v);

#ifdef __cplusplus
}
#endif
#endif
