/* kgate report's writers (report/html_report.h, html_roofline.h, labels.h,
 * html_text.h): a candidate's hostile names come out escaped in HTML and
 * Markdown and quoted in CSV; a recorded H200 run gives a legend, one
 * numbered point or bar per timed result (kernels without FLOPs on the
 * bandwidth panel, not on the roofline), labels that match the key, SI
 * axes, a table row per result that names what t_best is, and valid CSV
 * whose OK rows have no cause; point labels never overlap; long names are
 * shortened whole characters at a time; a file's nonsense numbers draw
 * nothing wild; past 600 points none is numbered; a CSV cell is empty
 * where there is no value, and a formula is defused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/diag_json.h"
#include "report/html_report.h"
#include "report/html_text.h"
#include "report/labels.h"

#ifndef KG_TEST_SRC
#define KG_TEST_SRC "tests"
#endif

typedef int (*writer)(const kg_report *const *, int, FILE *, kg_err *);

static char *render(writer w, const kg_report *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kg_err e = {0, ""};
    const kg_report *reps[1] = {r};
    assert_int_equal(w(reps, 1, f, &e), 0);
    fclose(f);
    return text;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* The text from `from` to the next `to` (a malloc'd copy; "" when absent). */
static char *section(const char *s, const char *from, const char *to)
{
    const char *a = strstr(s, from), *b = a ? strstr(a, to) : NULL;
    size_t n = a && b ? (size_t)(b - a) : 0;
    char *out = malloc(n + 1);
    memcpy(out, a ? a : "", n);
    out[n] = '\0';
    return out;
}

/* Marks in seen[] (1..max) each number in the `attr="1 2 3"` attributes of s; returns how many. */
static int numbers_in(const char *s, const char *attr, int *seen, int max)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, attr)); p += strlen(attr)) {
        char *end;
        for (const char *q = p + strlen(attr); *q != '"'; q = end) {
            long v = strtol(q, &end, 10);
            assert_true(end > q && v >= 1 && v <= max);
            seen[v]++;
            n++;
            while (*end == ' ')
                end++;
        }
    }
    return n;
}

static kg_result result(const char *kernel, const char *op, kg_verdict v, double rho, double in, double flops,
                        double peak, int compute_bound)
{
    kg_result x;
    memset(&x, 0, sizeof x);
    snprintf(x.kernel, sizeof x.kernel, "%s", kernel);
    snprintf(x.op, sizeof x.op, "%s", op);
    snprintf(x.dtype, sizeof x.dtype, "fp16");
    snprintf(x.shape, sizeof x.shape, "4096x4096");
    snprintf(x.reason, sizeof x.reason, "a reason");
    x.verdict = v;
    kg_result_set(&x, "time/gpu/median", 1e-3);
    kg_result_set(&x, "roof/fraction", rho);
    kg_result_set(&x, "roof/intensity", in);
    kg_result_set(&x, "work/flops", flops);
    kg_result_set(&x, "roof/peak", peak);
    kg_result_set(&x, "roof/compute_bound", compute_bound);
    return x;
}

