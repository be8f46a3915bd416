/* The HTML report's plots: legend, roofline, bandwidth panel, key (report/html_roofline.h). */
#include "html_roofline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../catalog/op.h"
#include "html_text.h"
#include "labels.h"

const char *kg_html_verdict_color(kg_verdict v)
{
    switch (v) {
    case KG_V_OK: return "#1a9850";
    case KG_V_SLOW: return "#f28e2b";
    case KG_V_IMPOSSIBLE: return "#8e44ad";
    case KG_V_SKIPPED: return "#999999";
    default: return "#d62728";
    }
}

static double sum_of(const kg_result *r, const char *name)
{
    double v = NAN;
    kg_result_get(r, name, &v);
    return v;
}

/* ------------------------------------------------------------ the points */

/* The compute roofs a point can be judged on. */
enum { R_FP16, R_BF16, R_CORES, R_COUNT };
static const struct {
    const char *name, *dash, *color;
} roof_style[R_COUNT] = {
    {"fp16 tensor", "", "#1f4e79"},
    {"bf16 tensor", "7 4", "#1f4e79"},
    {"fp32 CUDA cores", "9 3 2 3", "#707070"},
};

static double roof_value(const kg_roofs *r, int k)
{
    return k == R_FP16 ? r->mma[KG_FP16] : k == R_BF16 ? r->mma[KG_BF16] : r->fp32;
}

/* The roof a result's FLOPs run on (catalog/roofline.h's rule), or -1 for
 * an operator this build does not know. */
static int roof_index(const kg_result *x)
{
    const kg_op *op = kg_op_find(x->op);
    kg_dtype dt;
    if (!op || kg_dtype_parse(x->dtype, &dt))
        return -1;
    if (kg_roof_unit(op->unit, dt) == KG_UNIT_FP32)
        return R_CORES;
    return dt == KG_FP16 ? R_FP16 : dt == KG_BF16 ? R_BF16 : -1;
}

typedef enum { PT_NONE, PT_FLOP, PT_MEM } pt_kind;

/* rates outside these (FLOP/s or B/s) are a file's nonsense: not drawn */
#define MIN_RATE 1.0
#define MAX_RATE 1e30
static int sane(double rate) { return rate > MIN_RATE && rate < MAX_RATE; }

typedef struct pt {
    const kg_result *x;
    int num;         /* its number in the key and the verdict table */
    pt_kind kind;
    int roof;        /* R_*, or -1 */
    double in, rate; /* FLOP/B and FLOP/s (roofline); B/s (bandwidth panel) */
    double mem_roof; /* B/s: its own memory roof (bandwidth panel) */
    double px, py;   /* on the roofline */
} pt;

/* Where a timed result goes: the roofline (FLOPs), the bandwidth panel (none), or nowhere. */
static pt_kind place(const kg_report *rep, const kg_result *x, pt *p)
{
    memset(p, 0, sizeof *p);
    p->x = x;
    p->roof = -1;
    double rho = sum_of(x, "roof/fraction");
    if (!(rho > 0) || !isfinite(rho) ||
        (x->verdict != KG_V_OK && x->verdict != KG_V_SLOW && x->verdict != KG_V_IMPOSSIBLE))
        return PT_NONE;
    double in = sum_of(x, "roof/intensity"), flops = sum_of(x, "work/flops"), peak = sum_of(x, "roof/peak"),
           cb = sum_of(x, "roof/compute_bound");
    if (flops == 0 || (isnan(flops) && in == 0)) {
        p->mem_roof = peak > 0 ? peak : rep->roofs.bw;
        p->rate = rho * p->mem_roof;
        return p->kind = sane(p->rate) && sane(p->mem_roof) ? PT_MEM : PT_NONE;
    }
    if (!(in > 1e-9) || in > 1e9) /* no bytes (or a file's nonsense): no intensity to draw it at */
        return PT_NONE;
    p->in = in;
    p->roof = roof_index(x);
    if (peak > 0 && !isnan(cb)) /* its own roof: the FLOP roof, or its memory roof x intensity */
        p->rate = rho * peak * (cb > 0 ? 1 : in);
    else { /* a result without its roof: the drawn ones' */
        double pc = p->roof >= 0 ? roof_value(&rep->roofs, p->roof) : 0;
        pc = pc > 0 ? pc : rep->roofs.mma[KG_FP16];
        p->rate = rho * (pc > 0 ? fmin(rep->roofs.bw * in, pc) : rep->roofs.bw * in);
    }
    return p->kind = sane(p->rate) ? PT_FLOP : PT_NONE;
}

