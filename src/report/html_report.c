/* HTML, Markdown and CSV reports of recorded results (report/html_report.h). */
#include "html_report.h"

#include <math.h>
#include <string.h>

#include "../diagnose/diag_json.h"
#include "../catalog/op.h"

/* ---------------------------------------------------------------- helpers */

/* Text into HTML: the five characters that matter escaped, control bytes dropped. */
static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

static double sum_of(const kg_result *r, const char *name)
{
    double v = NAN;
    kg_result_get(r, name, &v);
    return v;
}

static const char *verdict_color(kg_verdict v)
{
    switch (v) {
    case KG_V_OK: return "#1a9850";
    case KG_V_SLOW: return "#f28e2b";
    case KG_V_IMPOSSIBLE: return "#8e44ad";
    case KG_V_SKIPPED: return "#999999";
    default: return "#d62728";
    }
}

static const char *top_cause(const kg_result *x, char *buf, size_t size)
{
    buf[0] = '\0';
    const kg_cause *top = kg_diag_top(x->diag); /* as the text table */
    if (top)
        snprintf(buf, size, "%s %.2f", top->id, top->score);
    else if (x->diag)
        snprintf(buf, size, "-");
    return buf;
}

/* ---------------------------------------------------------------- roofline */

/* A power of ten in SI form: 1G, 10T, 100P (what an axis of FLOP/s reads). */
static const char *si_of(double v, char *buf, size_t size)
{
    static const char *const prefix[] = {"", "k", "M", "G", "T", "P", "E"};
    int k = 0;
    for (; k < 6 && v >= 999; k++)
        v /= 1000;
    snprintf(buf, size, "%.0f%s", v, prefix[k]);
    return buf;
}

#define W 760.0
#define H 460.0
#define ML 70.0 /* margins */
#define MR 20.0
#define MT 20.0
#define MB 50.0
#define XMIN 1e-2
#define XMAX 1e4

typedef struct plot {
    double ymin, ymax; /* FLOP/s, decades */
} plot;

static double px(double x) { return ML + (log10(x) - log10(XMIN)) / (log10(XMAX) - log10(XMIN)) * (W - ML - MR); }
static double py(const plot *p, double y)
{
    return H - MB - (log10(y) - log10(p->ymin)) / (log10(p->ymax) - log10(p->ymin)) * (H - MT - MB);
}

/* The roof at intensity x: bandwidth x intensity up to the matrix peak. */
static double roof_at(const kg_roofs *r, double x) { return fmin(r->bw * x, r->mma[KG_FP16]); }

/* Where a result sits: its intensity (clamped to the plot) and rho x the roof there. */
static int place(const kg_report *rep, const kg_result *x, double *ix, double *iy)
{
    double rho = sum_of(x, "roof/fraction"), in = sum_of(x, "roof/intensity");
    if (!(rho > 0) || (x->verdict != KG_V_OK && x->verdict != KG_V_SLOW && x->verdict != KG_V_IMPOSSIBLE))
        return 0;
    *ix = fmin(fmax(in > 0 ? in : XMIN, XMIN), XMAX);
    *iy = rho * roof_at(&rep->roofs, *ix);
    return *iy > 0;
}