static void hostile_names_are_escaped(void **state)
{
    (void)state;
    kg_report r;
    kg_report_init(&r);
    r.roofs.bw = 4.27e12;
    r.roofs.mma[KG_FP16] = 790e12;
    kg_result x = result("<script>alert(1)</script>|\"q\",x", "softmax", KG_V_SLOW, 0.1, 1.0, NAN, 0, 0);
    snprintf(x.reason, sizeof x.reason, "E_best 0.1 < 0.80 & <b>");
    snprintf(x.best, sizeof x.best, "<img src=x onerror=alert(2)>");
    kg_report_add(&r, &x);
    /* a long one: shortened, its full text in a title attribute */
    x = result("<b>a_very_long_kernel_name_that_is_shortened\"onmouseover=alert(3)", "softmax", KG_V_OK, 0.9, 1.0,
               NAN, 0, 0);
    kg_report_add(&r, &x);
    char *html = render(kg_report_html, &r);
    assert_null(strstr(html, "<script>"));
    assert_null(strstr(html, "<img"));
    assert_null(strstr(html, "<b>a_very"));
    assert_null(strstr(html, "\"onmouseover"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;|&quot;q&quot;,x"));
    assert_non_null(strstr(html, "title=\"&lt;b&gt;a_very_long_kernel_name_that_is_shortened&quot;onmouseover"));
    assert_non_null(strstr(html, "0.80 &amp; &lt;b&gt;"));
    /* the gate line says what host time a launch call had for free */
    assert_non_null(strstr(html, "a launch call's host time is free to max(50 us, the GPU time) beyond it"));
    assert_int_equal(count(html, "<circle class=\"kernel\""), 2);
    assert_null(strstr(html, "src=\"http")); /* nothing loaded from the net */
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "Content-Security-Policy\" content=\"default-src 'none'"));
    free(html);
    char *mdt = render(kg_report_markdown, &r);
    assert_non_null(strstr(mdt, "\\<script\\>alert(1)\\</script\\>\\|\"q\",x"));
    assert_non_null(strstr(mdt, "**Passes but slow** (1 correct kernel judged SLOW)"));
    free(mdt);
    char *c = render(kg_report_csv, &r);
    assert_non_null(strstr(c, "\"<script>alert(1)</script>|\"\"q\"\",x\""));
    assert_int_equal(count(c, "\r\n"), 3);
    free(c);
    /* a field a spreadsheet would run as a formula is defused */
    snprintf(r.results[0].reason, sizeof r.results[0].reason, "=HYPERLINK(\"x\")");
    c = render(kg_report_csv, &r);
    assert_non_null(strstr(c, "\"'=HYPERLINK(\"\"x\"\")\""));
    free(c);
    kg_report_free(&r);
}

/* The fields of one RFC 4180 record at *p (advanced past its CRLF); -1 on bad quoting. */
static int csv_record(const char **p, char fields[][512], int max)
{
    const char *s = *p;
    int n = 0;
    for (;;) {
        assert_true(n < max);
        size_t k = 0;
        if (*s == '"') {
            for (s++;; s++) {
                if (*s == '\0')
                    return -1;
                if (*s == '"' && s[1] == '"')
                    s++;
                else if (*s == '"')
                    break;
                if (k < 511)
                    fields[n][k++] = *s;
            }
            s++;
        } else
            for (; *s && *s != ',' && *s != '\r' && *s != '"'; s++)
                if (k < 511)
                    fields[n][k++] = *s;
        fields[n++][k] = '\0';
        if (*s == ',') {
            s++;
            continue;
        }
        if (s[0] != '\r' || s[1] != '\n')
            return -1;
        *p = s + 2;
        return n;
    }
}