/* ------------------------------------------------------------ formatting */

/* v in SI with its unit: "10 TFLOP/s", "4.25 TB/s"; digits after the
 * point, or -1 for none unless needed (an axis: "1 TB/s", "1.5 TB/s"). */
static const char *si(double v, const char *unit, int digits, char *buf, size_t size)
{
    static const char *const prefix[] = {"", "k", "M", "G", "T", "P", "E"};
    int k = 0;
    for (; k < 6 && fabs(v) >= 999.5; k++)
        v /= 1000;
    if (digits < 0)
        digits = fabs(v - round(v)) < 1e-6 ? 0 : 1;
    snprintf(buf, size, "%.*f %s%s", digits, v, prefix[k], unit);
    return buf;
}

/* ------------------------------------------------------------ the legend */

static void swatch_line(FILE *f, const char *color, const char *dash, double width)
{
    fprintf(f, "<svg width=\"30\" height=\"10\" aria-hidden=\"true\"><line x1=\"1\" y1=\"5\" x2=\"29\" y2=\"5\" "
               "stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s/></svg> ",
            color, width, *dash ? " stroke-dasharray=\"" : "", dash, *dash ? "\"" : "");
}

static void legend(const kg_report *rep, int idx, const int used[R_COUNT], int read_roof, int n_flop, int n_mem,
                   FILE *f)
{
    const kg_roofs *r = &rep->roofs;
    char a[32];
    fprintf(f, "<div class=\"legend\" id=\"legend-%d\">", idx);
    static const kg_verdict shown[] = {KG_V_OK, KG_V_SLOW, KG_V_IMPOSSIBLE};
    for (int k = 0; k < 3; k++)
        fprintf(f, "<span><svg width=\"12\" height=\"12\" aria-hidden=\"true\"><circle cx=\"6\" cy=\"6\" r=\"4.5\" "
                   "fill=\"%s\"/></svg> %s</span>",
                kg_html_verdict_color(shown[k]), kg_verdict_name(shown[k]));
    if (n_flop) {
        fprintf(f, "<span><svg width=\"30\" height=\"10\" aria-hidden=\"true\"><defs><marker id=\"ahl%d\" "
                   "markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\"><path d=\"M0,0 L8,4 "
                   "L0,8 z\" fill=\"#555\"/></marker></defs><line x1=\"1\" y1=\"5\" x2=\"27\" y2=\"5\" stroke=\"#555\" "
                   "marker-end=\"url(#ahl%d)\"/></svg> naive variant &rarr; a faster one (same op, dtype, shape; "
                   "hover: how much faster)</span>",
                idx, idx);
        fputs("<span>", f);
        swatch_line(f, "#222", "", 2);
        fprintf(f, "memory roof, copy: %s</span>", si(r->bw, "B/s", 2, a, sizeof a));
        if (read_roof) {
            fputs("<span>", f);
            swatch_line(f, "#222", "1 2", 1.2);
            fprintf(f, "memory roof, read-only: %s</span>", si(r->bw_read, "B/s", 2, a, sizeof a));
        }
        for (int k = 0; k < R_COUNT; k++)
            if (used[k]) {
                fputs("<span>", f);
                swatch_line(f, roof_style[k].color, roof_style[k].dash, 1.6);
                fprintf(f, "%s roof: %s</span>", roof_style[k].name, si(roof_value(r, k), "FLOP/s", 0, a, sizeof a));
            }
    }
    fputs("<span><b class=\"num\">12</b> a kernel's number (the key below, # in the verdict table); a thin line "
          "joins a number set apart from its point</span></div>\n",
          f);
    if (n_flop)
        fputs("<p class=\"note\">Roofline: across, arithmetic intensity (essential FLOPs per essential byte); up, "
              "attained FLOP/s (essential FLOPs over the time judged), which is rho times the kernel's own roof. "
              "A kernel's memory roof lies between the write-only and read-only rates by its mix of reads and "
              "writes.",
              f);
    if (n_flop && n_mem)
        fputs(" Kernels that do no FLOPs are in the bandwidth panel below it.", f);
    if (n_flop)
        fputs("</p>\n", f);
}

