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

#include "measure/trace_split.h"

#define REC(a, b, st, nm) {a, b, st, nm, 0}

static void spans_between_markers(void **state)
{
    (void)state;
    /* two samples on stream 7: flush, blocker, two subject kernels, probe */
    kg_trace_rec r[] = {
        REC(1, 100, 7, "_Z10read_flushPK5uint4mPj"), /* CUPTI times are never 0: 0 is a missing one */
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

/* kgate's input refills run on their own stream, whose records are dropped
 * before anything is counted; the rest keep their order. */
static void refill_stream_dropped(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(1, 10, 5, "_Z12fill_uniformI6__halfEvPT_ldd"),
        REC(12, 18, 7, "_Z10read_flushPK5uint4mPj"),
        REC(20, 90, 7, "_Z12block_streamPViyPi"),
        REC(91, 95, 7, "_Z6kernelA"),
        REC(96, 97, 5, "[memset]"),
        REC(98, 99, 9, "_Z6kernelC"),
    };
    assert_int_equal(kg_trace_drop_stream(r, 6, 5), 4);
    assert_string_equal(r[0].name, "_Z10read_flushPK5uint4mPj");
    assert_string_equal(r[2].name, "_Z6kernelA");
    assert_int_equal(r[3].stream, 9);
    assert_int_equal(kg_trace_drop_stream(r, 4, 5), 4);
    assert_int_equal(kg_trace_drop_stream(r, 0, 5), 0);
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

/* kg_trace_deferred over what the timer queues: n samples, the first
 * `unprobed` without a probe, a read flush before each sample. */
static int deferred(const kg_trace_rec *r, int nr, int n, int unprobed, const unsigned char *checked,
                    kg_trace_deferral *why)
{
    kg_trace_plan plan = {n, n, unprobed, n, checked};
    return kg_trace_deferred(r, nr, &plan, why);
}

/* The subject's work queued on the timing stream after its call returned
 * (a thread of its own) lands between a sample's probe and the next
 * sample's blocker, where no sample times it: counted, except after a
 * sample kgate re-checked (its checks run there) and for memsets (the
 * outputs' poison) and kgate's own kernels. */
static void work_queued_after_the_call(void **state)
{
    (void)state;
    /* the real layout: a flush before each sample, the first sample without
     * a probe (unprobed = 1 here, 3 in the timer), then probed ones */
    kg_trace_rec r[] = {
        REC(1, 10, 7, "_Z6kernelA"),                 /* 0: before sampling: not a sample's */
        REC(12, 18, 7, "_Z10read_flushPK5uint4mPj"), /* 1 */
        REC(20, 90, 7, "_Z12block_streamPViyPi"),    /* 2: sample 0, no probe */
        REC(91, 95, 7, "_Z6kernelA"),
        REC(96, 97, 7, "_Z6kernelB"),                /* 4: in its window: timed */
        REC(98, 99, 7, "_Z10read_flushPK5uint4mPj"),
        REC(100, 200, 7, "_Z12block_streamPViyPi"),  /* 6: sample 1 */
        REC(203, 250, 7, "_Z6kernelA"),
        REC(305, 340, 7, "_Z11clock_probePyx"),
        REC(341, 380, 7, "_Z6kernelB"),              /* 9: deferred: sample 1 not re-checked */
        REC(381, 382, 9, "_Z6kernelC"),              /* another stream: kg_trace_foreign's */
        REC(383, 385, 7, "_Z16my_clock_probe_kv"),   /* 11: a kernel of the subject's, not the probe */
        REC(390, 395, 7, "[memset]"),                /* the poison */
        REC(400, 450, 7, "_Z10read_flushPK5uint4mPj"), /* 13 */
        REC(500, 600, 7, "_Z12block_streamPViyPi"),  /* 14: sample 2 */
        REC(602, 700, 7, "_Z6kernelA"),
        REC(710, 740, 7, "_Z11clock_probePyx"),
        REC(741, 760, 7, "_Z8ref_relu"),             /* 17: sample 2 was re-checked: its checks */
        REC(761, 770, 7, "[memcpy]"),
        REC(780, 790, 7, "_Z10read_flushPK5uint4mPj"),
        REC(800, 900, 7, "_Z12block_streamPViyPi"),  /* 20: sample 3, the last */
        REC(902, 950, 7, "_Z6kernelA"),
        REC(960, 970, 7, "_Z11clock_probePyx"),
        REC(980, 990, 7, "[memcpy]"),                /* 23: deferred copy after the last sample */
    };
    const int nr = (int)(sizeof r / sizeof r[0]);
    unsigned char checked[4] = {0, 0, 1, 0};
    kg_trace_deferral why;
    assert_int_equal(deferred(r, nr, 4, 1, checked, &why), 3);
    assert_int_equal(why.gaps, 3);
    assert_int_equal(why.first, 9); /* kernelB after sample 1's probe */
    assert_int_equal(why.named_like + why.timeless, 0);
    checked[1] = checked[3] = 1;
    assert_int_equal(deferred(r, nr, 4, 1, checked, &why), 0);
    assert_int_equal(why.first, -1);
    assert_int_equal(deferred(r, nr, 4, 1, NULL, &why), 5); /* none re-checked */
    /* fewer than kgate queued: samples cannot be told apart, nothing is looked for */
    assert_int_equal(deferred(r, nr, 5, 1, NULL, &why), -1); /* a blocker short */
    assert_int_equal(why.first, -1);
    assert_int_equal(deferred(r, nr, 4, 0, NULL, &why), -1); /* a probe short */
    kg_trace_plan more_flushes = {4, 4, 1, 5, NULL};
    assert_int_equal(kg_trace_deferred(r, nr, &more_flushes, &why), -1); /* a flush short */
    assert_int_equal(why.gaps + why.named_like + why.timeless, 0);
    /* the blocker turned off after sample 1 (a launch held the host): the
     * counts are still checked, the gaps are not looked at */
    kg_trace_plan off = {4, 2, 1, 4, NULL};
    assert_int_equal(kg_trace_deferred(r, nr, &off, &why), 2); /* blockers of samples 2 and 3: not kgate's */
    assert_int_equal(why.named_like, 2);
    kg_trace_rec two[sizeof r / sizeof r[0]];
    memcpy(two, r, sizeof r);
    snprintf(two[14].name, sizeof two[14].name, "_Z6kernelA"); /* the two blockers kgate queued no more */
    snprintf(two[20].name, sizeof two[20].name, "_Z6kernelA");
    assert_int_equal(kg_trace_deferred(two, nr, &off, &why), 0);   /* kernelB in sample 1's gap: not looked at */
    snprintf(two[2].name, sizeof two[2].name, "_Z6kernelA");
    assert_int_equal(kg_trace_deferred(two, nr, &off, &why), -1); /* one of the two lost */

    /* more than kgate queued: the subject's kernels named like kgate's. A
     * probe's name inside a window would end the sample there; a flush's
     * name in a gap would pass for kgate's flush */
    kg_trace_rec like[sizeof r / sizeof r[0]];
    memcpy(like, r, sizeof r);
    snprintf(like[7].name, sizeof like[7].name, "clock_probe");
    assert_int_equal(deferred(like, nr, 4, 1, checked, &why), 1);
    assert_int_equal(why.named_like, 1);
    assert_int_equal(why.first, -1); /* which one is the subject's is not told */
    memcpy(like, r, sizeof r);
    snprintf(like[9].name, sizeof like[9].name, "_Z10read_flushPf");
    assert_int_equal(deferred(like, nr, 4, 1, checked, &why), 1);
    assert_int_equal(why.named_like, 1);

    /* a record CUPTI gave without its times (work still running at a forced
     * flush; the timer synchronizes the device before it takes the trace):
     * it cannot be placed, the subject's or kgate's (a flush forced while
     * kgate's probe ran would hide the gap after it), so it is counted */
    assert_int_equal(kg_trace_timeless(r, nr), 0);
    memcpy(like, r, sizeof r);
    like[23].start = like[23].end = 0;
    assert_int_equal(kg_trace_timeless(like, nr), 1);
    assert_int_equal(deferred(like, nr, 4, 1, checked, &why), 1);
    assert_int_equal(why.timeless, 1);
    assert_int_equal(why.gaps, 0);
    memcpy(like, r, sizeof r);
    like[13].end = like[13].start - 1; /* a flush of kgate's */
    like[22].start = 0;                /* the last probe */
    assert_int_equal(kg_trace_timeless(like, nr), 2);
    assert_int_equal(deferred(like, nr, 4, 1, checked, &why), 2);
    assert_int_equal(why.timeless, 2);
    assert_int_equal(why.named_like, 0); /* and the counts are not taken for short */
    like[9].start = 0; /* the subject's kernelB as well */
    assert_int_equal(deferred(like, nr, 4, 1, checked, &why), 3);
    assert_int_equal(why.timeless, 3);
    assert_int_equal(deferred(r, 0, 0, 3, NULL, &why), 0);
}

/* A blocker or probe of kgate's without its times cannot be placed: the
 * samples keep their event times. */
static void kgates_record_without_times(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(0, 0, 7, "_Z12block_streamPViyPi"), /* sorted first: its times are missing */
        REC(100, 200, 7, "_Z12block_streamPViyPi"),
        REC(203, 250, 7, "_Z6kernelA"),
        REC(305, 340, 7, "_Z11clock_probePyx"),
        REC(500, 600, 7, "_Z6kernelA"),
        REC(710, 740, 7, "_Z11clock_probePyx"),
    };
    double s[2] = {1e-6, 2e-6};
    int esc = 0;
    assert_int_equal(kg_trace_split(r, 6, s, 2, &esc), 0);
    assert_true(s[0] == 1e-6 && s[1] == 2e-6);
    r[0].end = 90; /* with its times it is sample 0's */
    r[0].start = 20;
    assert_int_equal(kg_trace_split(r, 6, s, 2, &esc), 1); /* sample 0 ran no kernel */
    assert_true(s[0] == 1e-6 && fabs(s[1] - 47e-9) < 1e-15);
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
    kg_trace_plan plan = {2, 2, 0, 1, NULL}; /* one flush: sample 1's */
    kg_trace_deferral why;
    assert_int_equal(kg_trace_deferred(r, 8, &plan, &why), 0);
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

/* A vendor library's kernels among the subject's, by name: cuBLAS's Hopper
 * GEMM, cuDNN's, PyTorch's elementwise; CUTLASS and CUB templates compiled
 * into the candidate, kgate's own kernels and copies are not counted. A name
 * that fills its array without a NUL is read within it. */
static void vendor_kernels_by_name(void **state)
{
    (void)state;
    kg_trace_rec r[] = {
        REC(100, 200, 7, "_Z12block_streamPViyPiPy"),
        REC(203, 250, 7, "_ZN7cutlass13device_kernelIN7example6KernelEEE"),
        REC(251, 260, 7, "_ZN3cub18DeviceReduceKernelINS_18DeviceReduce"),
        REC(261, 270, 7, "[memcpy]"),
        REC(271, 300, 7, "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNN"),
        REC(301, 320, 7, "_ZN8cublasLt19splitKreduce_kernelILi32ELi16Eif"),
        REC(321, 330, 3, "cudnn_generated_fort_native_sdpa_sm90_flash_fp"), /* another stream */
        REC(331, 340, 7, "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize"),
        REC(341, 350, 7, "_ZN2at6native29vectorized_elementwise_kernelI"),
        REC(351, 360, 7, "_Z11clock_probePyx"),
        REC(361, 900, 7, "_ZN2at6native13reduce_kernelILi512ELi1ENS0"), /* a re-check's reference */
    };
    kg_trace_vendor_use u;
    /* in the window: cutlass 47, cub 9, memcpy 9, nvjet 29, cublasLt 19, xmma 9, at::native 9 */
    kg_trace_vendor(r, 11, &u);
    assert_int_equal(u.n, 4);
    assert_true(fabs(u.share - 66.0 / 131.0) < 1e-12);
    assert_int_equal(u.first, 4);
    assert_string_equal(u.lib, "cuBLAS");
    kg_trace_vendor(r, 4, &u); /* the candidate's own templates and a copy */
    assert_int_equal(u.n, 0);
    assert_true(u.share == 0);
    assert_int_equal(u.first, -1);
    assert_null(u.lib);
    kg_trace_vendor(r + 6, 1, &u); /* without a blocker (samples not told apart): all of it */
    assert_int_equal(u.n, 1);
    assert_true(u.share == 1);
    assert_string_equal(u.lib, "cuDNN");
    kg_trace_vendor(r + 8, 1, &u);
    assert_string_equal(u.lib, "PyTorch");
    kg_trace_rec full;
    memset(&full, 0, sizeof full);
    full.start = 1;
    full.end = 2;
    memset(full.name, 'x', sizeof full.name);
    memcpy(full.name + sizeof full.name - 5, "cudnn", 5); /* ends at the array's end */
    kg_trace_vendor(&full, 1, &u);
    assert_int_equal(u.n, 1);
    memcpy(full.name + sizeof full.name - 4, "cudn", 4); /* the 'n' past it is not read */
    full.name[sizeof full.name - 5] = 'x';
    kg_trace_vendor(&full, 1, &u);
    assert_int_equal(u.n, 0);
}

/* PyTorch's kernels that only move data (a fill, a copy or cast, a
 * concatenation) are told from those that compute by their whole names, and
 * kg_trace_vendor's compute_share leaves them out (its share keeps them). */
static void data_moves_are_not_computing(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int moves;
    } names[] = {
        {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 1},
        {"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_49_GLOBAL__N__d1b0b0e2_20_Copy_cu_"
         "direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE8_clEvEUlN3c104HalfEE_"
         "St5arrayIPcLm2EEEEviT0_T1_", 1},
        {"_ZN2at6native12_GLOBAL__N_130CatArrayBatchedCopy_contig_alignedIfjLi1ELi128ELi1EEEvPT_", 1},
        {"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal"
         "10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_", 0},
        {"_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_15logsumexp", 0},
        {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNN", 0},
        {"_Z11FillFunctorPf", 0}, /* the candidate's own kernel of that name */
        {"", 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (kg_trace_moves_data(names[i].name) != names[i].moves)
            fail_msg("%s: moves %d", names[i].name, !names[i].moves);
    assert_int_equal(kg_trace_moves_data(NULL), 0);
    kg_trace_rec r[] = {
        REC(100, 200, 7, "_Z12block_streamPViyPiPy"),
        REC(201, 231, 7, "_ZN2at6native29vectorized_elementwise_kernelI"), /* a fill: 30 */
        REC(232, 292, 7, "_Z10mul_kernelPKDhPDh"),                         /* the candidate's: 60 */
        REC(293, 303, 7, "_ZN2at6native13reduce_kernelILi128ELi4ENS0"),    /* computing: 10 */
        REC(304, 310, 7, "_Z11clock_probePyx"),
    };
    r[1].moves = 1;
    kg_trace_vendor_use u;
    kg_trace_vendor(r, 5, &u);
    assert_int_equal(u.n, 2);
    assert_true(fabs(u.share - 40.0 / 100.0) < 1e-12);
    assert_true(fabs(u.compute_share - 10.0 / 100.0) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spans_between_markers),
        cmocka_unit_test(refill_stream_dropped),
        cmocka_unit_test(other_streams_and_dropped_samples),
        cmocka_unit_test(fewer_samples_than_blockers),
        cmocka_unit_test(foreign_work_anywhere_in_sampling),
        cmocka_unit_test(work_queued_after_the_call),
        cmocka_unit_test(kgates_record_without_times),
        cmocka_unit_test(kgates_kernels_by_name),
        cmocka_unit_test(vendor_kernels_by_name),
        cmocka_unit_test(data_moves_are_not_computing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
