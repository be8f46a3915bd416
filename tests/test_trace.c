/* Splitting a kernel trace into samples: spans, kgate's own kernels left
 * out, dropped samples kept, kernels on other streams counted, and work
 * queued on the timing stream between samples counted. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/trace_split.h"

#define REC(a, b, st, nm) {a, b, st, nm}

static void spans_between_markers(void **state)
{
    (void)state;
    /* two samples on stream 7: flush, blocker, two subject kernels, probe */
    kg_trace_rec r[] = {
        REC(0, 100, 7, "_Z10read_flushPK5uint4mPj"),
        REC(100, 200, 7, "_Z12block_streamPViyPi"),
        REC(203, 250, 7, "_Z6kernelA"),
        REC(251, 300, 7, "_Z6kernelB"),
        REC(305, 340, 7, "_Z11clock_probePyx"),
        REC(400, 500, 7, "_Z10read_flushPK5uint4mPj"),
        REC(500, 600, 7, "_Z12block_streamPViyPi"),
        REC(602, 700, 7, "_Z6kernelA"),
        REC(710, 740, 7, "_Z11clock_probePyx"),
    };
    double s[2] = {1e-6, 1e-6}; /* event times, a little longer */
    int esc = 0;
    assert_int_equal(kg_trace_split(r, 9, s, 2, &esc), 2);
    assert_true(fabs(s[0] - 97e-9) < 1e-15); /* 203 .. 300 */
    assert_true(fabs(s[1] - 98e-9) < 1e-15); /* 602 .. 700 */
    assert_int_equal(esc, 0);
}

static void other_streams_and_dropped_samples(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(100, 200, 7, "block_stream"),
        REC(210, 400, 9, "side_kernel"), /* escaped */
        REC(401, 402, 7, "clock_probe"),
        REC(500, 600, 7, "block_stream"),
        REC(610, 650, 7, "kernel"),
        REC(660, 670, 7, "clock_probe"),
        REC(700, 800, 7, "block_stream"),
        REC(805, 900, 9, "side_kernel"),
    };
    double s[3] = {5e-6, -2, 5e-6}; /* sample 1 was dropped (throttled) */
    int esc = 0;
    int timed = kg_trace_split(r, 8, s, 3, &esc);
    assert_int_equal(timed, 0);       /* no kernel on the timing stream, or dropped */
    assert_true(s[0] == 5e-6 && s[1] == -2 && s[2] == 5e-6); /* event times stay */
    assert_int_equal(esc, 2);
}

/* The audit's side-stream layer_norm at 1024x1024: its 5 us kernel starts
 * after the probe ended the sample's window, so no window sees it; it is
 * still work on another stream while sampling. So are a copy on the legacy
 * stream and a kernel launched later from a host thread. */
static void foreign_work_anywhere_in_sampling(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(100, 200, 7, "_Z12block_streamPViyPi"),
        REC(201, 202, 7, "_Z11clock_probePyx"),
        REC(203, 208, 13, "_Z15layer_norm_sidePK6__halfPS_i"),
        REC(300, 400, 7, "_Z12block_streamPViyPi"),
        REC(401, 402, 7, "_Z11clock_probePyx"),
        REC(403, 420, 7, "_Z6kernelA"), /* on the timing stream, outside a window: not foreign */
        REC(500, 510, 0, "[memcpy]"),
    };
    double s[2] = {1e-6, 1e-6};
    int esc = 0;
    kg_trace_split(r, 7, s, 2, &esc);
    assert_int_equal(esc, 0); /* the window rule alone misses it */
    int first = 0;
    assert_int_equal(kg_trace_foreign(r, 7, &first), 2);
    assert_int_equal(first, 2); /* the first named: the side stream's kernel */
    /* a record without its times still says where it ran */
    r[6].start = r[6].end = 0;
    assert_int_equal(kg_trace_foreign(r, 7, NULL), 2);
    /* kgate queues its kernels on the timing stream only: one of their names
     * on another stream is the subject's, work escaped all the same */
    kg_trace_rec ours[] = {REC(100, 200, 7, "block_stream"), REC(210, 220, 9, "read_flush")};
    assert_int_equal(kg_trace_foreign(ours, 2, &first), 1);
    assert_int_equal(first, 1);
    /* without a blocker there is no timing stream to compare with */
    kg_trace_rec none[] = {REC(0, 10, 9, "kernel")};
    assert_int_equal(kg_trace_foreign(none, 1, &first), 0);
    assert_int_equal(first, -1);
}

/* The subject's work queued on the timing stream after its call returned
 * (a thread of its own) lands between a sample's probe and the next
 * sample's blocker, where no sample times it: counted, except after a
 * sample kgate re-checked (its checks run there) and for memsets (the
 * outputs' poison) and kgate's own kernels. */
