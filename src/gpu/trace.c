/* CUPTI activity tracing of kernels (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
 * which does not serialize kernels), copies and memsets. */
#include "trace.h"

#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BUF_SIZE (8u << 20)

/* CUPTI may complete buffers on its own thread: TR is guarded by mu. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static struct {
    int started;
    kg_trace_rec *recs;
    int n, cap;
    int dropped;
} TR;

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, BUF_SIZE);
    *size = *buf ? BUF_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                   size_t valid)
{
    CUpti_Activity *rec = NULL;
    (void)ctx;
    (void)stream;
    (void)size;
    pthread_mutex_lock(&mu);
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        uint64_t start, end;
        uint32_t stream;
        const char *name;
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            start = k->start, end = k->end, stream = k->streamId, name = k->name ? k->name : "";
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            start = m->start, end = m->end, stream = m->streamId, name = "[memcpy]";
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
            start = m->start, end = m->end, stream = m->streamId, name = "[memset]";
        } else {
            continue;
        }
        if (TR.n == TR.cap) {
            int cap = TR.cap ? 2 * TR.cap : 4096;
            kg_trace_rec *r = realloc(TR.recs, sizeof *r * (size_t)cap);
            if (!r) {
                TR.dropped++;
                continue;
            }
            TR.recs = r;
            TR.cap = cap;
        }
        kg_trace_rec *o = &TR.recs[TR.n++];
        o->start = start;
        o->end = end;
        o->stream = stream;
        strncpy(o->name, name, sizeof o->name - 1);
        o->name[sizeof o->name - 1] = '\0';
        o->moves = (uint8_t)kg_trace_moves_data(name);
    }
    pthread_mutex_unlock(&mu);
    free(buf);
}

int kg_trace_start(kg_err *err)
{
    if (TR.started)
        return 0;
    KG_CUPTI(cuptiActivityRegisterCallbacks(buf_requested, buf_completed));
    KG_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    KG_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    KG_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
    TR.started = 1;
out:
    return err->code;
}

static int by_start(const void *a, const void *b)
{
    const kg_trace_rec *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

int kg_trace_take(kg_trace_rec **recs, int *n, kg_err *err)
{
    *recs = NULL;
    *n = 0;
    KG_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    pthread_mutex_lock(&mu);
    *recs = TR.recs;
    *n = TR.n;
    int dropped = TR.dropped;
    TR.recs = NULL;
    TR.n = TR.cap = TR.dropped = 0;
    pthread_mutex_unlock(&mu);
    if (dropped) /* a trace with holes tells nothing for sure */
        return kg_err_set(err, KG_EXIT_ENV, "%d trace record(s) dropped: out of host memory", dropped);
    qsort(*recs, (size_t)*n, sizeof **recs, by_start);
out:
    return err->code;
}

int kg_trace_stream_id(kgate_stream s, uint32_t *id, kg_err *err)
{
    KG_CUPTI(cuptiGetStreamIdEx(NULL, (CUstream)s, 0, id));
out:
    return err->code;
}
