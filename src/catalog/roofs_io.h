/* The roofs cache: measured roofs per GPU UUID, in
 * $XDG_CACHE_HOME/kgate/roofs-<uuid>.json (default ~/.cache). */
#ifndef KG_ROOFS_IO_H
#define KG_ROOFS_IO_H

#include "roofline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Path of a file in kgate's cache directory, $XDG_CACHE_HOME/kgate
 * (default ~/.cache/kgate); creates the directory. */
int kg_cache_file(const char *file, char *buf, size_t size, kg_err *err);
/* Path of the cache file for a UUID; creates the directory. */
int kg_roofs_cache_path(const char *uuid, char *buf, size_t size, kg_err *err);
/* The measurement a cache file records ("method"): gpu/peaks.cu's kernels
 * and streams. A file of another method is measured again. */
#define KG_ROOFS_METHOD 3
/* Loads cached roofs; returns 0 if found, 1 if absent or of another method
 * (an older kgate's), an error code if corrupt. */
int kg_roofs_load(const char *path, kg_roofs *out, kg_err *err);
/* Saves roofs (atomically) with the GPU's UUID and name and the method. */
int kg_roofs_save(const char *path, const kg_roofs *r, const char *uuid, const char *device,
                  kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