static void work_queued_after_the_call(void **state)
{
    (void)state;
    /* the real layout: the first sample without a probe (unprobed = 1 here,
     * 3 in the timer), then probed ones */
    kg_trace_rec r[] = {
        REC(1, 10, 7, "_Z6kernelA"),                  /* before sampling: not a sample's */
        REC(20, 90, 7, "_Z12block_streamPViyPi"),    /* sample 0: no probe */
        REC(91, 95, 7, "_Z6kernelA"),
        REC(96, 99, 7, "_Z6kernelB"),                 /* in its window: timed */
        REC(100, 200, 7, "_Z12block_streamPViyPi"), /* sample 1 */
        REC(203, 250, 7, "_Z6kernelA"),
        REC(305, 340, 7, "_Z11clock_probePyx"),
        REC(341, 380, 7, "_Z6kernelB"),             /* deferred: sample 1 not re-checked */
        REC(381, 382, 9, "_Z6kernelC"),             /* another stream: kg_trace_foreign's */
        REC(383, 385, 7, "_Z16my_clock_probe_kv"),  /* a kernel of the subject's, not the probe */
        REC(390, 395, 7, "[memset]"),               /* the poison */
        REC(400, 450, 7, "_Z10read_flushPK5uint4mPj"),
        REC(500, 600, 7, "_Z12block_streamPViyPi"), /* sample 2 */
        REC(602, 700, 7, "_Z6kernelA"),
        REC(710, 740, 7, "_Z11clock_probePyx"),
        REC(741, 760, 7, "_Z8ref_relu"),            /* sample 2 was re-checked: its checks */
        REC(761, 770, 7, "[memcpy]"),
        REC(800, 900, 7, "_Z12block_streamPViyPi"), /* sample 3, the last */
        REC(902, 950, 7, "_Z6kernelA"),
        REC(960, 970, 7, "_Z11clock_probePyx"),
        REC(980, 990, 7, "[memcpy]"),               /* deferred copy after the last sample */
    };
    const int nr = (int)(sizeof r / sizeof r[0]);
    unsigned char checked[4] = {0, 0, 1, 0};
    int first = 0;
    assert_int_equal(kg_trace_deferred(r, nr, checked, 4, 1, &first), 3);
    assert_int_equal(first, 7); /* kernelB after sample 1's probe */
    checked[1] = checked[3] = 1;
    assert_int_equal(kg_trace_deferred(r, nr, checked, 4, 1, &first), 0);
    assert_int_equal(first, -1);
    assert_int_equal(kg_trace_deferred(r, nr, NULL, 4, 1, NULL), 5); /* none re-checked */
    /* samples cannot be told apart: nothing is looked for */
    assert_int_equal(kg_trace_deferred(r, nr, NULL, 5, 1, &first), -1); /* a blocker short */
    assert_int_equal(first, -1);
    assert_int_equal(kg_trace_deferred(r, nr, NULL, 4, 0, NULL), -1); /* a probe short */
    /* more than kgate queued: the subject's kernels named like kgate's */
    kg_trace_rec named_like[sizeof r / sizeof r[0]];
    memcpy(named_like, r, sizeof r);
    snprintf(named_like[5].name, sizeof named_like[5].name, "clock_probe"); /* in sample 1's window */
    assert_int_equal(kg_trace_deferred(named_like, nr, checked, 4, 1, &first), 1);
    assert_true(first >= 0 && strcmp(named_like[first].name, "_Z11clock_probePyx") == 0);
    /* a record CUPTI gave without its times (a forced flush just after the
     * work completed) says nothing of when it ran: not counted, whether
     * kgate's or not, and counted apart */
    assert_int_equal(kg_trace_timeless(r, nr), 0);
    r[nr - 1].start = 0;   /* the copy after the last sample */
    r[11].end = r[11].start - 1; /* a flush (kgate's) */
    assert_int_equal(kg_trace_timeless(r, nr), 2);
    checked[3] = 0;
    assert_int_equal(kg_trace_deferred(r, nr, checked, 4, 1, NULL), 0);
    r[12].start = 0; /* sample 2's blocker: one blocker short, samples not told apart */
    assert_int_equal(kg_trace_deferred(r, nr, checked, 4, 1, NULL), -1);
    assert_int_equal(kg_trace_deferred(r, 0, NULL, 0, 3, NULL), 0);
}

/* kgate's kernels are known by name mangled, demangled or bare; a kernel
 * of the subject's whose name only contains one is the subject's. */
static void kgates_kernels_by_name(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(100, 200, 7, "block_stream(volatile int*, unsigned long long"),
        REC(203, 250, 7, "_Z6kernelA"),
        REC(260, 300, 7, "_ZN3evl10read_flushEv"), /* the subject's (a namespace's): in the span */
        REC(305, 340, 7, "clock_probe(unsigned long long*, long long)"),
        REC(400, 450, 7, "_ZL10read_flushPK5uint4mPj"),
        REC(500, 600, 7, "_Z12block_streamPViyPiPy"),
        REC(602, 700, 7, "_Z6kernelA"),
        REC(710, 740, 7, "_Z11clock_probePyx"),
    };
    double s[2] = {1e-6, 1e-6};
    int esc = 0;
    assert_int_equal(kg_trace_split(r, 8, s, 2, &esc), 2);
    assert_true(fabs(s[0] - 97e-9) < 1e-15); /* 203 .. 300 */
    assert_true(fabs(s[1] - 98e-9) < 1e-15);
    assert_int_equal(kg_trace_deferred(r, 8, NULL, 2, 0, NULL), 0);
}

static void fewer_samples_than_blockers(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(100, 200, 7, "block_stream"),
        REC(210, 220, 7, "kernel"),
        REC(300, 400, 7, "block_stream"),
        REC(410, 420, 7, "kernel"),
    };
    double s[1] = {1};
    int esc = 0;
    assert_int_equal(kg_trace_split(r, 4, s, 1, &esc), 1);
    assert_true(fabs(s[0] - 10e-9) < 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spans_between_markers),
        cmocka_unit_test(other_streams_and_dropped_samples),
        cmocka_unit_test(fewer_samples_than_blockers),
        cmocka_unit_test(foreign_work_anywhere_in_sampling),
        cmocka_unit_test(work_queued_after_the_call),
        cmocka_unit_test(kgates_kernels_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