/* ---------------------------------------------------------- the roofline */

#define W 860.0 /* the plots' width (viewBox units; the page scales them) */
#define H 540.0
#define ML 92.0 /* margins */
#define MR 100.0 /* the compute roofs' names */
#define MT 12.0
#define MB 42.0
#define DOT 4.0 /* a point's radius */
#define FONT 10.0
#define LINE_H 10.5

typedef struct frame {
    double xlo, xhi, ylo, yhi; /* log10 of the axes' ends */
} frame;

static double fx(const frame *g, double v)
{
    double l = fmin(fmax(log10(v), g->xlo), g->xhi);
    return ML + (l - g->xlo) / (g->xhi - g->xlo) * (W - ML - MR);
}
static double fy(const frame *g, double v)
{
    double l = fmin(fmax(log10(v), g->ylo), g->yhi);
    return H - MB - (l - g->ylo) / (g->yhi - g->ylo) * (H - MT - MB);
}

/* The axes' ends: every point and the roofs' corners inside, whole decades across. */
static frame frame_of(const kg_report *rep, const pt *p, int n, const int used[R_COUNT])
{
    double inlo = INFINITY, inhi = 0, ylo = INFINITY, yhi = 0;
    for (int i = 0; i < n; i++)
        if (p[i].kind == PT_FLOP) {
            inlo = fmin(inlo, p[i].in), inhi = fmax(inhi, p[i].in);
            ylo = fmin(ylo, p[i].rate), yhi = fmax(yhi, p[i].rate);
        }
    double top = 0;
    for (int k = 0; k < R_COUNT; k++)
        top = fmax(top, used[k] ? roof_value(&rep->roofs, k) : 0);
    /* a margin around the points; the highest roof's corner and a little
     * of its flat part inside; two decades each way at least */
    frame g = {log10(inlo / 1.6), log10(fmax(inhi * 1.6, 2.5 * top / rep->roofs.bw)), log10(ylo / 1.6),
               log10(fmax(yhi, top) * 2.5)};
    if (g.xhi - g.xlo < 2)
        g.xlo -= (2 - (g.xhi - g.xlo)) / 2, g.xhi = g.xlo + 2;
    if (g.yhi - g.ylo < 2)
        g.ylo = g.yhi - 2;
    /* a file's nonsense roofs stay within reach (the points are within these already) */
    g.xlo = fmax(g.xlo, -10), g.xhi = fmin(g.xhi, 10);
    g.ylo = fmax(g.ylo, -1), g.yhi = fmin(g.yhi, 31);
    return g;
}

static void grid(FILE *f, const frame *g)
{
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#999\"/>\n", ML, MT,
            W - ML - MR, H - MT - MB);
    for (int k = (int)ceil(g->xlo - 1e-9); k <= (int)floor(g->xhi + 1e-9); k++) {
        double x = fx(g, pow(10, k));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n",
                x, MT, x, H - MB, x, H - MB + 15, k < 0 ? -k : 0, pow(10, k));
    }
    for (int k = (int)ceil(g->ylo - 1e-9); k <= (int)floor(g->yhi + 1e-9); k++) {
        char s[32];
        double y = fy(g, pow(10, k));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                ML, y, W - MR, y, ML - 5, y + 4, si(pow(10, k), "FLOP/s", 0, s, sizeof s));
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/B)</text>\n",
            (ML + W - MR) / 2, H - 10);
    fprintf(f, "<text transform=\"translate(13,%.1f) rotate(-90)\" text-anchor=\"middle\">attained FLOP/s</text>\n",
            (MT + H - MB) / 2);
}

