/* kgate report's writers (report/html_report.h, labels.h, html_text.h): a
 * candidate's hostile names come out escaped in HTML and Markdown and
 * quoted in CSV, and a recorded H200 run gives one point, one table row and
 * one CSV line per result; point labels never overlap; long names are
 * shortened whole characters at a time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void hostile_names_are_escaped(void **state)
{
    (void)state;
    kg_report r;
    kg_report_init(&r);
    r.roofs.bw = 4.27e12;
    r.roofs.mma[KG_FP16] = 790e12;
    kg_result x;
    memset(&x, 0, sizeof x);
    snprintf(x.kernel, sizeof x.kernel, "<script>alert(1)</script>|\"q\",x");
    snprintf(x.op, sizeof x.op, "softmax");
    snprintf(x.dtype, sizeof x.dtype, "fp16");
    snprintf(x.shape, sizeof x.shape, "4096x32768");
    snprintf(x.reason, sizeof x.reason, "E_best 0.1 < 0.80 & <b>");
    snprintf(x.summary, sizeof x.summary, "unused");
    x.verdict = KG_V_SLOW;
    kg_result_set(&x, "time/gpu/median", 1e-3);
    kg_result_set(&x, "roof/fraction", 0.1);
    kg_result_set(&x, "roof/intensity", 1.0);
    kg_report_add(&r, &x);
    char *html = render(kg_report_html, &r);
    assert_null(strstr(html, "<script>"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;|&quot;q&quot;,x"));
    assert_non_null(strstr(html, "0.80 &amp; &lt;b&gt;"));
    /* the gate line says what host time a launch call had for free */
    assert_non_null(strstr(html, "a launch call's host time is free to max(50 us, the GPU time) beyond it"));
    assert_int_equal(count(html, "<circle class=\"kernel\""), 1);
    assert_null(strstr(html, "src=\"http")); /* nothing loaded from the net */
    assert_non_null(strstr(html, "Content-Security-Policy\" content=\"default-src 'none'"));
    free(html);
    char *mdt = render(kg_report_markdown, &r);
    assert_non_null(strstr(mdt, "\\<script\\>alert(1)\\</script\\>\\|\"q\",x"));
    assert_non_null(strstr(mdt, "**Passes but slow** (1 correct kernel judged SLOW)"));
    free(mdt);
    char *c = render(kg_report_csv, &r);
    assert_non_null(strstr(c, "\"<script>alert(1)</script>|\"\"q\"\",x\""));
    assert_int_equal(count(c, "\r\n"), 2);
    free(c);
    /* a field a spreadsheet would run as a formula is defused */
    snprintf(r.results[0].reason, sizeof r.results[0].reason, "=HYPERLINK(\"x\")");
    c = render(kg_report_csv, &r);
    assert_non_null(strstr(c, "\"'=HYPERLINK(\"\"x\"\")\""));
    free(c);
    kg_report_free(&r);
}

static void recorded_run(void **state)
{
    (void)state;
    kg_report r;
    kg_err e = {0, ""};
    assert_int_equal(kg_report_read_json(KG_TEST_SRC "/data/recorded/run-h200-diagnose.json", &r, &e), 0);
    char *html = render(kg_report_html, &r);
    assert_int_equal(count(html, "<svg id=\"roofline-0\""), 1);
    assert_int_equal(count(html, "<circle class=\"kernel\""), r.n);
    assert_int_equal(count(html, "class=\"cliff\""), 24); /* the 24 passes-but-slow pairs */
    assert_int_equal(count(html, "<table id=\"verdicts\">"), 1);
    assert_int_equal(count(html, "<table id=\"families\">"), 1);
    assert_int_equal(count(html, "<section id=\"diagnosis\">"), 1);
    assert_non_null(strstr(html, "<b>RC0a</b>"));
    assert_non_null(strstr(html, "text-anchor=\"end\">100T</text>")); /* the FLOP/s axis in SI units */
    assert_null(strstr(html, "e+1"));
    free(html);
    char *c = render(kg_report_csv, &r);
    assert_int_equal(count(c, "\r\n"), r.n + 1);
    assert_null(strstr(c, "\"'-\"")); /* an OK row's cause is empty, not a defused "-" */
    free(c);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_names_are_escaped),
        cmocka_unit_test(recorded_run),
        cmocka_unit_test(labels_do_not_overlap),
        cmocka_unit_test(shortened_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