static void recorded_run(void **state)
{
    (void)state;
    kg_report r;
    kg_err e = {0, ""};
    assert_int_equal(kg_report_read_json(KG_TEST_SRC "/data/recorded/run-h200-diagnose.json", &r, &e), 0);
    assert_int_equal(r.n, 57);
    char *html = render(kg_report_html, &r);
    char *roof = section(html, "<svg id=\"roofline-0\"", "</svg>");
    char *bw = section(html, "<svg id=\"bandwidth-0\"", "</svg>");
    char *key = section(html, "<ol class=\"key\" id=\"key-0\">", "</ol>");
    char *legend = section(html, "<div class=\"legend\" id=\"legend-0\">", "</div>");
    /* the legend: verdict colours, the arrows, every line drawn */
    assert_non_null(strstr(legend, "#1a9850\"/></svg> OK"));
    assert_non_null(strstr(legend, "#f28e2b\"/></svg> SLOW"));
    assert_non_null(strstr(legend, "naive variant &rarr; a faster one"));
    assert_non_null(strstr(legend, "memory roof, copy: 4.27 TB/s"));
    assert_non_null(strstr(legend, "memory roof, read-only: 4.48 TB/s"));
    assert_non_null(strstr(legend, "stroke-dasharray=\"7 4\"/></svg> bf16 tensor roof: 821 TFLOP/s"));
    assert_non_null(strstr(legend, "fp16 tensor roof: 790 TFLOP/s"));
    assert_non_null(strstr(legend, "fp32 CUDA cores roof: 67 TFLOP/s"));
    assert_null(strstr(legend, "tf32")); /* no fp32 matmul in this run: its roof is not drawn */
    /* one roof line per memory rate and per compute roof in use */
    assert_int_equal(count(roof, "<line class=\"roof\""), 2 + 3);
    /* 49 results with FLOPs on the roofline, the 8 without (embedding,
     * index_select, matrix_transpose: results 9-14, 33, 34) on the bandwidth panel */
    int on_roof[58] = {0}, on_bw[58] = {0}, labelled[58] = {0}, keyed[58] = {0};
    assert_int_equal(numbers_in(roof, "<circle class=\"kernel\" data-n=\"", on_roof, 57), 49);
    assert_int_equal(numbers_in(bw, "<rect class=\"bw\" data-n=\"", on_bw, 57), 8);
    static const int memory_only[] = {9, 10, 11, 12, 13, 14, 33, 34};
    for (int k = 0; k < 8; k++) {
        assert_int_equal(on_roof[memory_only[k]], 0);
        assert_int_equal(on_bw[memory_only[k]], 1);
    }
    assert_non_null(strstr(bw, ">matrix_transpose_v1_fp16</tspan>"));
    /* every point's number written once on the plot, and the key names each */
    assert_int_equal(numbers_in(roof, "<g class=\"num\" data-n=\"", labelled, 57), 49);
    assert_int_equal(numbers_in(key, "<li value=\"", keyed, 57), 57);
    for (int i = 1; i <= 57; i++) {
        assert_int_equal(labelled[i], on_roof[i]);
        assert_int_equal(keyed[i], on_roof[i] + on_bw[i]);
    }
    assert_non_null(strstr(key, "<li value=\"9\" title=\"embedding_v1_fp16 131072x1024x131072\">"));
    /* the arrows: the passes-but-slow pairs with FLOPs */
    assert_int_equal(count(roof, "class=\"cliff\""), 21);
    /* SI units on the axes */
    assert_non_null(strstr(roof, "text-anchor=\"end\">100 TFLOP/s</text>"));
    assert_non_null(strstr(roof, "text-anchor=\"end\">1 PFLOP/s</text>"));
    assert_non_null(strstr(bw, ">4 TB/s</text>"));
    assert_null(strstr(html, "e+1"));
    /* the table: a row per result, numbered as the points; best names what it is */
    char *table = section(html, "<table id=\"verdicts\">", "</table>");
    assert_int_equal(count(table, "<tr>"), 58);
    assert_non_null(strstr(table, "<tr><td class=\"n i\">1</td><td><code>add_v1_fp16</code><br><small>add &middot; "
                                  "fp16 &middot; <span>67108864</span></small></td>"));
    assert_non_null(strstr(table, "<code>cudnn-pointwise-add</code><br><small>98.7 us</small>"));
    assert_int_equal(count(html, "<table id=\"families\">"), 1);
    assert_int_equal(count(html, "<section id=\"diagnosis\">"), 1);
    assert_non_null(strstr(html, "<b>RC0a</b>"));
    free(table), free(roof), free(bw), free(key), free(legend), free(html);
    /* CSV: valid RFC 4180, a field per column in every row, no cause on an OK row */
    char *c = render(kg_report_csv, &r);
    static char fields[160][512];
    const char *p = c;
    int cols = csv_record(&p, fields, 160);
    assert_true(cols > 11);
    assert_string_equal(fields[10], "cause");
    int ok_rows = 0;
    for (int i = 0; i < r.n; i++) {
        assert_int_equal(csv_record(&p, fields, 160), cols);
        assert_string_equal(fields[2], r.results[i].kernel);
        if (r.results[i].verdict == KG_V_OK && !kg_diag_top(r.results[i].diag)) {
            assert_string_equal(fields[10], "");
            ok_rows++;
        }
    }
    assert_int_equal(*p, '\0');
    assert_true(ok_rows > 0);
    assert_null(strstr(c, "'-")); /* no defused placeholder */
    assert_null(strstr(c, "\"\"\"\"")); /* no quoted empty text */
    free(c);
    kg_report_free(&r);
}

/* A gather and a copy have no FLOPs: they go on the bandwidth panel, at
 * their attained bytes/s against their own memory roof, and nowhere on
 * the roofline (which the matmul alone decides). */
