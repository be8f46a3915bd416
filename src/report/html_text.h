/* Text into the HTML report: escaped (a candidate names its kernels and
 * writes its reasons; nothing it writes may become markup), and long names
 * shortened in the middle with the full text kept in a title. Plain C; no
 * GPU. */
#ifndef KG_HTML_TEXT_H
#define KG_HTML_TEXT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* s with < > & " ' escaped and control bytes dropped (NULL writes nothing). */
void kg_html_esc(FILE *f, const char *s);

/* s as the content of <tag class="cls"> (cls may be NULL). A text of more
 * than max characters (UTF-8 code points) is written as its first
 * max - 1 - tail characters, an ellipsis and its last tail ones, in an
 * element with title="s": the full text on hover and for a screen reader.
 * Returns 1 when it shortened s. */
int kg_html_short(FILE *f, const char *tag, const char *cls, const char *s, int max, int tail);

/* The number of UTF-8 code points in s. */
int kg_html_chars(const char *s);

#ifdef __cplusplus
}
#endif
#endif
