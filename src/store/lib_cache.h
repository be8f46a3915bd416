/* Remembered library times (kgate check --lib-cache): what library jobs
 * measured on one GPU, reused by later commands that would run the very
 * same library job there, so that judging many candidates of a few
 * operators times each library path twice per GPU instead of once a
 * candidate (on the H200 the library job is 4.3 to 6.3 s of a small-preset
 * verdict's 5.6 to 9.2 s, and 9.2 to 9.7 s of 11.7 to 12.3 s for add).
 *
 * The rules:
 *   - an entry is keyed by everything the library job depends on: the job
 *     as the worker would receive it (operator, dtypes, shape, scalars,
 *     flush, --hot, trials, edges, seed, the stop rule, --sandbox,
 *     --torch...) less what only kernel jobs read (kernel, extra shapes,
 *     diagnosis, configuration, the job's nonce, sandbox scratch and
 *     budget; the index dtype of an operator without indices), the GPU's
 *     UUID, the caller's context (kgate's build, the driver's, cuBLASLt's
 *     and cuDNN's versions), the kgate executable's and the bundled
 *     candidate's size and modification time, and the environment that
 *     changes library paths (KGATE_PYTHON, NVIDIA_TF32_OVERRIDE); an
 *     operator outside the catalog (a problem: its library paths come with
 *     the candidate) has no key and is never cached;
 *   - an entry is used only once two measurements of its key agree (every
 *     path the same status, with the same reason when it cannot run, each
 *     timed one and the bundled variant within KG_LIBCACHE_AGREE of the
 *     other's time), so one disturbed measurement is never reused (a load
 *     that lasts through both is not caught); the newer measurement is the
 *     one kept and used, for at most max_age seconds after it was made
 *     (--lib-cache-age, default an hour); an older measurement counts
 *     towards agreement when made within max_age or KG_LIBCACHE_AGREE_WINDOW,
 *     whichever is longer;
 *   - a library job is not stored at all (kg_libcache_unfit) when its
 *     timing dropped throttled samples, saw work of its own process on
 *     other streams or between samples, or had to be timed again after
 *     such work (work of other processes is not visible to it: the agreement
 *     rule is what guards against a passing load), when NVML listed another
 *     process on the GPU around it or it was not watched (kg_libref.others:
 *     no NVML, a listing failed), when a path failed its
 *     check, the bundled variant failed or did not load, or a time's 95%
 *     interval is wider than KG_LIBCACHE_CI_MAX of it; an entry that would
 *     not read back as written is not stored either;
 *   - the file, $XDG_CACHE_HOME/kgate/libtimes-<uuid>.jsonl (default
 *     ~/.cache; refused when its directory resolves to /dev or below, which
 *     the sandbox lets a candidate write), is JSON Lines of schema kgate.libcache/1, one entry a key, at
 *     most KG_LIBCACHE_MAX entries (the oldest go first), rewritten whole
 *     and atomically (a reader never sees half of it; two writers at once
 *     lose one entry, a miss later); every line is validated when read: a
 *     line that is torn, too long, holds a NUL byte or trailing bytes, is
 *     of another schema, or holds an impossible value (a time that is not a
 *     positive finite number under an hour, an interval that does not hold
 *     its median or is wider than KG_LIBCACHE_CI_MAX, an unknown status, an
 *     over-long name, a count of agreeing measurements under 1) is ignored. */
#ifndef KG_LIB_CACHE_H
#define KG_LIB_CACHE_H

#include <stddef.h>

#include "../protocol/proto.h"
#include "../judge/result.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_LIBCACHE_SCHEMA "kgate.libcache/1"
#define KG_LIBCACHE_MAX 512             /* entries a file keeps */
#define KG_LIBCACHE_LINE_MAX (32 << 10) /* bytes of one entry's line */
#define KG_LIBCACHE_AGE_DEFAULT 3600.0  /* s an entry is used for */
#define KG_LIBCACHE_AGREE 0.03          /* two measurements agree within this (relative) */
#define KG_LIBCACHE_CI_MAX 0.05         /* widest 95% interval kept, relative to its median */
#define KG_LIBCACHE_AGREE_WINDOW 600.0  /* s: an older measurement confirms a newer one within
                                         * this or --lib-cache-age, whichever is longer */

/* The cache file of a GPU (creates the directory). */
int kg_libcache_path(const char *uuid, char *buf, size_t size, kg_err *err);
/* The key of library job j on GPU uuid; context: what else outside the job
 * its times depend on (kgate's build, driver and library versions).
 * malloc'd, NULL when the job cannot be cached (a problem's, a bundled
 * candidate that cannot be stat'ed, out of memory). */
char *kg_libcache_key(const kg_job *j, const char *uuid, const char *context);
/* 0 and *lib, *age_s when path holds a valid entry of key, confirmed by two
 * agreeing measurements, the newer made at most max_age_s before `now` (s
 * since the epoch); 1 when it does not. */
int kg_libcache_get(const char *path, const char *key, double max_age_s, double now, kg_libref *lib,
                    double *age_s);
/* Stores lib (a measured library job, measured at `now`) as key's entry:
 * confirmed when it agrees with the entry it replaces (made within
 * max_age_s), else a first measurement. *confirmed (may be NULL) says which. */
int kg_libcache_put(const char *path, const char *key, const kg_libref *lib, double now, double max_age_s,
                    int *confirmed, kg_err *err);
/* Why a measured library job must not be stored, or NULL when it may. */
const char *kg_libcache_unfit(const kg_libref *lib);
/* Whether two library jobs' measurements agree (KG_LIBCACHE_AGREE). */
int kg_libcache_agree(const kg_libref *a, const kg_libref *b);

#ifdef __cplusplus
}
#endif
#endif
