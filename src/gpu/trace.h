/* Kernel activity from CUPTI: the start and end of every kernel the GPU ran,
 * on every stream, from the hardware's own timestamps (what Nsight Systems
 * shows). The timing engine uses it to time the subject without the event
 * and launch overhead, and to see kernels that ran on other streams. */
#ifndef KG_TRACE_H
#define KG_TRACE_H

#include <stdint.h>

#include <kgate/plugin.h>

#include "../base/kg.h"
#include "../measure/trace_split.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording kernel activity (once per process). */
int kg_trace_start(kg_err *err);
/* Flushes CUPTI and hands over the records since the last call, sorted by
 * start time; *recs is malloc'd (caller frees, on failure too). Records
 * dropped since the last call (host memory ran out) make it fail
 * (KG_EXIT_ENV). */
int kg_trace_take(kg_trace_rec **recs, int *n, kg_err *err);
/* The id a stream's records carry (kg_trace_rec.stream). */
int kg_trace_stream_id(kgate_stream s, uint32_t *id, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
