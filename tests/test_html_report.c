/* kgate report's writers (report/html_report.h): a candidate's hostile names
 * come out escaped in HTML and Markdown and quoted in CSV, and a recorded
 * H200 run gives one point, one table row and one CSV line per result. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_report.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_names_are_escaped),
        cmocka_unit_test(recorded_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