static void memory_only_kernels_on_the_bandwidth_panel(void **state)
{
    (void)state;
    kg_report r;
    kg_report_init(&r);
    r.roofs.bw = 4.0e12;
    r.roofs.bw_read = 4.0e12;
    r.roofs.mma[KG_FP16] = 800e12;
    kg_result x = result("matmul_v1_fp16", "matmul", KG_V_SLOW, 0.5, 1000, 1e12, 800e12, 1);
    kg_report_add(&r, &x);
    x = result("embedding_v1_fp16", "embedding", KG_V_SLOW, 0.25, 0, 0, 4.0e12, 0);
    kg_report_add(&r, &x);
    x = result("matrix_transpose_v2_fp16", "matrix_transpose", KG_V_OK, 0.9, 0, 0, 4.0e12, 0);
    kg_report_add(&r, &x);
    char *html = render(kg_report_html, &r);
    char *roof = section(html, "<svg id=\"roofline-0\"", "</svg>"), *bw = section(html, "<svg id=\"bandwidth-0\"", "</svg>");
    assert_int_equal(count(roof, "<circle class=\"kernel\""), 1);
    assert_non_null(strstr(roof, "data-n=\"1\""));
    assert_null(strstr(roof, "data-n=\"2\""));
    assert_null(strstr(roof, "data-n=\"3\""));
    assert_null(strstr(roof, "embedding"));
    /* the matmul at 0.5 x 800 TFLOP/s: the axis reaches no lower than it needs */
    assert_non_null(strstr(roof, "<title>1 matmul_v1_fp16 4096x4096: SLOW, 1.000 ms, rho 0.50</title>"));
    assert_null(strstr(roof, "1 GFLOP/s"));
    assert_int_equal(count(bw, "<rect class=\"bw\""), 2);
    assert_non_null(strstr(bw, ">1.00 TB/s, rho 0.25</text>"));
    assert_non_null(strstr(bw, ">3.60 TB/s, rho 0.90</text>"));
    /* the bars' lengths are in proportion to the rates */
    const char *a = strstr(bw, "class=\"bw\" data-n=\"2\""), *b = strstr(bw, "class=\"bw\" data-n=\"3\"");
    double wa = 0, wb = 0;
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(sscanf(strstr(a, "width=\"") + 7, "%lf", &wa), 1);
    assert_int_equal(sscanf(strstr(b, "width=\"") + 7, "%lf", &wb), 1);
    assert_true(fabs(wb / wa - 3.6) < 0.01);
    assert_non_null(strstr(html, "<h3>Kernels without FLOPs (2)</h3>"));
    free(roof), free(bw), free(html);
    kg_report_free(&r);
}

/* 40 points on top of each other and 40 in a row: every label clear of
 * the others and of every point, inside the plot, a leader line when it
 * is away from its point; a plot too small to hold them says so. */
static void labels_do_not_overlap(void **state)
{
    (void)state;
    enum { N = 80 };
    kg_label l[N];
    double pts[2 * N];
    memset(l, 0, sizeof l);
    for (int i = 0; i < N; i++) {
        l[i].x = i < 40 ? 300 + (i % 3) : 100 + 9 * (i - 40);
        l[i].y = i < 40 ? 200 : 320;
        l[i].w = 12 + (i % 4) * 5;
        l[i].h = 11;
        pts[2 * i] = l[i].x, pts[2 * i + 1] = l[i].y;
    }
    kg_box area = {0, 0, 600, 400};
    kg_obstacles ob = {pts, N, 4.5, NULL, 0};
    kg_labels_place(l, N, 0, area, &ob);
    for (int i = 0; i < N; i++) {
        assert_false(l[i].overlaps);
        assert_true(l[i].box.x0 >= area.x0 && l[i].box.x1 <= area.x1 && l[i].box.y0 >= area.y0 &&
                    l[i].box.y1 <= area.y1);
        for (int j = 0; j < i; j++)
            assert_false(kg_labels_overlap(&l[i].box, &l[j].box, 0));
        for (int k = 0; k < N; k++) {
            double nx = fmin(fmax(pts[2 * k], l[i].box.x0), l[i].box.x1), ny = fmin(fmax(pts[2 * k + 1], l[i].box.y0), l[i].box.y1);
            assert_true(hypot(nx - pts[2 * k], ny - pts[2 * k + 1]) >= 4.5);
        }
        double nx = fmin(fmax(l[i].x, l[i].box.x0), l[i].box.x1), ny = fmin(fmax(l[i].y, l[i].box.y0), l[i].box.y1);
        assert_int_equal(l[i].leader, hypot(nx - l[i].x, ny - l[i].y) > 4.5 + 6);
    }
    assert_false(l[0].leader); /* the first is placed beside its point */
    /* a line through the first free place: the label takes the next one, off the line */
    kg_label one = {.x = 50, .y = 50, .w = 20, .h = 10};
    double seg[4] = {40, 40, 100, 40}, pt[2] = {50, 50};
    kg_obstacles with_line = {pt, 1, 4.5, seg, 1};
    kg_labels_place(&one, 1, 0, area, &with_line);
    assert_false(one.overlaps);
    assert_false(kg_labels_crossed(&one.box, 40, 40, 100, 40));
    /* no room: the least crowded place, marked */
    kg_label two[2] = {{.x = 10, .y = 10, .w = 18, .h = 18}, {.x = 10, .y = 10, .w = 18, .h = 18}};
    kg_labels_place(two, 2, 0, (kg_box){0, 0, 30, 30}, &(kg_obstacles){pt, 0, 1, NULL, 0});
    assert_false(two[0].overlaps);
    assert_true(two[1].overlaps);
}