/* Text the labels keep clear of: the memory roof's name. */
#define MAX_FIXED 1

/* The lines the labels keep off where they can: x0, y0, x1, y1 each. */
typedef struct segs {
    double *v;
    int n, cap;
} segs;

static void seg_add(segs *s, double x0, double y0, double x1, double y1)
{
    if (s->n < s->cap) {
        double *v = &s->v[4 * s->n++];
        v[0] = x0, v[1] = y0, v[2] = x1, v[3] = y1;
    }
}

/* The memory roofs up to the highest compute roof, each compute roof from
 * its ridge on, each named (the memory roof along its slope: its name's
 * box is added to fixed; the compute roofs in the right margin). */
static void roofs(FILE *f, const kg_report *rep, const frame *g, const int used[R_COUNT], int read_roof,
                  const pt *p, int n, kg_label *fixed, int *nf, segs *sg)
{
    const kg_roofs *r = &rep->roofs;
    char a[32];
    double top = 0;
    for (int k = 0; k < R_COUNT; k++)
        if (used[k])
            top = fmax(top, roof_value(r, k));
    double lo = pow(10, g->xlo), bws[2] = {r->bw, r->bw_read};
    for (int m = 0; m < 1 + read_roof; m++) {
        double x0 = fmax(lo, pow(10, g->ylo) / bws[m]);
        fprintf(f, "<line class=\"roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                   "stroke-width=\"%s\"%s><title>memory roof, %s: %s</title></line>\n",
                fx(g, x0), fy(g, bws[m] * x0), fx(g, top / bws[m]), fy(g, top), m ? "1.2" : "2",
                m ? " stroke-dasharray=\"1 2\"" : "", m ? "read-only stream" : "copy", si(bws[m], "B/s", 2, a, sizeof a));
        seg_add(sg, fx(g, x0), fy(g, bws[m] * x0), fx(g, top / bws[m]), fy(g, top));
    }
    /* the slope's name, above it where the fewest points are */
    double x0 = fmax(lo, pow(10, g->ylo) / r->bw);
    double xa = fx(g, x0), ya = fy(g, r->bw * x0), xb = fx(g, top / r->bw), yb = fy(g, top);
    double len = hypot(xb - xa, yb - ya), ux = (xb - xa) / len, uy = (yb - ya) / len, tw = 100;
    double best_t = 0.5;
    int best = 1 << 30;
    for (int k = 0; k <= 14; k++) {
        double t = 0.5 + (k % 2 ? 1 : -1) * ((k + 1) / 2) * 0.05, cx = xa + t * (xb - xa), cy = ya + t * (yb - ya);
        int near = 0;
        for (int i = 0; i < n; i++) {
            if (p[i].kind != PT_FLOP)
                continue;
            double dx = p[i].px - cx, dy = p[i].py - cy, along = dx * ux + dy * uy, across = dx * uy - dy * ux;
            near += fabs(along) < tw / 2 + DOT && across > -DOT && across < 18 + DOT;
        }
        if (near < best)
            best = near, best_t = t;
    }
    double ang = atan2(yb - ya, xb - xa), tx = xa + best_t * (xb - xa), ty = ya + best_t * (yb - ya);
    fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(%.1f)\" y=\"-6\" text-anchor=\"middle\" fill=\"#222\">"
               "memory %s</text>\n",
            tx, ty, ang * 180 / 3.14159265358979, si(r->bw, "B/s", 2, a, sizeof a));
    /* its box, roughly: the rotated text's extent */
    double hx = tw / 2 * fabs(ux) + 8 * fabs(uy), hy = tw / 2 * fabs(uy) + 8 * fabs(ux);
    double mx = tx + 10 * uy, my = ty - 10 * fabs(ux);
    fixed[(*nf)++] = (kg_label){.box = {mx - hx, my - hy, mx + hx, my + hy}};
    /* the compute roofs, highest first, named in the right margin: two
     * lines each, pushed down clear of the name above, a line to its roof
     * where it had to move */
    int order[R_COUNT], nr = 0;
    for (int k = 0; k < R_COUNT; k++)
        if (used[k]) {
            int j = nr++;
            for (; j > 0 && roof_value(r, order[j - 1]) < roof_value(r, k); j--)
                order[j] = order[j - 1];
            order[j] = k;
        }
    double next = MT;
    for (int i = 0; i < nr; i++) {
        int k = order[i];
        double v = roof_value(r, k), y = fy(g, v), top_y = fmax(y - LINE_H / 2, next);
        char dash[48] = "";
        if (*roof_style[k].dash)
            snprintf(dash, sizeof dash, " stroke-dasharray=\"%s\"", roof_style[k].dash);
        fprintf(f, "<line class=\"roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"1.6\"%s><title>%s roof: %s, ridge %.0f FLOP/B</title></line>\n",
                fx(g, v / r->bw), y, W - MR, y, roof_style[k].color, dash, roof_style[k].name,
                si(v, "FLOP/s", 0, a, sizeof a), v / r->bw);
        seg_add(sg, fx(g, v / r->bw), y, W - MR, y);
        if (top_y > y - LINE_H / 2 + 1)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"0.6\"/>",
                    W - MR, y, W - MR + 5, top_y + LINE_H / 2, roof_style[k].color);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s<tspan x=\"%.1f\" dy=\"%.1f\">%s</tspan></text>\n",
                W - MR + 7, top_y + LINE_H - 2, roof_style[k].color, roof_style[k].name, W - MR + 7, LINE_H,
                si(v, "FLOP/s", 0, a, sizeof a));
        next = top_y + 2 * LINE_H + 3;
    }
}

