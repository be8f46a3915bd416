/* Escaped and shortened text for the HTML report (report/html_text.h). */
#include "html_text.h"

#include <string.h>

void kg_html_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

int kg_html_chars(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += !is_cont((unsigned char)*s);
    return n;
}

/* The byte offset of code point k of s (its end when s is shorter). */
static size_t offset_of(const char *s, int k)
{
    size_t i = 0;
    for (int n = 0; s[i]; i++)
        if (!is_cont((unsigned char)s[i]) && n++ == k)
            return i;
    return i;
}

static void esc_n(FILE *f, const char *s, size_t len)
{
    char buf[256];
    while (len) {
        size_t k = len < sizeof buf - 1 ? len : sizeof buf - 1;
        memcpy(buf, s, k);
        buf[k] = '\0';
        kg_html_esc(f, buf);
        s += k;
        len -= k;
    }
}

int kg_html_short(FILE *f, const char *tag, const char *cls, const char *s, int max, int tail)
{
    s = s ? s : "";
    int n = kg_html_chars(s), cut = max > 0 && n > max;
    if (cut && (tail < 0 || tail > max - 2))
        tail = max > 2 ? (max - 1) / 2 : 0;
    fprintf(f, "<%s", tag);
    if (cls) {
        fputs(" class=\"", f);
        kg_html_esc(f, cls);
        fputc('"', f);
    }
    if (!cut) {
        fputc('>', f);
        kg_html_esc(f, s);
    } else {
        fputs(" title=\"", f);
        kg_html_esc(f, s);
        fputs("\">", f);
        esc_n(f, s, offset_of(s, max - 1 - tail));
        fputs("\xE2\x80\xA6", f); /* … */
        kg_html_esc(f, s + offset_of(s, n - tail));
    }
    fprintf(f, "</%s>", tag);
    return cut;
}
