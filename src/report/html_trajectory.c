/* A loop's trajectory as one self-contained HTML page (kgate trajectory
 * -o F.html): E_best and rho against iteration, the OK band shaded, each
 * iteration's marker coloured by its verdict, then the table. Every label
 * comes from a candidate's files and is escaped; the page loads nothing. */
#include "trajectory.h"

#include <math.h>
#include <string.h>

#include "html_roofline.h"
#include "html_text.h"

#define W 900.0 /* the plot's box */
#define H 360.0
#define L 60.0 /* its margins: left, right, top, bottom */
#define R 20.0
#define T 20.0
#define B 40.0

/* The result an iteration is plotted by: its correct one of the highest
 * E_best, else its first; NULL without results. */
static const kg_result *lead(const kg_traj_iter *it)
{
    const kg_result *best = NULL;
    double be = -1, e;
    for (int k = 0; k < it->rep.n; k++) {
        const kg_result *x = &it->rep.results[k];
        int judged = x->verdict == KG_V_OK || x->verdict == KG_V_SLOW;
        if (judged && kg_result_get(x, "best/efficiency", &e) && e > be) {
            be = e;
            best = x;
        }
    }
    return best ? best : it->rep.n ? &it->rep.results[0] : NULL;
}

static double px(int i, int n) { return L + (n > 1 ? (W - L - R) * i / (n - 1) : (W - L - R) / 2); }
static double py(double v, double top) { return T + (H - T - B) * (1 - fmin(v, top) / top); }

/* One series (E_best or rho) as a polyline and its markers. */
static void series(const kg_trajectory *t, const char *name, const char *dash, double top, FILE *f)
{
    fprintf(f, "<polyline class=\"%s\" fill=\"none\" stroke=\"#333\" stroke-width=\"1.5\"%s points=\"", name, dash);
    for (int i = 0; i < t->n; i++) {
        const kg_result *x = lead(&t->v[i]);
        double v;
        if (x && kg_result_get(x, strcmp(name, "ebest") == 0 ? "best/efficiency" : "roof/fraction", &v))
            fprintf(f, "%.1f,%.1f ", px(i, t->n), py(v, top));
    }
    fputs("\"/>\n", f);
    for (int i = 0; i < t->n; i++) {
        const kg_result *x = lead(&t->v[i]);
        double v;
        if (!x || !kg_result_get(x, strcmp(name, "ebest") == 0 ? "best/efficiency" : "roof/fraction", &v))
            continue;
        const char *c = kg_html_verdict_color(x->verdict);
        if (strcmp(name, "ebest") == 0)
            fprintf(f, "<circle class=\"it\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\">", px(i, t->n), py(v, top), c);
        else
            fprintf(f, "<rect class=\"it-rho\" x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\">",
                    px(i, t->n) - 4, py(v, top) - 4, c);
        fprintf(f, "<title>%d ", i + 1);
        kg_html_esc(f, t->v[i].label);
        fprintf(f, ": %s, %s %.2f</title>%s\n", kg_verdict_name(x->verdict), strcmp(name, "ebest") == 0 ? "E_best" : "rho",
                v, strcmp(name, "ebest") == 0 ? "</circle>" : "</rect>");
    }
}

/* The axes, the OK band (E_best >= e_ok) and the legend. */
static void frame(const kg_trajectory *t, double e_ok, double top, FILE *f)
{
    fprintf(f, "<rect class=\"ok-band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1a9850\" "
               "fill-opacity=\"0.12\"/>\n", L, T, W - L - R, py(e_ok, top) - T);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#000\"/>"
               "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#000\"/>\n",
            L, H - B, W - R, H - B, L, T, L, H - B);
    for (double v = 0; v <= top + 1e-9; v += top > 2 ? 0.5 : 0.25)
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%.2f</text>\n", L - 6,
                py(v, top) + 4, v);
    int step = t->n > 20 ? (t->n + 19) / 20 : 1;
    for (int i = 0; i < t->n; i += step)
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"11\">%d</text>\n", px(i, t->n),
                H - B + 16, i + 1);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"12\">iteration</text>\n",
            (L + W - R) / 2, H - 4);
}

static void legend(double e_ok, FILE *f)
{
    fprintf(f, "<p id=\"legend\">Circles and the solid line: E_best (the best known implementation's time over "
               "the kernel's); squares and the dashed line: rho (its work over time &times; roof). Shaded: the OK "
               "band, E_best &ge; %.2f. Colour: the verdict (", e_ok);
    const kg_verdict vs[] = {KG_V_OK, KG_V_SLOW, KG_V_INCORRECT, KG_V_IMPOSSIBLE};
    for (int k = 0; k < 4; k++)
        fprintf(f, "%s<span style=\"color:%s\">&#9679; %s</span>", k ? ", " : "", kg_html_verdict_color(vs[k]),
                kg_verdict_name(vs[k]));
    fputs("). An iteration is plotted by its correct result of the highest E_best.</p>\n", f);
}

/* The table: an iteration a row, by its plotted result. */
static void table(const kg_trajectory *t, FILE *f)
{
    fputs("<table id=\"iterations\"><tr><th>#</th><th>iteration</th><th>kernel</th><th>verdict</th>"
          "<th>time</th><th>E_best</th><th>rho</th><th>reason</th></tr>\n", f);
    for (int i = 0; i < t->n; i++) {
        const kg_result *x = lead(&t->v[i]);
        char tm[32] = "-", eb[16] = "-", rho[16] = "-";
        double v;
        fprintf(f, "<tr><td>%d</td><td class=\"w\">", i + 1);
        kg_html_esc(f, t->v[i].label);
        fputs("</td><td class=\"w\">", f);
        if (x) {
            kg_fmt_time(kg_result_time(x), tm, sizeof tm);
            if (kg_result_get(x, "best/efficiency", &v))
                snprintf(eb, sizeof eb, "%.2f", v);
            if (kg_result_get(x, "roof/fraction", &v))
                snprintf(rho, sizeof rho, "%.2f", v);
            kg_html_esc(f, x->kernel);
        }
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"w\">", x ? kg_verdict_name(x->verdict) : "-",
                tm, eb, rho);
        kg_html_esc(f, x ? x->reason : t->v[i].error);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

int kg_traj_html(const kg_trajectory *t, double e_ok, FILE *f)
{
    double top = 1.2, v;
    for (int i = 0; i < t->n; i++) {
        const kg_result *x = lead(&t->v[i]);
        if (x && kg_result_get(x, "best/efficiency", &v) && isfinite(v))
            top = fmax(top, fmin(ceil(v * 4) / 4, 20));
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
          "<title>kgate trajectory</title><style>body{font-family:sans-serif;max-width:960px;margin:auto;padding:8px}"
          "svg{width:100%;height:auto}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;"
          "padding:2px 6px;text-align:left;white-space:nowrap}td.w{white-space:normal;overflow-wrap:anywhere}</style></head><body>\n<h1>kgate trajectory</h1>\n",
          f);
    fprintf(f, "<p>%d iteration(s).</p>\n", t->n);
    legend(e_ok, f);
    fprintf(f, "<svg id=\"trajectory\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"E_best and rho "
               "against iteration\">\n", W, H);
    frame(t, e_ok, top, f);
    series(t, "ebest", "", top, f);
    series(t, "rho", " stroke-dasharray=\"5,4\"", top, f);
    fputs("</svg>\n", f);
    table(t, f);
    fputs("</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}