/* From each group's first result to each of the group with a cliff (the
 * same source, operator, dtype and shape), stopping short of the point. */
static void arrows(FILE *f, const kg_report *rep, const pt *p, int idx, segs *sg)
{
    for (int i = 0; i < rep->n; i++) {
        const kg_result *x = p[i].x;
        double c = sum_of(x, "cliff");
        if (!(c > 0) || p[i].kind != PT_FLOP)
            continue;
        for (int k = 0; k < i; k++) {
            const kg_result *y = p[k].x;
            if (strcmp(y->source, x->source) || strcmp(y->op, x->op) || strcmp(y->dtype, x->dtype) ||
                strcmp(y->shape, x->shape))
                continue;
            double dx = p[i].px - p[k].px, dy = p[i].py - p[k].py, d = sqrt(dx * dx + dy * dy);
            if (p[k].kind == PT_FLOP && d > 2 * DOT + 2) {
                seg_add(sg, p[k].px, p[k].py, p[i].px, p[i].py);
                fprintf(f, "<line class=\"cliff\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                           "stroke-width=\"1\" marker-end=\"url(#ah%d)\"><title>%.1fx faster</title></line>\n",
                        p[k].px + dx / d * DOT, p[k].py + dy / d * DOT, p[i].px - dx / d * (DOT + 1),
                        p[i].py - dy / d * (DOT + 1), idx, c);
            }
            break;
        }
    }
}

#define MAX_NUMBERED 600 /* points the plot numbers (placing labels is quadratic) */
#define NUMS_PER_LINE 4
#define MAX_LINES 6

/* A label: the numbers of the points at one spot, NUMS_PER_LINE a line. */
typedef struct cluster {
    int first;            /* its first point (the label's anchor) */
    int n, nums[NUMS_PER_LINE * MAX_LINES];
} cluster;