/* A results file can hold any numbers: rates past any GPU, intensities of
 * 1e-300, roofs of 1e-320 B/s. The page stays small and finite, drawing
 * only what can be drawn. */
static void nonsense_numbers(void **state)
{
    (void)state;
    static const double bws[] = {1e-320, 4e12, 1.7e308};
    for (int b = 0; b < 3; b++) {
        kg_report r;
        kg_report_init(&r);
        r.roofs.bw = bws[b];
        r.roofs.bw_read = 1e308;
        r.roofs.mma[KG_FP16] = 800e12;
        r.roofs.mma[KG_BF16] = 1.7e308;
        r.roofs.fp32 = 1e-300;
        kg_result x = result("fine", "matmul", KG_V_OK, 0.9, 1000, 1e12, 800e12, 1);
        kg_report_add(&r, &x);
        x = result("fast", "matmul", KG_V_OK, 1e300, 1000, 1e12, 1e300, 1);
        kg_report_add(&r, &x);
        x = result("thin", "relu", KG_V_SLOW, 0.5, 1e-300, 1e12, 4e12, 0);
        kg_report_add(&r, &x);
        x = result("bf16", "matmul", KG_V_OK, 0.9, 1000, 1e12, 800e12, 1);
        snprintf(x.dtype, sizeof x.dtype, "bf16");
        kg_report_add(&r, &x);
        x = result("copy", "embedding", KG_V_OK, 0.9, 0, 0, 1e-320, 0);
        kg_report_add(&r, &x);
        x = result("flood", "embedding", KG_V_OK, 1e10, 0, 0, 1e300, 0);
        kg_report_add(&r, &x);
        char *html = render(kg_report_html, &r);
        assert_true(strlen(html) < 100000);
        assert_null(strstr(html, "inf"));
        assert_null(strstr(html, "nan"));
        char *roof = section(html, "<svg id=\"roofline-0\"", "</svg>");
        if (b != 1) { /* no memory roof to draw against */
            assert_non_null(strstr(html, "<p>No plots: the report has no measured roofs.</p>"));
            assert_string_equal(roof, "");
        } else { /* "fine" and "bf16" (not against its roof of 1.7e308), and only the fp16 roof */
            assert_int_equal(count(roof, "<circle class=\"kernel\""), 2);
            assert_int_equal(count(roof, "<line class=\"roof\""), 2);
            assert_null(strstr(html, "memory roof, read-only"));
        }
        assert_null(strstr(html, "class=\"bw\"")); /* neither a 1e-320 B/s roof nor 1e310 B/s */
        free(roof), free(html);
        kg_report_free(&r);
    }
}

