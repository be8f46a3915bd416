/* Remembered choices of the library paths: which of the engine configs a
 * vendor library offered was fastest for one exact case (the cuDNN
 * convolution's timed search over every config takes seconds to tens of
 * seconds at large shapes, and every library job is a new process).
 *
 * The rule: a choice is keyed by everything it depends on (the path, the
 * library's version, the GPU's UUID, layout, dtype, every extent), so a
 * different library or GPU never reuses it; it is only a hint: the caller
 * builds and test-runs the remembered config and searches again when that
 * fails. The file is $XDG_CACHE_HOME/kgate/choices.tsv (default ~/.cache),
 * one "key<TAB>index<TAB>count" line a choice, at most KG_CHOICE_MAX lines;
 * a malformed line is ignored, an unreadable or unwritable file is a miss. */
#ifndef KG_CHOICE_CACHE_H
#define KG_CHOICE_CACHE_H

#include <stddef.h>

#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_CHOICE_MAX 4096   /* lines kept; the oldest go first */
#define KG_CHOICE_KEY 512    /* bytes of a key, its terminator included */

/* The default file (creates the directory). */
int kg_choice_path(char *buf, size_t size, kg_err *err);
/* 0 and *index, *count when path holds key; 1 when it does not (or the
 * file cannot be read). */
int kg_choice_get(const char *path, const char *key, int *index, int *count);
/* Records key -> (index, count), replacing an earlier line of the key;
 * the file is rewritten atomically. KG_EXIT_IO when it cannot be. */
int kg_choice_put(const char *path, const char *key, int index, int count, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