static double text_width(const char *s)
{
    double w = 0;
    for (; *s; s++)
        w += *s == ',' ? 0.28 * FONT : 0.56 * FONT;
    return w;
}

static void line_text(const cluster *c, int line, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int j = line * NUMS_PER_LINE; j < c->n && j < (line + 1) * NUMS_PER_LINE && used < size; j++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", j % NUMS_PER_LINE ? "," : "", c->nums[j]);
}

/* The points' numbers, one label for the points within 3 units of each other. */
static void numbers(FILE *f, pt *p, int n, const kg_label *fixed, int nf, const segs *sg)
{
    cluster *cl = calloc((size_t)n + 1, sizeof *cl);
    kg_label *lab = calloc((size_t)n + MAX_FIXED, sizeof *lab);
    double *xy = calloc(2 * (size_t)n + 1, sizeof *xy);
    if (!cl || !lab || !xy) {
        free(cl), free(lab), free(xy);
        return;
    }
    int nc = 0, np = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].kind != PT_FLOP)
            continue;
        xy[2 * np] = p[i].px, xy[2 * np + 1] = p[i].py, np++;
        int c = 0;
        for (; c < nc; c++) {
            const pt *a = &p[cl[c].first];
            if (hypot(a->px - p[i].px, a->py - p[i].py) < 3 && cl[c].n < NUMS_PER_LINE * MAX_LINES)
                break;
        }
        if (c == nc)
            cl[nc++].first = i;
        cl[c].nums[cl[c].n++] = p[i].num;
    }
    memcpy(lab, fixed, (size_t)nf * sizeof *lab);
    for (int c = 0; c < nc; c++) {
        kg_label *l = &lab[nf + c];
        int lines = (cl[c].n + NUMS_PER_LINE - 1) / NUMS_PER_LINE;
        char t[64];
        l->x = p[cl[c].first].px, l->y = p[cl[c].first].py;
        for (int k = 0; k < lines; k++) {
            line_text(&cl[c], k, t, sizeof t);
            l->w = fmax(l->w, text_width(t) + 2);
        }
        l->h = lines * LINE_H + 1;
    }
    kg_obstacles ob = {xy, np, DOT + 0.5, sg->v, sg->n};
    kg_labels_place(lab, nf + nc, nf, (kg_box){ML + 1, MT + 1, W - MR - 1, H - MB - 1}, &ob);
    for (int c = 0; c < nc; c++) {
        const kg_label *l = &lab[nf + c];
        fputs("<g class=\"num\" data-n=\"", f);
        for (int j = 0; j < cl[c].n; j++)
            fprintf(f, "%s%d", j ? " " : "", cl[c].nums[j]);
        fputs("\">", f);
        if (l->leader) {
            /* from the disc's edge to the nearest point of the box */
            double nx = fmin(fmax(l->x, l->box.x0), l->box.x1), ny = fmin(fmax(l->y, l->box.y0), l->box.y1);
            double d = hypot(nx - l->x, ny - l->y);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-width=\"0.6\"/>",
                    l->x + (nx - l->x) / d * DOT, l->y + (ny - l->y) / d * DOT, nx, ny);
        }
        int lines = (cl[c].n + NUMS_PER_LINE - 1) / NUMS_PER_LINE;
        for (int k = 0; k < lines; k++) {
            char t[64];
            line_text(&cl[c], k, t, sizeof t);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", l->box.x0 + 1, l->box.y0 + (k + 1) * LINE_H - 2, t);
        }
        fputs("</g>\n", f);
    }
    free(cl), free(lab), free(xy);
}

static void point_title(FILE *f, const pt *p)
{
    char t[32];
    const kg_result *x = p->x;
    kg_fmt_time(kg_result_time(x), t, sizeof t);
    fprintf(f, "<title>%d ", p->num);
    kg_html_esc(f, x->kernel);
    fputs(" ", f);
    kg_html_esc(f, x->shape);
    fprintf(f, ": %s, %s, rho %.2f</title>", kg_verdict_name(x->verdict), t, sum_of(x, "roof/fraction"));
}

