/* Remembered library times (kgate check --lib-cache): what one library job
 * measured on one GPU, reused by later commands that would run the very
 * same library job there, so that judging many candidates of a few
 * operators times each library path once per GPU instead of once a
 * candidate (about 3.5 s of a small-preset verdict's 4.5 to 7 s on the H200).
 *
 * The rules:
 *   - an entry is keyed by everything the library job depends on: the job
 *     as the worker would receive it (operator, dtypes, shape, scalars,
 *     flush, trials, seed, the stop rule, --torch...) less what only kernel
 *     jobs read (kernel, extra shapes, diagnosis, the job's nonce, sandbox
 *     scratch and budget), the GPU's UUID, kgate's build (version and
 *     commit), and the bundled candidate's path, size and modification time;
 *     an operator outside the catalog (a problem: its library paths come
 *     with the candidate) has no key and is never cached;
 *   - an entry is used for at most max_age seconds after it was measured
 *     (--lib-cache-age, default an hour); a newer entry of a key replaces the
 *     older one;
 *   - a library job whose timing saw foreign work on the GPU or dropped
 *     throttled samples is not stored (kg_libcache_unfit), so one disturbed
 *     measurement does not reach later verdicts;
 *   - the file, $XDG_CACHE_HOME/kgate/libtimes-<uuid>.jsonl (default
 *     ~/.cache), is JSON Lines of schema kgate.libcache/1, at most
 *     KG_LIBCACHE_MAX entries (the oldest go first), rewritten whole and
 *     atomically (a reader never sees half of it; two writers at once lose
 *     one entry, a miss later); every line is validated when read: a line
 *     that is torn, too long, of another schema or holds an impossible value
 *     (a time that is not a positive finite number under an hour, a CI that
 *     does not hold its median, an unknown status, an over-long name) is
 *     ignored, a miss. */
#ifndef KG_LIB_CACHE_H
#define KG_LIB_CACHE_H

#include <stddef.h>

#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_LIBCACHE_SCHEMA "kgate.libcache/1"
#define KG_LIBCACHE_MAX 512             /* entries a file keeps */
#define KG_LIBCACHE_LINE_MAX (32 << 10) /* bytes of one entry's line */
#define KG_LIBCACHE_AGE_DEFAULT 3600.0  /* s an entry is used for */

/* The cache file of a GPU (creates the directory). */
int kg_libcache_path(const char *uuid, char *buf, size_t size, kg_err *err);
/* The key of library job j on GPU uuid with kgate build `build`; malloc'd,
 * NULL when the job cannot be cached (a problem's, a bundled candidate that
 * cannot be stat'ed, out of memory). */
char *kg_libcache_key(const kg_job *j, const char *uuid, const char *build);
/* 0 and *lib, *age_s when path holds a valid entry of key measured at most
 * max_age_s before `now` (s since the epoch); 1 when it does not. */
int kg_libcache_get(const char *path, const char *key, double max_age_s, double now, kg_libref *lib,
                    double *age_s);
/* Stores lib (a measured library job) as key's entry, measured at `now`. */
int kg_libcache_put(const char *path, const char *key, const kg_libref *lib, double now, kg_err *err);
/* Why a measured library job must not be stored, or NULL when it may. */
const char *kg_libcache_unfit(const kg_libref *lib);

#ifdef __cplusplus
}
#endif
#endif
