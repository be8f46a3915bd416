/* Splitting a kernel trace into timing samples. Plain C: unit-tested on the
 * CPU (tests/test_trace.c); the records come from CUPTI (gpu/trace.c).
 *
 * Each sample on the timing stream looks like
 *     [read_flush] [block_stream] subject kernels... [clock_probe]
 * The subject's GPU time is the span from its first kernel's start to its
 * last kernel's end, between the end of its block_stream and the next kernel
 * of kgate's on that stream. A subject kernel on any other stream inside that
 * window is work that escaped the given stream. */
#ifndef KG_TRACE_SPLIT_H
#define KG_TRACE_SPLIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_trace_rec {
    uint64_t start, end; /* ns */
    uint32_t stream;
    char name[48];       /* start of the (mangled) kernel name; "[memcpy]", "[memset]" */
    uint8_t moves;       /* by its whole name, a PyTorch kernel that only moves data (kg_trace_moves_data) */
} kg_trace_rec;

/* Whether a kernel's whole (mangled) name is one of PyTorch's that only
 * move data: a fill (torch.zeros, empty-then-fill), a copy or a cast
 * (.contiguous(), .to(dtype): direct_copy_kernel_cuda), a concatenation.
 * The name in a record keeps only its start, which does not say. */
int kg_trace_moves_data(const char *name);

/* rec: records sorted by start. samples[0..n): event times in seconds, or
 * negative for dropped samples (left alone). Replaces each sample's time by
 * its kernel span where the sample has kernels; returns how many it replaced
 * (0, replacing none, when a blocker or probe of kgate's has no times).
 * *escaped counts samples with subject kernels on other streams. */
int kg_trace_split(const kg_trace_rec *rec, int nrec, double *samples, int n, int *escaped);

/* Removes the records on `stream` (kgate's input refills), keeping the
 * others in order; returns how many remain. */
int kg_trace_drop_stream(kg_trace_rec *rec, int nrec, uint32_t stream);

/* Records of the subject (not kgate's own kernels) on a stream other than
 * the timing stream (the stream of the block_stream records): during
 * sampling kgate runs nothing else, so each is work that escaped. Returns
 * how many, and in *first (may be NULL) the first one's index or -1; 0 when
 * there is no block_stream record. */
int kg_trace_foreign(const kg_trace_rec *rec, int nrec, int *first);

/* What kgate queued on the timing stream while sampling: n samples, a
 * blocker before each while the blocker was on (`blockers`: n, or fewer
 * when a launch that held the host turned it off), a probe after each but
 * the first `unprobed` (escape-checked samples have none), and `flushes`
 * read_flush kernels in all (n with the read flush, else 0); checked[s]
 * nonzero for a sample kgate re-checked (checked may be NULL). */
typedef struct kg_trace_plan {
    int n, blockers, unprobed, flushes;
    const unsigned char *checked;
} kg_trace_plan;

/* What kg_trace_deferred counted. */
typedef struct kg_trace_deferral {
    int gaps;       /* the subject's records in the gaps between samples */
    int named_like; /* records named like kgate's kernels beyond what it queued */
    int timeless;   /* records on the timing stream without their times */
    int first;      /* the first record counted in a gap (its index), or -1 */
} kg_trace_deferral;

/* Records of the subject on the timing stream between two samples: after
 * a sample's window closed at its clock_probe and before the next sample's
 * block_stream (or the trace's end), where kgate queues only memsets (the
 * outputs' poison, a memset flush) and its own kernels -- except after a
 * sample it re-checked, whose checks run there. Such a record is work the
 * subject queued after its call returned (from a thread of its own), which
 * no sample times. A sample without a probe has no such gap: its window
 * runs to the next blocker.
 * Before the gaps are looked at, the timing stream must hold what kgate
 * queued: more blockers, probes or flushes (records of the subject's named
 * like kgate's, which would also cut a sample's window short), or any
 * record without its times (a forced flush returns one for work still
 * running, the subject's or kgate's: the caller synchronizes the device
 * before it takes the trace, so an honest run has none) are counted, and
 * the gaps are not looked at; fewer (records lost: CUPTI turned off, or its
 * records taken) return -1, looking at nothing. With the blocker turned
 * off (plan->blockers < n) only the counts are checked.
 * Returns gaps + named_like + timeless, or -1; *d says which.
 * kgate's own kernels are known by name (_Z12block_stream..., or bare or
 * demangled) and on the timing stream only, here and in the two functions
 * above: the candidate's kernels may not take those names. */
int kg_trace_deferred(const kg_trace_rec *rec, int nrec, const kg_trace_plan *plan, kg_trace_deferral *d);

/* What of the subject's GPU time went to kernels named like a vendor
 * library's or PyTorch's own (the table in trace_split.c: cuBLAS's nvjet_,
 * xmma_ and cutlass3x_ kernels, any name holding cublas or cudnn, PyTorch's
 * at::native ones): a candidate that runs them times the library it should
 * replace. Templates compiled into the candidate (CUTLASS, CUB) are its own
 * code and are not counted. */
typedef struct kg_trace_vendor_use {
    int n;           /* such kernels in the subject's work */
    double share;    /* their summed duration over all the subject's kernels' (0 to 1) */
    double compute_share; /* the same of those that compute, not only move data (rec.moves) */
    int first;       /* the first one's index, or -1 */
    const char *lib; /* the library it was named for, or NULL */
} kg_trace_vendor_use;

/* The subject's work is what ran on the timing stream inside the samples'
 * windows (after a block_stream, before kgate's next kernel there); without
 * a block_stream, everything on the timing stream (or in the trace) that is
 * not kgate's own. kgate's re-checks, between samples, are not counted. */
void kg_trace_vendor(const kg_trace_rec *rec, int nrec, kg_trace_vendor_use *u);

/* Records CUPTI gave without their times (start 0, or an end before the
 * start): a forced flush returns such a record for work not yet complete.
 * kg_trace_foreign counts one on another stream like any other;
 * kg_trace_split keeps the event times when one of kgate's has none. */
int kg_trace_timeless(const kg_trace_rec *rec, int nrec);

#ifdef __cplusplus
}
#endif
#endif
