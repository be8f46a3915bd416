/* Kernel trace -> per-sample GPU times (see trace_split.h). */
#include "trace_split.h"

#include <string.h>

/* Whether a record is kgate's kernel `id` (gpu/timer.cu): its mangled name
 * holds the length-prefixed identifier (_Z12block_stream...), or the name is
 * the identifier itself, bare or demangled (block_stream(...)). A kernel
 * called my_clock_probe (_Z14my_clock_probe...) is not the probe. */
static int named(const kg_trace_rec *r, const char *mangled)
{
    const char *id = mangled + strspn(mangled, "0123456789");
    size_t n = strlen(id);
    return strstr(r->name, mangled) || (strncmp(r->name, id, n) == 0 && (r->name[n] == '\0' || r->name[n] == '('));
}

#define BLOCK_STREAM "12block_stream"
#define CLOCK_PROBE "11clock_probe"
#define READ_FLUSH "10read_flush"

static int is_ours(const kg_trace_rec *r)
{
    return named(r, BLOCK_STREAM) || named(r, CLOCK_PROBE) || named(r, READ_FLUSH);
}

int kg_trace_split(const kg_trace_rec *rec, int nrec, double *samples, int n, int *escaped)
{
    int timed = 0, s = -1;
    for (int i = 0; i < nrec && s + 1 < n; i++) {
        if (!named(&rec[i], BLOCK_STREAM))
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
        if (named(&rec[i], BLOCK_STREAM)) {
            stream = rec[i].stream;
            have = 1;
        }
    for (int i = 0; have && i < nrec; i++)
        n += !is_ours(&rec[i]) && rec[i].stream != stream;
    return n;
}

/* Whether the trace has the shape kg_trace_deferred reads: on the timing
 * stream, one blocker a sample and one probe a sample after the first
 * `unprobed`, and no record without its times (a record CUPTI had not
 * completed). Otherwise samples cannot be told apart, and what lies between
 * two markers is not known to be between two samples. */
static int well_formed(const kg_trace_rec *rec, int nrec, int n, int unprobed)
{
    int blockers = 0, probes = 0, have = 0;
    uint32_t stream = 0;
    for (int i = 0; i < nrec; i++) {
        if (rec[i].start == 0 || rec[i].end < rec[i].start)
            return 0;
        if (named(&rec[i], BLOCK_STREAM) && !have) {
            stream = rec[i].stream;
            have = 1;
        }
        if (have && rec[i].stream == stream) {
            blockers += named(&rec[i], BLOCK_STREAM);
            probes += named(&rec[i], CLOCK_PROBE);
        }
    }
    return blockers == n && probes == (n > unprobed ? n - unprobed : 0);
}

int kg_trace_deferred(const kg_trace_rec *rec, int nrec, const unsigned char *checked, int n, int unprobed)
{
    int s = -1, gap = 0, count = 0, have = 0;
    uint32_t stream = 0;
    if (!well_formed(rec, nrec, n, unprobed))
        return -1;
    for (int i = 0; i < nrec; i++) {
        const kg_trace_rec *r = &rec[i];
        if (named(r, BLOCK_STREAM)) {
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
        if (named(r, CLOCK_PROBE)) {
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