static void roofline(const kg_report *rep, int idx, FILE *f)
{
    const kg_roofs *r = &rep->roofs;
    if (!(r->bw > 0) || !(r->mma[KG_FP16] > 0)) {
        fprintf(f, "<p>No roofline: the report has no measured roofs.</p>\n");
        return;
    }
    plot p = {pow(10, floor(log10(r->bw * XMIN * 1e-3))), pow(10, ceil(log10(r->mma[KG_FP16] * 2)))};
    double ridge = r->mma[KG_FP16] / r->bw;
    fprintf(f, "<svg id=\"roofline-%d\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
            idx, W, H, W, H);
    fprintf(f, "<defs><marker id=\"ah%d\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
               "<path d=\"M0,0 L8,4 L0,8 z\" fill=\"#555\"/></marker></defs>\n",
            idx);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n", ML, MT,
            W - ML - MR, H - MT - MB);
    /* decade grid and labels */
    for (double x = XMIN; x <= XMAX * 1.001; x *= 10)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                px(x), MT, px(x), H - MB, px(x), H - MB + 15, x);
    for (double y = p.ymin; y <= p.ymax * 1.001; y *= 10) {
        char si[16];
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ML, py(&p, y), W - MR, py(&p, y), ML - 5, py(&p, y) + 4, si_of(y, si, sizeof si));
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/B)</text>\n",
            (ML + W - MR) / 2, H - 12);
    fprintf(f, "<text transform=\"translate(14,%.1f) rotate(-90)\" text-anchor=\"middle\">FLOP/s (SI: G = 10^9, T = 10^12)</text>\n",
            (MT + H - MB) / 2);
    /* the roofs */
    fprintf(f, "<polyline class=\"roof\" fill=\"none\" stroke=\"#333\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f "
               "%.1f,%.1f\"><title>memory %.2f TB/s, fp16 matrix %.0f TFLOP/s (measured)</title></polyline>\n",
            px(XMIN), py(&p, r->bw * XMIN), px(ridge), py(&p, r->mma[KG_FP16]), px(XMAX), py(&p, r->mma[KG_FP16]),
            r->bw * 1e-12, r->mma[KG_FP16] * 1e-12);
    if (r->mma[KG_BF16] > 0 && fabs(r->mma[KG_BF16] / r->mma[KG_FP16] - 1) > 0.01)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"4 3\">"
                   "<title>bf16 matrix %.0f TFLOP/s</title></line>\n",
                px(r->mma[KG_BF16] / r->bw), py(&p, r->mma[KG_BF16]), px(XMAX), py(&p, r->mma[KG_BF16]),
                r->mma[KG_BF16] * 1e-12);
    fprintf(f, "<line class=\"ridge\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
               "stroke-dasharray=\"2 3\"/><text x=\"%.1f\" y=\"%.1f\">ridge %.0f FLOP/B</text>\n",
            px(ridge), MT, px(ridge), H - MB, px(ridge) + 4, MT + 12, ridge);
    /* cliffs: from the first result of a group to each with a cliff */
    for (int i = 0; i < rep->n; i++) {
        const kg_result *x = &rep->results[i];
        double c = sum_of(x, "cliff"), ax, ay, bx, by;
        if (!(c > 0))
            continue;
        for (int k = 0; k < i; k++) {
            const kg_result *y = &rep->results[k];
            if (strcmp(y->source, x->source) || strcmp(y->op, x->op) || strcmp(y->dtype, x->dtype) ||
                strcmp(y->shape, x->shape))
                continue;
            if (place(rep, y, &ax, &ay) && place(rep, x, &bx, &by))
                fprintf(f, "<line class=\"cliff\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                           "stroke-width=\"1\" marker-end=\"url(#ah%d)\"><title>%.1fx</title></line>\n",
                        px(ax), py(&p, ay), px(bx), py(&p, by), idx, c);
            break;
        }
    }
    for (int i = 0; i < rep->n; i++) {
        const kg_result *x = &rep->results[i];
        double ix, iy;
        char t[32];
        if (!place(rep, x, &ix, &iy))
            continue;
        kg_fmt_time(kg_result_time(x), t, sizeof t);
        fprintf(f, "<circle class=\"kernel\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.8\"><title>",
                px(ix), py(&p, iy), verdict_color(x->verdict));
        esc(f, x->kernel);
        fprintf(f, " %s %s: %s, %s, rho %.2f</title></circle>\n", x->dtype, x->shape, kg_verdict_name(x->verdict), t,
                sum_of(x, "roof/fraction"));
    }
    fprintf(f, "</svg>\n");
}

/* ------------------------------------------------------------------ HTML */

static void cell_num(FILE *f, const kg_result *x, const char *name, const char *fmt)
{
    double v = sum_of(x, name);
    fputs("<td class=\"n\">", f);
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("-", f);
    fputs("</td>", f);
}

