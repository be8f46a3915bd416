/* Kernel trace -> per-sample GPU times (see trace_split.h). */
#include "trace_split.h"

#include <string.h>

static int is_ours(const kg_trace_rec *r)
{
    return strstr(r->name, "block_stream") || strstr(r->name, "clock_probe") ||
           strstr(r->name, "read_flush");
}

int kg_trace_split(const kg_trace_rec *rec, int nrec, double *samples, int n, int *escaped)
{
    int timed = 0, s = -1;
    for (int i = 0; i < nrec && s + 1 < n; i++) {
        if (!strstr(rec[i].name, "block_stream"))
            continue;
        s++;
        uint32_t stream = rec[i].stream;
        uint64_t w0 = rec[i].end, w1 = UINT64_MAX, first = UINT64_MAX, last = 0;
        for (int j = i + 1; j < nrec; j++)
            if (rec[j].stream == stream && is_ours(&rec[j])) {
                w1 = rec[j].start;
                break;
            }
        int other = 0;
        for (int j = i + 1; j < nrec && rec[j].start < w1; j++) {
            if (is_ours(&rec[j]) || rec[j].start < w0)
                continue;
            if (rec[j].stream != stream) {
                other = 1;
                continue;
            }
            first = rec[j].start < first ? rec[j].start : first;
            last = rec[j].end > last ? rec[j].end : last;
        }
        *escaped += other;
        if (last > first && samples[s] >= 0) {
            samples[s] = (double)(last - first) * 1e-9;
            timed++;
        }
    }
    return timed;
}

int kg_trace_foreign(const kg_trace_rec *rec, int nrec)
{
    int have = 0, n = 0;
    uint32_t stream = 0;
    for (int i = 0; i < nrec && !have; i++)
        if (strstr(rec[i].name, "block_stream")) {
            stream = rec[i].stream;
            have = 1;
        }
    for (int i = 0; have && i < nrec; i++)
        n += !is_ours(&rec[i]) && rec[i].stream != stream;
    return n;
}

int kg_trace_deferred(const kg_trace_rec *rec, int nrec, const unsigned char *checked, int n)
{
    int s = -1, gap = 0, count = 0, have = 0;
    uint32_t stream = 0;
    for (int i = 0; i < nrec; i++) {
        const kg_trace_rec *r = &rec[i];
        if (strstr(r->name, "block_stream")) {
            if (!have) {
                stream = r->stream;
                have = 1;
            }
            if (r->stream == stream) {
                s++;
                gap = 0;
            }
            continue;
        }
        if (!have || r->stream != stream)
            continue;
        if (strstr(r->name, "clock_probe")) {
            gap = 1; /* the sample's window closed */
            continue;
        }
        if (!gap || is_ours(r) || strcmp(r->name, "[memset]") == 0)
            continue;
        if (!(checked && s >= 0 && s < n && checked[s]))
            count++;
    }
    return count;
}
