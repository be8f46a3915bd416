/* Kernel trace -> per-sample GPU times, work on other streams, and work
 * queued between samples (see trace_split.h). */
#include "trace_split.h"

#include <string.h>

/* Whether a record's name is kgate's kernel `id` (gpu/timer.cu): the mangled
 * name _Z12block_stream... (or _ZL12... for internal linkage), or the bare or
 * demangled name (block_stream, block_stream(...)). A kernel called
 * my_clock_probe, or _ZN3evl10read_flushEv, is not kgate's. */
static int named(const kg_trace_rec *r, const char *mangled)
{
    const char *p = r->name;
    if (strncmp(p, "_Z", 2) == 0)
        return strncmp(p + 2 + (p[2] == 'L'), mangled, strlen(mangled)) == 0;
    const char *id = mangled + strspn(mangled, "0123456789");
    size_t n = strlen(id);
    return strncmp(p, id, n) == 0 && (p[n] == '\0' || p[n] == '(');
}

/* A record CUPTI gave without its times: a forced flush can return one
 * for work not yet complete. */
static int timeless(const kg_trace_rec *r)
{
    return r->start == 0 || r->end < r->start;
}

#define BLOCK_STREAM "12block_stream"
#define CLOCK_PROBE "11clock_probe"
#define READ_FLUSH "10read_flush"

/* kgate queues its kernels on the timing stream only: one of the names on
 * another stream is the subject's. */
static int is_ours(const kg_trace_rec *r, uint32_t stream)
{
    return r->stream == stream && (named(r, BLOCK_STREAM) || named(r, CLOCK_PROBE) || named(r, READ_FLUSH));
}

/* The timing stream: the first block_stream's; 0 in *have when none. */
static uint32_t timing_stream(const kg_trace_rec *rec, int nrec, int *have)
{
    for (int i = 0; i < nrec; i++)
        if (named(&rec[i], BLOCK_STREAM)) {
            *have = 1;
            return rec[i].stream;
        }
    *have = 0;
    return 0;
}

