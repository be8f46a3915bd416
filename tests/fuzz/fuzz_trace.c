/* Fuzz target: reading a kernel trace (measure/trace_split.h). The records come
 * from CUPTI, but their names are the candidate's to choose (a kernel may be
 * called anything, clock_probe included) and their order, streams and count
 * are whatever its work made them. Whatever the records, the readers
 * must stay in bounds and give counts that hold together: samples timed at
 * most n, a replaced sample time positive, other samples untouched,
 * deferred records -1 or 0 to nrec, foreign and vendor records 0 to nrec.
 *
 * Input: a byte for the number of samples, then 8-byte records: start (3
 * bytes), duration (2), stream (1), name (1: one of the names below, or the
 * next bytes up to a NUL as a name of the candidate's). */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "measure/trace_split.h"

#define MAXR 256
#define MAXN 32

static const char *names[] = {
    "_Z12block_streamPViyPiPy", "_Z11clock_probePyx", "_Z10read_flushPK5uint4mPj", "[memset]", "[memcpy]",
    "_Z6kernelA", "block_stream", "clock_probe(unsigned long long*, long long)", "_Z16my_clock_probe_kv", "",
};

static int by_start(const void *a, const void *b)
{
    const kg_trace_rec *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kg_trace_rec rec[MAXR];
    double samples[MAXN], before[MAXN];
    unsigned char checked[MAXN];
    if (size < 1)
        return 0;
    memset(checked, 0, sizeof checked);
    int n = data[0] % MAXN, nrec = 0;
    size_t i = 1;
    while (i + 8 <= size && nrec < MAXR) {
        kg_trace_rec *r = &rec[nrec++];
        const uint8_t *d = data + i;
        r->start = (uint64_t)d[0] | (uint64_t)d[1] << 8 | (uint64_t)d[2] << 16;
        r->end = r->start + ((uint64_t)d[3] | (uint64_t)d[4] << 8);
        if (d[3] == 0xFF)
            r->end = 0; /* an incomplete record */
        r->stream = d[5] & 3;
        r->moves = (d[5] >> 2) & 1;
        i += 8;
        if (d[6] < 2 * (sizeof names / sizeof names[0])) {
            snprintf(r->name, sizeof r->name, "%s", names[d[6] % (sizeof names / sizeof names[0])]);
        } else { /* the candidate's own name: the bytes that follow */
            size_t k = 0;
            while (i < size && data[i] && k + 1 < sizeof r->name)
                r->name[k++] = (char)data[i++];
            r->name[k] = '\0';
            i += i < size;
        }
        checked[nrec % MAXN] = d[7] & 1;
    }
    qsort(rec, (size_t)nrec, sizeof rec[0], by_start);
    for (int s = 0; s < n; s++)
        samples[s] = before[s] = (s % 5 == 3) ? -1 : 1e-6 * (s + 1); /* some dropped */
    int esc = 0;
    int timed = kg_trace_split(rec, nrec, samples, n, &esc);
    if (timed < 0 || timed > n || esc < 0 || esc > n)
        abort();
    for (int s = 0; s < n; s++)
        if (samples[s] != before[s] && !(before[s] >= 0 && samples[s] > 0))
            abort();
    int first = 0;
    int foreign = kg_trace_foreign(rec, nrec, &first);
    if (foreign < 0 || foreign > nrec || first < -1 || first >= nrec || (foreign > 0) != (first >= 0))
        abort();
    kg_trace_vendor_use vu;
    kg_trace_vendor(rec, nrec, &vu);
    if (vu.n < 0 || vu.n > nrec || (vu.n > 0) != (vu.first >= 0) || (vu.n > 0) != (vu.lib != NULL) ||
        vu.first >= nrec || !(vu.share >= 0 && vu.share <= 1) || (vu.n == 0 && vu.share != 0) ||
        !(vu.compute_share >= 0 && vu.compute_share <= vu.share + 1e-12))
        abort();
    int timeless = kg_trace_timeless(rec, nrec);
    if (timeless < 0 || timeless > nrec)
        abort();
    for (int unprobed = 0; unprobed <= 3; unprobed += 3) {
        /* read flush or not; the blocker on throughout, or turned off half way */
        kg_trace_plan plan = {n, (size & 2) ? n / 2 : n, unprobed, (size & 1) ? n : 0, checked};
        kg_trace_deferral why;
        int deferred = kg_trace_deferred(rec, nrec, &plan, &why);
        if (deferred < -1 || deferred > nrec || why.first < -1 || why.first >= nrec || (why.gaps > 0) != (why.first >= 0))
            abort();
        if (deferred >= 0 && deferred != why.gaps + why.named_like + why.timeless)
            abort();
        if (deferred < 0 && (why.gaps || why.named_like || why.timeless || why.first != -1))
            abort();
        plan.checked = NULL;
        if (kg_trace_deferred(rec, nrec, &plan, &why) < deferred)
            abort(); /* re-checked samples only take records away */
    }
    return 0;
}