int kg_report_html(const kg_report *const *reps, int n, FILE *f, kg_err *err)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          /* no script runs and nothing loads, whatever a candidate named its kernel */
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "img-src data:\"><title>kgate report</title>\n<style>"
          "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}"
          "td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}td.n{text-align:right;white-space:nowrap}"
          "td.w{white-space:nowrap}td.r{min-width:26em}"
          ".OK{color:#1a9850}.SLOW{color:#f28e2b}.IMPOSSIBLE{color:#8e44ad}.INCORRECT,.CRASH,.TIMEOUT{color:#d62728}"
          "code{font-size:11px}</style></head><body>\n<h1>kgate report</h1>\n",
          f);
    for (int r = 0; r < n; r++) {
        const kg_report *rep = reps[r];
        fputs("<h2>", f);
        esc(f, rep->device);
        fputs("</h2>\n<p>", f);
        esc(f, rep->command);
        fputs("<br>commit ", f);
        esc(f, rep->commit);
        fputs(", ", f);
        esc(f, rep->date);
        fputs(", GPU ", f);
        esc(f, rep->device_uuid);
        fprintf(f, "<br>roofs (%s): %.2f TB/s, fp16 %.0f, bf16 %.0f TFLOP/s; gate: OK if E_best &gt;= %.2f or rho "
                   "&gt;= %.2f; a launch call's host time is free to max(%.0f us, the GPU time) beyond it</p>\n",
                rep->roofs.source, rep->roofs.bw * 1e-12, rep->roofs.mma[KG_FP16] * 1e-12,
                rep->roofs.mma[KG_BF16] * 1e-12, rep->gate.e_ok, rep->gate.rho_ok, rep->gate.host_allowance * 1e6);
        roofline(rep, r, f);
    }
    fputs("<h2>Verdicts</h2>\n<table id=\"verdicts\"><tr><th>kernel</th><th>op</th><th>dtype</th><th>shape</th>"
          "<th>verdict</th><th>time</th><th>best</th><th>E_best</th><th>E_lib</th><th>rho</th><th>cliff</th>"
          "<th>cause</th><th>flags</th><th>reason</th></tr>\n",
          f);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < reps[r]->n; i++) {
            const kg_result *x = &reps[r]->results[i];
            char t[32], tb[32], fl[256], cause[24];
            kg_fmt_time(kg_result_time(x), t, sizeof t);
            kg_fmt_time(sum_of(x, "best/time/median"), tb, sizeof tb);
            kg_flags_text(x->flags, fl, sizeof fl);
            fputs("<tr><td><code>", f);
            esc(f, x->kernel);
            fputs("</code></td><td>", f);
            esc(f, x->op);
            fputs("</td><td>", f);
            esc(f, x->dtype);
            fputs("</td><td>", f);
            esc(f, x->shape);
            fprintf(f, "</td><td class=\"%s\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>",
                    kg_verdict_name(x->verdict), kg_verdict_name(x->verdict), t, tb);
            cell_num(f, x, "best/efficiency", "%.2f");
            cell_num(f, x, "lib/efficiency", "%.2f");
            cell_num(f, x, "roof/fraction", "%.2f");
            cell_num(f, x, "cliff", "%.1fx");
            fputs("<td class=\"w\">", f);
            esc(f, top_cause(x, cause, sizeof cause));
            fputs("</td><td>", f);
            esc(f, fl);
            fputs("</td><td class=\"r\">", f);
            esc(f, x->reason);
            fputs("</td></tr>\n", f);
        }
    fputs("</table>\n", f);
    for (int r = 0; r < n; r++) {
        kg_family_row rows[KG_FAMILY_COUNT];
        kg_report_families(reps[r], rows);
        fprintf(f, "<h2>Per family%s</h2>\n<table id=\"families\"><tr><th>family</th><th>kernels</th>"
                   "<th>E_lib</th><th>E_best</th><th>rho</th><th>SLOW</th></tr>\n",
                n > 1 ? " (each report)" : "");
        for (int k = 0; k < KG_FAMILY_COUNT; k++) {
            if (!rows[k].n)
                continue;
            fprintf(f, "<tr><td>%s</td><td class=\"n\">%d</td>", kg_family_name((kg_family)k), rows[k].n);
            double v[3] = {rows[k].e_lib, rows[k].e_best, rows[k].rho};
            for (int j = 0; j < 3; j++)
                isfinite(v[j]) ? fprintf(f, "<td class=\"n\">%.2f</td>", v[j]) : fprintf(f, "<td class=\"n\">-</td>");
            fprintf(f, "<td class=\"n\">%d</td></tr>\n", rows[k].n_slow);
        }
        fputs("</table>\n", f);
    }
    int any = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < reps[r]->n; i++)
            any |= reps[r]->results[i].diag != NULL;
    if (any) {
        fputs("<section id=\"diagnosis\"><h2>Why (diagnosis)</h2>\n", f);
        for (int r = 0; r < n; r++)
            for (int i = 0; i < reps[r]->n; i++) {
                const kg_result *x = &reps[r]->results[i];
                if (!x->diag || !x->diag->n_causes)
                    continue;
                fputs("<h3><code>", f);
                esc(f, x->kernel);
                fputs("</code> ", f);
                esc(f, x->shape);
                fprintf(f, " <span class=\"%s\">%s</span></h3>\n<ol>\n", kg_verdict_name(x->verdict),
                        kg_verdict_name(x->verdict));
                for (int c = 0; c < x->diag->n_causes && c < 5; c++) {
                    const kg_cause *k = &x->diag->causes[c];
                    fprintf(f, "<li><b>%s</b> (score %.2f, up to %.1fx): ", k->id, k->score, k->headroom);
                    esc(f, k->title);
                    fputs("<br>evidence: ", f);
                    esc(f, k->evidence);
                    fputs("<br>fix: ", f);
                    esc(f, k->hint);
                    fputs("</li>\n", f);
                }
                fputs("</ol>\n", f);
            }
        fputs("</section>\n", f);
    }
    fputs("</body></html>\n", f);
    if (fflush(f) || ferror(f))
        return kg_err_set(err, KG_EXIT_IO, "writing the HTML report failed");
    return 0;
}