static void roofline(FILE *f, const kg_report *rep, int idx, pt *p, int n_flop, const int used[R_COUNT], int read_roof)
{
    frame g = frame_of(rep, p, rep->n, used);
    for (int i = 0; i < rep->n; i++)
        if (p[i].kind == PT_FLOP)
            p[i].px = fx(&g, p[i].in), p[i].py = fy(&g, p[i].rate);
    fprintf(f, "<svg id=\"roofline-%d\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"%.0f\" role=\"img\" aria-label=\"roofline\">\n",
            idx, W, H, FONT);
    fprintf(f, "<defs><marker id=\"ah%d\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
               "<path d=\"M0,0 L8,4 L0,8 z\" fill=\"#555\"/></marker></defs>\n",
            idx);
    grid(f, &g);
    kg_label fixed[MAX_FIXED];
    int nf = 0;
    segs sg = {calloc(4 * ((size_t)rep->n + R_COUNT + 2), sizeof(double)), 0, rep->n + R_COUNT + 2};
    if (!sg.v)
        sg.cap = 0;
    roofs(f, rep, &g, used, read_roof, p, rep->n, fixed, &nf, &sg);
    arrows(f, rep, p, idx, &sg);
    for (int i = 0; i < rep->n; i++) {
        if (p[i].kind != PT_FLOP)
            continue;
        fprintf(f, "<circle class=\"kernel\" data-n=\"%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.0f\" fill=\"%s\" "
                   "fill-opacity=\"0.85\" stroke=\"#fff\" stroke-width=\"0.5\">",
                p[i].num, p[i].px, p[i].py, DOT, kg_html_verdict_color(p[i].x->verdict));
        point_title(f, &p[i]);
        fputs("</circle>\n", f);
    }
    if (n_flop <= MAX_NUMBERED)
        numbers(f, p, rep->n, fixed, nf, &sg);
    else
        fprintf(f, "<text class=\"too-many\" x=\"%.1f\" y=\"%.1f\">%d points, too many to number: the key and "
                   "each point's tooltip name them</text>\n",
                ML + 8, MT + 14, n_flop);
    free(sg.v);
    fputs("</svg>\n", f);
}

/* ------------------------------------------------------ the bandwidth panel */

#define ROW 18.0
#define BL 250.0 /* where the bars start */
#define BR (W - 150.0)

static void bandwidth(FILE *f, const kg_report *rep, int idx, const pt *p, int n_mem)
{
    double top = 0;
    for (int i = 0; i < rep->n; i++)
        if (p[i].kind == PT_MEM)
            top = fmax(top, fmax(p[i].mem_roof, p[i].rate));
    /* a round step: 1, 2 or 5 x a power of ten, 4 to 10 of them */
    double step = pow(10, floor(log10(top))), end;
    step = top / step >= 4 ? step : top / step >= 2 ? step / 2 : step / 5;
    end = ceil(top * 1.02 / step) * step;
    double h = MT + 8 + n_mem * ROW + 40, y0 = MT + 8, sx = (BR - BL) / end;
    char a[32], b[32];
    fprintf(f, "<svg id=\"bandwidth-%d\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"%.0f\" role=\"img\" aria-label=\"bandwidth of kernels without FLOPs\">\n",
            idx, W, h, FONT);
    for (int k = 0; k <= 12 && k * step <= end * 1.0001; k++) {
        double v = k * step;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                BL + v * sx, y0 - 4, BL + v * sx, y0 + n_mem * ROW, BL + v * sx, y0 + n_mem * ROW + 14,
                v > 0 ? si(v, "B/s", -1, a, sizeof a) : "0");
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">attained bandwidth (essential bytes over the "
               "time judged) against the kernel's own memory roof (grey)</text>\n",
            (BL + BR) / 2, h - 8);
    int row = 0;
    for (int i = 0; i < rep->n; i++) {
        if (p[i].kind != PT_MEM)
            continue;
        const kg_result *x = p[i].x;
        double y = y0 + row++ * ROW, rho = sum_of(x, "roof/fraction");
        fprintf(f, "<text x=\"4\" y=\"%.1f\"><tspan font-weight=\"bold\" fill=\"%s\">%d</tspan> ", y + 13,
                kg_html_verdict_color(x->verdict), p[i].num);
        kg_html_short(f, "tspan", NULL, x->kernel, 34, 9);
        fputs("</text>\n", f);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"#e4e4e4\"><title>its memory roof: "
                   "%s</title></rect>",
                BL, y + 2, p[i].mem_roof * sx, si(p[i].mem_roof, "B/s", 2, a, sizeof a));
        fprintf(f, "<rect class=\"bw\" data-n=\"%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"8\" fill=\"%s\">",
                p[i].num, BL, y + 5, fmin(p[i].rate, end) * sx, kg_html_verdict_color(x->verdict));
        point_title(f, &p[i]);
        fprintf(f, "</rect><text x=\"%.1f\" y=\"%.1f\">%s, rho %.2f</text>\n", BR + 6, y + 13,
                si(p[i].rate, "B/s", 2, b, sizeof b), rho);
    }
    fputs("</svg>\n", f);
}

