/* HTML, Markdown and CSV reports of recorded results (report/html_report.h). */
#include "html_report.h"

#include <math.h>
#include <string.h>

#include "../diagnose/diag_json.h"
#include "../catalog/op.h"
#include "html_roofline.h"
#include "html_text.h"

static double sum_of(const kg_result *r, const char *name)
{
    double v = NAN;
    kg_result_get(r, name, &v);
    return v;
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

/* ------------------------------------------------------------------ HTML */

/* The page's style: the plots scale to the page, and below 1000 px the
 * verdict table's reason goes under its row, across the whole table. */
static void style(FILE *f)
{
    fputs("<style>"
          "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px;overflow-wrap:anywhere}"
          "svg.plot{display:block;width:100%;max-width:1100px;height:auto;margin:6px 0 4px}svg[id^=bandwidth]{max-width:960px}"
          ".legend{display:flex;flex-wrap:wrap;gap:4px 18px;font-size:12px;max-width:960px;align-items:center}"
          ".legend svg{vertical-align:middle}.note{font-size:12px;color:#555;max-width:960px}"
          "b.num{font-size:11px;border:1px solid #aaa;border-radius:3px;padding:0 3px}"
          "ol.key{columns:21em;column-gap:16px;list-style:none;padding:0;font-size:11px}"
          "ol.key li{break-inside:avoid;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}"
          "ol.key b{display:inline-block;min-width:2.2em;text-align:right}"
          ".sh{color:#666}small{color:#666}"
          "table{border-collapse:collapse;font-size:12px}#verdicts{width:100%}"
          "td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}"
          "td.n{text-align:right;white-space:nowrap}td.r{min-width:14em}td.v span,td.v small{display:block}"
          "code{font-size:11px}",
          f);
    static const kg_verdict v[] = {KG_V_OK, KG_V_SLOW, KG_V_IMPOSSIBLE, KG_V_INCORRECT, KG_V_CRASH, KG_V_TIMEOUT,
                                   KG_V_SKIPPED};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        fprintf(f, ".%s{color:%s}", kg_verdict_name(v[k]), kg_html_verdict_color(v[k]));
    fputs("@media (max-width:1000px){"
          "#verdicts{display:grid;grid-template-columns:auto minmax(0,2fr) auto auto minmax(0,1.4fr) auto auto auto "
          "auto auto}"
          "#verdicts thead,#verdicts tbody,#verdicts tr{display:contents}"
          "#verdicts th,#verdicts td{display:block;border:none}"
          "#verdicts td.i{grid-column:1}"
          "#verdicts td.r{grid-column:1/-1;padding:0 6px 5px 3.2em;border-bottom:1px solid #ddd;min-width:0}"
          "#verdicts th.r{display:none}}"
          "</style>",
          f);
}

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

/* One result's row: the number of its point, the kernel with its
 * operator, dtype and shape under it, the verdict with its flags, the
 * times, what t_best is, the ratios, the top cause, the reason. */
static void verdict_row(FILE *f, const kg_result *x, int num)
{
    char t[32], tb[32], fl[256], cause[24];
    kg_fmt_time(kg_result_time(x), t, sizeof t);
    kg_fmt_time(sum_of(x, "best/time/median"), tb, sizeof tb);
    kg_flags_text(x->flags, fl, sizeof fl);
    fprintf(f, "<tr><td class=\"n i\">%d</td><td>", num);
    kg_html_short(f, "code", NULL, x->kernel, 30, 9);
    fputs("<br><small>", f);
    kg_html_esc(f, x->op);
    fputs(" &middot; ", f);
    kg_html_esc(f, x->dtype);
    if (x->index_dtype[0]) {
        fputs(" (", f);
        kg_html_esc(f, x->index_dtype);
        fputs(" index)", f);
    }
    fputs(" &middot; ", f);
    kg_html_short(f, "span", NULL, x->shape, 22, 8);
    fprintf(f, "</small></td><td class=\"v\"><span class=\"%s\">%s</span>", kg_verdict_name(x->verdict),
            kg_verdict_name(x->verdict));
    /* one flag a line, so that they wrap */
    for (char *s = fl, *e; *s; s = *e ? e + 1 : e) {
        e = strchr(s, ',');
        e = e ? e : s + strlen(s);
        char one[64];
        snprintf(one, sizeof one, "%.*s", (int)(e - s), s);
        fputs("<small>", f);
        kg_html_esc(f, one);
        fputs("</small> ", f);
    }
    fprintf(f, "</td><td class=\"n\">%s</td><td>", t);
    if (x->best[0]) {
        kg_html_short(f, "code", NULL, strcmp(x->best, x->kernel) ? x->best : "this kernel", 24, 6);
        fputs("<br>", f);
    }
    fprintf(f, "<small>%s</small></td>", tb);
    cell_num(f, x, "best/efficiency", "%.2f");
    cell_num(f, x, "lib/efficiency", "%.2f");
    cell_num(f, x, "roof/fraction", "%.2f");
    cell_num(f, x, "cliff", "%.1fx");
    fputs("<td>", f);
    kg_html_esc(f, top_cause(x, cause, sizeof cause));
    fputs("</td><td class=\"r\">", f);
    kg_html_esc(f, x->reason);
    fputs("</td></tr>\n", f);
}

static void header(FILE *f, const kg_report *rep)
{
    fputs("<h2>", f);
    kg_html_esc(f, rep->device);
    fputs("</h2>\n<p>", f);
    kg_html_esc(f, rep->command);
    fputs("<br>commit ", f);
    kg_html_esc(f, rep->commit);
    fputs(", ", f);
    kg_html_esc(f, rep->date);
    fputs(", GPU ", f);
    kg_html_esc(f, rep->device_uuid);
    fprintf(f, "<br>roofs (%s): %.2f TB/s, fp16 %.0f, bf16 %.0f TFLOP/s; gate: OK if E_best &gt;= %.2f or rho "
               "&gt;= %.2f; a launch call's host time is free to max(%.0f us, the GPU time) beyond it</p>\n",
            rep->roofs.source, rep->roofs.bw * 1e-12, rep->roofs.mma[KG_FP16] * 1e-12,
            rep->roofs.mma[KG_BF16] * 1e-12, rep->gate.e_ok, rep->gate.rho_ok, rep->gate.host_allowance * 1e6);
}

static void families(FILE *f, const kg_report *rep, int several)
{
    kg_family_row rows[KG_FAMILY_COUNT];
    kg_report_families(rep, rows);
    fprintf(f, "<h2>Per family%s</h2>\n<table id=\"families\"><tr><th>family</th><th>kernels</th>"
               "<th>E_lib</th><th>E_best</th><th>rho</th><th>SLOW</th></tr>\n",
            several ? " (each report)" : "");
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

static void diagnoses(FILE *f, const kg_report *const *reps, int n)
{
    fputs("<section id=\"diagnosis\"><h2>Why (diagnosis)</h2>\n", f);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < reps[r]->n; i++) {
            const kg_result *x = &reps[r]->results[i];
            if (!x->diag || !x->diag->n_causes)
                continue;
            fputs("<h3><code>", f);
            kg_html_esc(f, x->kernel);
            fputs("</code> ", f);
            kg_html_esc(f, x->shape);
            fprintf(f, " <span class=\"%s\">%s</span></h3>\n<ol>\n", kg_verdict_name(x->verdict),
                    kg_verdict_name(x->verdict));
            for (int c = 0; c < x->diag->n_causes && c < 5; c++) {
                const kg_cause *k = &x->diag->causes[c];
                fprintf(f, "<li><b>%s</b> (score %.2f, up to %.1fx): ", k->id, k->score, k->headroom);
                kg_html_esc(f, k->title);
                fputs("<br>evidence: ", f);
                kg_html_esc(f, k->evidence);
                fputs("<br>fix", f);
                if (k->locus)
                    fprintf(f, " (%s)", k->locus); /* one of the rule table's three words */
                fputs(": ", f);
                kg_html_esc(f, k->hint);
                fputs("</li>\n", f);
            }
            fputs("</ol>\n", f);
        }
    fputs("</section>\n", f);
}

int kg_report_html(const kg_report *const *reps, int n, FILE *f, kg_err *err)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          /* no script runs and nothing loads, whatever a candidate named its kernel */
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "img-src data:\"><title>kgate report</title>\n",
          f);
    style(f);
    fputs("</head><body>\n<h1>kgate report</h1>\n", f);
    for (int r = 0, first = 1; r < n; first += reps[r++]->n) {
        header(f, reps[r]);
        kg_html_plots(reps[r], r, first, f);
    }
    fputs("<h2>Verdicts</h2>\n<table id=\"verdicts\"><thead><tr><th>#</th><th>kernel</th><th>verdict</th>"
          "<th>time</th><th>best</th><th>E_best</th><th>E_lib</th><th>rho</th><th>cliff</th><th>cause</th>"
          "<th class=\"r\">reason</th></tr></thead><tbody>\n",
          f);
    for (int r = 0, first = 1; r < n; first += reps[r++]->n)
        for (int i = 0; i < reps[r]->n; i++)
            verdict_row(f, &reps[r]->results[i], first + i);
    fputs("</tbody></table>\n", f);
    for (int r = 0; r < n; r++)
        families(f, reps[r], n > 1);
    int any = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < reps[r]->n; i++)
            any |= reps[r]->results[i].diag != NULL;
    if (any)
        diagnoses(f, reps, n);
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

/* A text field: quoted (RFC 4180: a quote doubled); nothing at all where
 * there is no value (the text table's "-" for no cause included). */
static void csv(FILE *f, const char *s)
{
    if (!s || !*s || strcmp(s, "-") == 0)
        return;
    fputc('"', f);
    /* a spreadsheet runs a field that starts with = + - @ (or a tab) as a formula */
    if (*s == '=' || *s == '+' || *s == '-' || *s == '@' || *s == '\t')
        fputc('\'', f);
    for (; *s; s++) {
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
