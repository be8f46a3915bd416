/* Text that reaches a JSON file or a terminal: one printable line of valid
 * UTF-8, built without passing its buffer's end (kg_append). Worker output, a candidate's stderr, results files read back and
 * file names may hold any bytes; what kgate writes or prints holds none of
 * the bytes a JSON reader (Python's json, a strict UTF-8 decoder) refuses,
 * nor control characters a terminal would act on.
 *
 * The rule (kg_text_clean): tabs and line breaks (\t \n \v \f \r, U+0085,
 * U+2028, U+2029) become a space; every other control character (C0, DEL,
 * C1) and every byte that does not begin a valid UTF-8 sequence (a stray
 * continuation byte, an overlong form, a surrogate, a value past U+10FFFF,
 * a sequence cut short) becomes '?'. A replacement is never longer than
 * what it replaces, so a text can be cleaned in place.
 *
 * Plain C; no GPU. */
#ifndef KG_TEXT_H
#define KG_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copies src into dst (size bytes, size > 0) by the rule above; dst may
 * be src. What does not fit is cut at a character boundary. Returns the
 * length written. */
size_t kg_text_clean(char *dst, size_t size, const char *src);
/* 1 when s is already such a line (kg_text_clean would change nothing). */
int kg_text_is_clean(const char *s);

/* Appends printf-style text to buf (size bytes, holding a string of *used
 * bytes), never past its end: 0 when it all fit (*used then the new
 * length). When it does not, what fits stays, cut at a character boundary,
 * and buf ends with "..." (in a buffer of 3 bytes or less the piece is left
 * out instead); *used becomes size and -1 is returned;
 * a later append to a buffer so cut adds nothing and returns -1 again. The
 * one way kgate builds a text piece by piece (lists, notes, details). */
int kg_append(char *buf, size_t size, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

struct cJSON;
/* Every string value and key of a cJSON tree cleaned in place (those that
 * need it only: constant strings are left alone): the last guard of a JSON
 * writer before it prints. */
void kg_json_clean(struct cJSON *root);

#ifdef __cplusplus
}
#endif
#endif