/* -------------------------------------------------------------- Markdown */

static void md(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|' || *s == '\\' || *s == '`' || *s == '*' || *s == '_' || *s == '<' || *s == '>')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

int kg_report_markdown(const kg_report *const *reps, int n, FILE *f, kg_err *err)
{
    fputs("| kernel | op | dtype | shape | verdict | time | E_best | E_lib | rho | cause |\n"
          "|---|---|---|---|---|---:|---:|---:|---:|---|\n",
          f);
    int slow = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < reps[r]->n; i++) {
            const kg_result *x = &reps[r]->results[i];
            char t[32], cause[24];
            double eb = sum_of(x, "best/efficiency"), el = sum_of(x, "lib/efficiency"), rho = sum_of(x, "roof/fraction");
            kg_fmt_time(kg_result_time(x), t, sizeof t);
            fputs("| ", f);
            md(f, x->kernel);
            fputs(" | ", f);
            md(f, x->op);
            fputs(" | ", f);
            md(f, x->dtype);
            fputs(" | ", f);
            md(f, x->shape);
            fprintf(f, " | %s | %s | ", kg_verdict_name(x->verdict), t);
            isfinite(eb) ? fprintf(f, "%.2f | ", eb) : fprintf(f, "- | ");
            isfinite(el) ? fprintf(f, "%.2f | ", el) : fprintf(f, "- | ");
            isfinite(rho) ? fprintf(f, "%.2f | ", rho) : fprintf(f, "- | ");
            md(f, top_cause(x, cause, sizeof cause));
            fputs(" |\n", f);
            slow += x->verdict == KG_V_SLOW;
        }
    if (slow) {
        fprintf(f, "\n**Passes but slow** (%d correct kernel%s judged SLOW):\n\n", slow, slow > 1 ? "s" : "");
        for (int r = 0; r < n; r++)
            for (int i = 0; i < reps[r]->n; i++) {
                const kg_result *x = &reps[r]->results[i];
                if (x->verdict != KG_V_SLOW)
                    continue;
                fputs("- ", f);
                md(f, x->kernel);
                fputs(" ", f);
                md(f, x->shape);
                fputs(": ", f);
                md(f, x->reason);
                fputs("\n", f);
            }
    }
    if (fflush(f) || ferror(f))
        return kg_err_set(err, KG_EXIT_IO, "writing the Markdown report failed");
    return 0;
}

/* ------------------------------------------------------------------- CSV */

static void csv(FILE *f, const char *s)
{
    if (s && strcmp(s, "-") == 0) /* the text table's "none" (no cause, no flag): an empty field */
        s = "";
    fputc('"', f);
    /* a spreadsheet runs a field that starts with = + - @ as a formula */
    if (s && (*s == '=' || *s == '+' || *s == '-' || *s == '@'))
        fputc('\'', f);
    for (; s && *s; s++) {
        if (*s == '"')
            fputc('"', f);
        if ((unsigned char)*s >= 0x20 || *s == '\t')
            fputc(*s, f);
    }
    fputc('"', f);
}

static const char *const known[] = {
#define X(n, u, d) n,
    KG_SUMMARIES(X)
#undef X
};

int kg_report_csv(const kg_report *const *reps, int n, FILE *f, kg_err *err)
{
    const size_t nk = sizeof known / sizeof known[0];
    fputs("device,commit,kernel,op,dtype,index_dtype,shape,verdict,reason,flags,cause", f);
    for (size_t k = 0; k < nk; k++) {
        fputc(',', f);
        csv(f, known[k]);
    }
    fputs("\r\n", f);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < reps[r]->n; i++) {
            const kg_result *x = &reps[r]->results[i];
            char fl[256], cause[24];
            kg_flags_text(x->flags, fl, sizeof fl);
            const char *fields[] = {reps[r]->device, reps[r]->commit, x->kernel, x->op, x->dtype, x->index_dtype,
                                    x->shape, kg_verdict_name(x->verdict), x->reason, fl,
                                    top_cause(x, cause, sizeof cause)};
            for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
                if (k)
                    fputc(',', f);
                csv(f, fields[k]);
            }
            for (size_t k = 0; k < nk; k++) {
                double v = sum_of(x, known[k]);
                fputc(',', f);
                if (isfinite(v))
                    fprintf(f, "%.9g", v);
            }
            fputs("\r\n", f);
        }
    if (fflush(f) || ferror(f))
        return kg_err_set(err, KG_EXIT_IO, "writing the CSV report failed");
    return 0;
}
