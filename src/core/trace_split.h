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
} kg_trace_rec;

/* rec: records sorted by start. samples[0..n): event times in seconds, or
 * negative for dropped samples (left alone). Replaces each sample's time by
 * its kernel span where the sample has kernels; returns how many it replaced.
 * *escaped counts samples with subject kernels on other streams. */
int kg_trace_split(const kg_trace_rec *rec, int nrec, double *samples, int n, int *escaped);

/* Records of the subject (not kgate's own kernels) on a stream other than
 * the timing stream (the stream of the block_stream records): during
 * sampling kgate runs nothing else, so each is work that escaped. Returns
 * how many, and in *first (may be NULL) the first one's index or -1; 0 when
 * there is no block_stream record. */
int kg_trace_foreign(const kg_trace_rec *rec, int nrec, int *first);

/* Records of the subject on the timing stream between two samples: after
 * a sample's window closed at its clock_probe and before the next sample's
 * block_stream (or the trace's end), where kgate queues only memsets (the
 * outputs' poison, a memset flush) and its own kernels -- except after a
 * sample it re-checked (checked[s] nonzero; checked may be NULL), whose
 * checks run there. Such a record is work the subject queued after its call
 * returned (from a thread of its own), which no sample times. A sample
 * without a probe (the first `unprobed`, escape-checked) has no such gap:
 * its window runs to the next blocker.
 * Returns how many, and in *first (may be NULL) the first one's index or
 * -1; when the timing stream holds more blockers or probes than kgate
 * queued (one blocker a sample, one probe a sample after the first
 * `unprobed`), those extra records, the subject's, named like kgate's
 * (*first: the record that went over kgate's count, which may be kgate's
 * own when the subject's came earlier); -1,
 * looking at nothing, when it holds fewer (records lost: samples cannot be
 * told apart).
 * kgate's own kernels are known by name (_Z12block_stream..., or bare or
 * demangled) and on the timing stream only, here and in the two functions
 * above. A record without its times (kg_trace_timeless) is left out here
 * and in kg_trace_split: it says nothing of when it ran. */
int kg_trace_deferred(const kg_trace_rec *rec, int nrec, const unsigned char *checked, int n, int unprobed,
                      int *first);

/* Records CUPTI gave without their times (start 0, or an end before the
 * start): a forced flush just after the work completed can return such a
 * record, its buffer not yet complete. kg_trace_foreign still counts one on
 * another stream (work there need not be finished when kgate's stream is). */
int kg_trace_timeless(const kg_trace_rec *rec, int nrec);

#ifdef __cplusplus
}
#endif
#endif