int kg_trace_split(const kg_trace_rec *rec, int nrec, double *samples, int n, int *escaped)
{
    int timed = 0, s = -1, have = 0;
    uint32_t stream = timing_stream(rec, nrec, &have);
    for (int i = 0; have && i < nrec; i++)
        if (is_ours(&rec[i], stream) && timeless(&rec[i]))
            return 0; /* a blocker or probe out of place: the windows cannot be told; event times stay */
    for (int i = 0; have && i < nrec && s + 1 < n; i++) {
        if (rec[i].stream != stream || !named(&rec[i], BLOCK_STREAM))
            continue;
        s++;
        uint64_t w0 = rec[i].end, w1 = UINT64_MAX, first = UINT64_MAX, last = 0;
        for (int j = i + 1; j < nrec; j++)
            if (is_ours(&rec[j], stream)) {
                w1 = rec[j].start;
                break;
            }
        int other = 0;
        for (int j = i + 1; j < nrec && rec[j].start < w1; j++) {
            if (rec[j].start < w0 || timeless(&rec[j]))
                continue;
            if (rec[j].stream != stream) {
                other = 1;
                continue;
            }
            if (is_ours(&rec[j], stream))
                continue;
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

int kg_trace_drop_stream(kg_trace_rec *rec, int nrec, uint32_t stream)
{
    int m = 0;
    for (int i = 0; i < nrec; i++)
        if (rec[i].stream != stream)
            rec[m++] = rec[i];
    return m;
}

int kg_trace_foreign(const kg_trace_rec *rec, int nrec, int *first)
{
    int have = 0, n = 0;
    uint32_t stream = timing_stream(rec, nrec, &have);
    if (first)
        *first = -1;
    for (int i = 0; have && i < nrec; i++)
        if (rec[i].stream != stream) {
            if (first && *first < 0)
                *first = i;
            n++;
        }
    return n;
}

/* Substrings of the (mangled) names that vendor libraries' kernels carry,
 * and the library each names: nvjet_ are cuBLAS's Hopper GEMMs, xmma_ the
 * GEMM and convolution kernels of cuBLAS and cuDNN (sm90_xmma_gemm_...,
 * xmma_fprop_...), cutlass3x_ the instances CUTLASS's generator emits for
 * cuBLAS (a kernel written with CUTLASS's templates is named for its own
 * code: _ZN7cutlass...), cublasLt:: and cudnn:: namespaces and cuDNN's
 * generated kernels carry their library's name, and _ZN2at6native is
 * at::native, PyTorch's own operators. */
static const struct {
    const char *part, *lib;
} vendor[] = {
    {"nvjet_", "cuBLAS"}, {"xmma_", "cuBLAS or cuDNN"}, {"cutlass3x_", "cuBLAS"},
    {"cublas", "cuBLAS"}, {"cudnn", "cuDNN"},           {"_ZN2at6native", "PyTorch"},
};

/* Whether the name (not trusted to end within its array) holds part. */
static int name_has(const kg_trace_rec *r, const char *part)
{
    const char *end = memchr(r->name, '\0', sizeof r->name);
    size_t n = end ? (size_t)(end - r->name) : sizeof r->name, k = strlen(part);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(r->name + i, part, k) == 0)
            return 1;
    return 0;
}

int kg_trace_moves_data(const char *name)
{
    static const char *const moves[] = {"FillFunctor", "direct_copy_kernel", "CatArrayBatchedCopy"};
    if (!name || !strstr(name, "_ZN2at6native"))
        return 0;
    for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++)
        if (strstr(name, moves[i]))
            return 1;
    return 0;
}

/* The vendor library a record is named for, or NULL. */
static const char *vendor_of(const kg_trace_rec *r)
{
    for (size_t v = 0; v < sizeof vendor / sizeof vendor[0]; v++)
        if (name_has(r, vendor[v].part))
            return vendor[v].lib;
    return NULL;
}

/* Whether record i is the subject's work: inside a sample's window on the
 * timing stream (when there are windows), else anything not kgate's own. */
static int subject_work(const kg_trace_rec *rec, int i, uint32_t stream, int have, int *in_window)
{
    const kg_trace_rec *r = &rec[i];
    if (timeless(r))
        return 0;
    if (!have)
        return 1;
    if (r->stream != stream)
        return 0;
    if (named(r, BLOCK_STREAM)) {
        *in_window = 1;
        return 0;
    }
    if (is_ours(r, stream)) {
        *in_window = 0;
        return 0;
    }
    return *in_window;
}

void kg_trace_vendor(const kg_trace_rec *rec, int nrec, kg_trace_vendor_use *u)
{
    int have = 0, in_window = 0;
    const uint32_t stream = timing_stream(rec, nrec, &have);
    double all = 0, theirs = 0, computing = 0;
    memset(u, 0, sizeof *u);
    u->first = -1;
    for (int i = 0; i < nrec; i++) {
        if (!subject_work(rec, i, stream, have, &in_window))
            continue;
        const double d = (double)(rec[i].end - rec[i].start);
        const char *lib = vendor_of(&rec[i]);
        all += d;
        if (!lib)
            continue;
        theirs += d;
        if (!rec[i].moves)
            computing += d;
        if (u->n++ == 0) {
            u->first = i;
            u->lib = lib;
        }
    }
    u->share = all > 0 ? theirs / all : 0;
    u->compute_share = all > 0 ? computing / all : 0;
}

int kg_trace_timeless(const kg_trace_rec *rec, int nrec)
{
    int n = 0;
    for (int i = 0; i < nrec; i++)
        n += timeless(&rec[i]);
    return n;
}

int kg_trace_deferred(const kg_trace_rec *rec, int nrec, const kg_trace_plan *plan, kg_trace_deferral *d)
{
    int have = 0, blockers = 0, probes = 0, flushes = 0;
    const int n = plan->n, want = n > plan->unprobed ? n - plan->unprobed : 0;
    uint32_t stream = timing_stream(rec, nrec, &have);
    memset(d, 0, sizeof *d);
    d->first = -1;
    if (!have)
        return plan->blockers > 0 ? -1 : 0;
    /* the shape kgate queued: plan->blockers blockers (one a sample while the
     * blocker was on), one probe a sample after the first `unprobed`,
     * plan->flushes flushes; kgate's records are counted by name. A record
     * without its times, kgate's or not, cannot be placed: the device was
     * synchronized before the trace was taken, so none should be */
    for (int i = 0; i < nrec; i++) {
        const kg_trace_rec *r = &rec[i];
        if (r->stream != stream)
            continue;
        if (timeless(r))
            d->timeless++;
        else if (named(r, BLOCK_STREAM))
            blockers++;
        else if (named(r, CLOCK_PROBE))
            probes++;
        else if (named(r, READ_FLUSH))
            flushes++;
    }
    d->named_like = (blockers > plan->blockers ? blockers - plan->blockers : 0) +
                    (probes > want ? probes - want : 0) +
                    (flushes > plan->flushes ? flushes - plan->flushes : 0);
    if (d->named_like || d->timeless) /* the gaps cannot be trusted to be kgate's */
        return d->named_like + d->timeless;
    if (blockers < plan->blockers || probes < want || flushes < plan->flushes)
        return -1; /* records lost */
    if (plan->blockers < n)
        return 0; /* the blocker was turned off: samples cannot be told apart */
    int s = -1, gap = 0;
    for (int i = 0; i < nrec; i++) {
        const kg_trace_rec *r = &rec[i];
        if (r->stream != stream)
            continue;
        if (named(r, BLOCK_STREAM)) {
            s++;
            gap = 0;
            continue;
        }
        if (named(r, CLOCK_PROBE)) {
            gap = 1; /* the sample's window closed */
            continue;
        }
        if (!gap || named(r, READ_FLUSH) || strcmp(r->name, "[memset]") == 0)
            continue; /* kgate's flush (as many as it queued) and the poison */
        if (!(plan->checked && s >= 0 && s < n && plan->checked[s])) {
            if (d->gaps == 0)
                d->first = i;
            d->gaps++;
        }
    }
    return d->gaps;
}