/* ------------------------------------------------------------------ the key */

static void key(FILE *f, const pt *p, int n, int idx)
{
    fprintf(f, "<ol class=\"key\" id=\"key-%d\">\n", idx);
    for (int i = 0; i < n; i++) {
        if (p[i].kind == PT_NONE)
            continue;
        const kg_result *x = p[i].x;
        fprintf(f, "<li value=\"%d\" title=\"", p[i].num);
        kg_html_esc(f, x->kernel);
        fputc(' ', f);
        kg_html_esc(f, x->shape);
        fprintf(f, "\"><b class=\"%s\">%d</b> ", kg_verdict_name(x->verdict), p[i].num);
        kg_html_short(f, "code", NULL, x->kernel, 30, 9);
        fputc(' ', f);
        kg_html_short(f, "span", "sh", x->shape, 18, 6);
        fputs("</li>\n", f);
    }
    fputs("</ol>\n", f);
}

void kg_html_plots(const kg_report *rep, int idx, int first, FILE *f)
{
    const kg_roofs *r = &rep->roofs;
    pt *p = calloc((size_t)rep->n + 1, sizeof *p);
    if (!p) {
        fputs("<p>No plots: out of memory.</p>\n", f);
        return;
    }
    int used[R_COUNT] = {0}, n_flop = 0, n_mem = 0;
    for (int i = 0; i < rep->n; i++) {
        pt_kind k = place(rep, &rep->results[i], &p[i]);
        p[i].num = first + i;
        n_flop += k == PT_FLOP, n_mem += k == PT_MEM;
        if (k == PT_FLOP && p[i].roof >= 0 && sane(roof_value(r, p[i].roof)))
            used[p[i].roof] = 1;
    }
    int any = 0;
    for (int k = 0; k < R_COUNT; k++)
        any |= used[k];
    if (!any && sane(r->mma[KG_FP16]))
        used[R_FP16] = 1;
    int read_roof = sane(r->bw_read) && r->bw_read > r->bw * 1.02;
    if (!sane(r->bw) || (n_flop && !any && !used[R_FP16])) {
        fputs("<p>No plots: the report has no measured roofs.</p>\n", f);
        free(p);
        return;
    }
    if (!n_flop && !n_mem) {
        fputs("<p>No plots: no result was timed.</p>\n", f);
        free(p);
        return;
    }
    legend(rep, idx, used, read_roof, n_flop, n_mem, f);
    if (n_flop)
        roofline(f, rep, idx, p, n_flop, used, read_roof);
    if (n_mem) {
        fprintf(f, "<h3>Kernels without FLOPs (%d)</h3>\n", n_mem);
        bandwidth(f, rep, idx, p, n_mem);
    }
    key(f, p, rep->n, idx);
    free(p);
}
