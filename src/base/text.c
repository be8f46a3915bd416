/* Printable one-line UTF-8 text, and bounded appends (base/text.h has the
 * rules). */
#include "text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The length (1 to 4) of the valid UTF-8 sequence s begins, its code point
 * in *cp; 0 when s does not begin one. Reads no byte past a NUL. */
static int utf8_seq(const unsigned char *s, uint32_t *cp)
{
    unsigned c = s[0];
    int n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* a NUL included */
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

/* What the sequence at s (*n bytes, set here) becomes: 0 when it stays,
 * else the one character that replaces it. */
static char replacement(const unsigned char *s, int *n)
{
    uint32_t cp = 0;
    *n = utf8_seq(s, &cp);
    if (*n == 0) {
        *n = 1;
        return '?';
    }
    if (cp == '\t' || cp == '\n' || cp == '\v' || cp == '\f' || cp == '\r' || cp == 0x85 || cp == 0x2028 ||
        cp == 0x2029)
        return ' ';
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
        return '?';
    return 0;
}

size_t kg_text_clean(char *dst, size_t size, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    if (!size)
        return 0;
    while (*s) {
        int n;
        char rep = replacement(s, &n);
        size_t len = rep ? 1 : (size_t)n;
        if (o + len >= size)
            break;
        if (rep)
            dst[o] = rep;
        else
            memmove(dst + o, s, len); /* in place, dst + o never passes s */
        o += len;
        s += n;
    }
    dst[o] = '\0';
    return o;
}

int kg_text_is_clean(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        int n;
        if (replacement(s, &n))
            return 0;
        s += n;
    }
    return 1;
}

int kg_append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (!size || *used >= size)
        return -1; /* cut before: it stays as it is */
    size_t u = *used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + u, size - u, fmt, ap);
    va_end(ap);
    if (n < 0) {
        buf[u] = '\0';
        return -1;
    }
    if ((size_t)n < size - u) {
        *used = u + (size_t)n;
        return 0;
    }
    if (size > 3) { /* "..." where the text is cut, not inside a UTF-8 sequence */
        size_t e = size - 4;
        while (e > 0 && ((unsigned char)buf[e] & 0xc0) == 0x80)
            e--;
        memcpy(buf + e, "...", 4);
    } else {
        buf[u] = '\0'; /* no room to say so: this piece is left out */
    }
    *used = size;
    return -1;
}

static void clean_string(char *s)
{
    if (s && !kg_text_is_clean(s))
        kg_text_clean(s, strlen(s) + 1, s);
}

void kg_json_clean(cJSON *j)
{
    for (; j; j = j->next) {
        clean_string(j->string);
        if (cJSON_IsString(j))
            clean_string(j->valuestring);
        kg_json_clean(j->child);
    }
}