/* Up to 600 points are numbered; past that the plot says why it numbers none. */
static void many_points(void **state)
{
    (void)state;
    for (int n = 600; n <= 601; n++) {
        kg_report r;
        kg_report_init(&r);
        r.roofs.bw = 4.0e12;
        r.roofs.mma[KG_FP16] = 800e12;
        unsigned s = 1;
        for (int i = 0; i < n; i++) {
            s = s * 1103515245u + 12345u;
            double rho = 0.01 + (s >> 8) % 1000 / 1000.0, in = pow(10, (s >> 4) % 5);
            kg_result x = result("k", "matmul", KG_V_OK, rho, in, 1e9, 800e12, 1);
            kg_report_add(&r, &x);
        }
        char *html = render(kg_report_html, &r);
        char *roof = section(html, "<svg id=\"roofline-0\"", "</svg>");
        int seen[602] = {0};
        assert_int_equal(count(roof, "<circle class=\"kernel\""), n);
        assert_int_equal(numbers_in(roof, "<g class=\"num\" data-n=\"", seen, n), n == 600 ? 600 : 0);
        assert_int_equal(count(roof, ">601 points, too many to number"), n == 601);
        free(roof), free(html);
        kg_report_free(&r);
    }
}

static char *short_text(const char *s, int max, int tail)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kg_html_short(f, "code", NULL, s, max, tail);
    fclose(f);
    return text;
}

/* Shortening counts characters, cuts none of them in half, keeps the full
 * text in an escaped title, and leaves short texts alone. */
static void shortened_text(void **state)
{
    (void)state;
    char *t = short_text("conv2d_nhwc_v3_fp16", 30, 9);
    assert_string_equal(t, "<code>conv2d_nhwc_v3_fp16</code>");
    free(t);
    t = short_text("abcdefghijklmnopqrstuvwxyz", 10, 3);
    assert_string_equal(t, "<code title=\"abcdefghijklmnopqrstuvwxyz\">abcdef\xE2\x80\xA6xyz</code>");
    free(t);
    /* Greek letters, two bytes each */
    t = short_text("\xCE\xB1\xCE\xB2\xCE\xB3\xCE\xB4\xCE\xB5\xCE\xB6\xCE\xB7", 5, 1);
    assert_string_equal(t, "<code title=\"\xCE\xB1\xCE\xB2\xCE\xB3\xCE\xB4\xCE\xB5\xCE\xB6\xCE\xB7\">"
                           "\xCE\xB1\xCE\xB2\xCE\xB3\xE2\x80\xA6\xCE\xB7</code>");
    free(t);
    t = short_text("<a>\"&'<a>\"&'<a>\"&'", 8, 2);
    assert_string_equal(t, "<code title=\"&lt;a&gt;&quot;&amp;&#39;&lt;a&gt;&quot;&amp;&#39;&lt;a&gt;&quot;&amp;&#39;\">"
                           "&lt;a&gt;&quot;&amp;\xE2\x80\xA6&amp;&#39;</code>");
    free(t);
    assert_int_equal(kg_html_chars("a\xCE\xB1z"), 3);
}

/* CSV cells: quotes doubled, nothing where there is no value, a formula
 * defused, a lone "-" (the text table's "none") never. */
static void csv_cells(void **state)
{
    (void)state;
    kg_report r;
    kg_report_init(&r);
    kg_result x = result("k", "relu", KG_V_OK, 0.9, 0.25, 1e6, 4e12, 0);
    snprintf(x.reason, sizeof x.reason, "-5 is \"odd\", isn't it");
    x.shape[0] = '\0';
    kg_report_add(&r, &x);
    x = result("+k", "relu", KG_V_SLOW, 0.9, 0.25, 1e6, 4e12, 0);
    snprintf(x.reason, sizeof x.reason, "-");
    kg_report_add(&r, &x);
    char *c = render(kg_report_csv, &r);
    assert_non_null(strstr(c, "\r\n,,\"k\",\"relu\",\"fp16\",,,\"OK\",\"'-5 is \"\"odd\"\", isn't it\",,,"));
    assert_non_null(strstr(c, "\r\n,,\"'+k\",\"relu\",\"fp16\",,\"4096x4096\",\"SLOW\",,,,"));
    free(c);
    kg_report_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_names_are_escaped),
        cmocka_unit_test(recorded_run),
        cmocka_unit_test(memory_only_kernels_on_the_bandwidth_panel),
        cmocka_unit_test(labels_do_not_overlap),
        cmocka_unit_test(many_points),
        cmocka_unit_test(nonsense_numbers),
        cmocka_unit_test(shortened_text),
        cmocka_unit_test(csv_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
