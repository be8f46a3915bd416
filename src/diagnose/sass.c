/* Scanning `cuobjdump -sass` listings for telling instructions (diagnose/sass.h). */
#include "sass.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define KG_SASS_LINE_MAX 4096 /* bytes of a line looked at; instructions are ~100 */
#define KG_SASS_NONE ((size_t)-1)

#define KG_SASS_AT(s, off) ((int *)((char *)(s) + (off)))

/* Opcodes counted whatever their modifiers. */
static const struct {
    const char *op;
    size_t off;
} kg_sass_plain[] = {
    {"LDGSTS", offsetof(kg_sass, ldgsts)},
    {"UTMALDG", offsetof(kg_sass, utmaldg)},
    {"HGMMA", offsetof(kg_sass, hgmma)},
    {"HMMA", offsetof(kg_sass, hmma)}, /* HFMA2.MMA has opcode HFMA2: never here */
    {"LDL", offsetof(kg_sass, ldl)},
    {"STL", offsetof(kg_sass, stl)},
};

/* Global loads and stores, counted by access width. */
static const struct {
    const char *op;
    size_t wide, w64, narrow; /* .128 and wider; .64; the rest (KG_SASS_NONE: not counted) */
} kg_sass_width[] = {
    {"LDG", offsetof(kg_sass, ldg_128), offsetof(kg_sass, ldg_64), offsetof(kg_sass, ldg_narrow)},
    {"STG", offsetof(kg_sass, stg_128), KG_SASS_NONE, offsetof(kg_sass, stg_narrow)},
};

/* The width in bits named by the modifiers of an opcode (the text after its
 * first dot, len bytes), or 0 when none is all digits. Type modifiers such as
 * .U16 and hints such as .LTC128B are not widths. */
static int sass_width(const char *mods, size_t len)
{
    int width = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && mods[j] != '.')
            j++;
        if (j > i && j - i < 8) {
            int digits = 1;
            for (size_t k = i; k < j; k++)
                digits &= isdigit((unsigned char)mods[k]) != 0;
            if (digits)
                width = atoi(mods + i); /* stops at the '.' */
        }
        i = j + 1;
    }
    return width;
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

void kg_sass_count(kg_sass *s, const char *insn)
{
    const char *p = skip_space(insn);
    if (*p == '{') /* dual-issue brace of old formats */
        p = skip_space(p + 1);
    if (*p == '@') { /* predicate: @P0, @!P1, @!PT, @UP0 */
        while (*p && *p != ' ' && *p != '\t')
            p++;
        p = skip_space(p);
    }
    /* opcodes are upper case; this also skips a bare "}" or an encoding comment */
    if (!isupper((unsigned char)*p))
        return;
    size_t tok = strcspn(p, " \t;}");
    size_t base = strcspn(p, ". \t;}");
    s->total++;
    for (size_t i = 0; i < sizeof kg_sass_plain / sizeof kg_sass_plain[0]; i++)
        if (strlen(kg_sass_plain[i].op) == base && strncmp(p, kg_sass_plain[i].op, base) == 0) {
            (*KG_SASS_AT(s, kg_sass_plain[i].off))++;
            return;
        }
    for (size_t i = 0; i < sizeof kg_sass_width / sizeof kg_sass_width[0]; i++)
        if (strlen(kg_sass_width[i].op) == base && strncmp(p, kg_sass_width[i].op, base) == 0) {
            int w = base < tok ? sass_width(p + base + 1, tok - base - 1) : 0;
            size_t off = w >= 128 ? kg_sass_width[i].wide
                         : w == 64 ? kg_sass_width[i].w64
                                   : kg_sass_width[i].narrow;
            if (off != KG_SASS_NONE)
                (*KG_SASS_AT(s, off))++;
            return;
        }
}

/* The text after an instruction line's address comment, or NULL when the
 * line is not an instruction (an encoding word's comment holds " 0x..."). */
static const char *sass_insn(const char *line)
{
    const char *p = skip_space(line);
    if (p[0] != '/' || p[1] != '*' || !isxdigit((unsigned char)p[2]))
        return NULL;
    p += 2;
    while (isxdigit((unsigned char)*p))
        p++;
    if (p[0] != '*' || p[1] != '/')
        return NULL;
    return p + 2;
}

/* The name of a "Function : name" header line into name (empty when the line
 * is no header); returns 1 when the line is a header, named or not. */
static int sass_header(const char *line, char *name, size_t size)
{
    const char *p = skip_space(line);
    name[0] = '\0';
    if (strncmp(p, "Function", 8) != 0)
        return 0;
    p = skip_space(p + 8);
    if (*p != ':')
        return 0;
    p = skip_space(p + 1);
    size_t len = strcspn(p, " \t\r");
    if (len >= size)
        len = size - 1;
    memcpy(name, p, len);
    name[len] = '\0';
    return 1;
}

int kg_sass_scan(const char *text, size_t len, kg_sass_fn *fns, int max, int *n, int *truncated,
                 kg_err *err)
{
    char line[KG_SASS_LINE_MAX], name[KG_KNAME_MAX];
    kg_sass discard; /* counts of a function that takes no entry */
    kg_sass *cur = NULL;
    int headers = 0;
    *n = 0;
    if (truncated)
        *truncated = 0;
    const char *p = text, *end = text ? text + len : text;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl ? nl : end) - p);
        size_t keep = ll < sizeof line - 1 ? ll : sizeof line - 1;
        memcpy(line, p, keep);
        line[keep] = '\0';
        p = nl ? nl + 1 : end;

        const char *insn = sass_insn(line);
        if (insn) {
            if (cur)
                kg_sass_count(cur, insn);
            continue;
        }
        if (sass_header(line, name, sizeof name)) {
            headers++;
            cur = NULL;
            if (!name[0])
                continue;
            const kg_sass_fn *seen = kg_sass_find(fns, *n, name);
            if (!seen && *n < max) {
                kg_sass_fn *f = &fns[(*n)++];
                memset(f, 0, sizeof *f);
                memcpy(f->name, name, sizeof f->name);
                f->s.found = 1;
                cur = &f->s;
            } else {
                if (!seen && truncated)
                    *truncated = 1;
                memset(&discard, 0, sizeof discard);
                cur = &discard;
            }
            continue;
        }
        /* the line of dots that closes a function, or the next ELF's header:
         * nothing after it belongs to the function */
        const char *q = skip_space(line);
        if (strncmp(q, "..........", 10) == 0 || strncmp(q, "Fatbin", 6) == 0)
            cur = NULL;
    }
    if (!headers)
        return kg_err_set(err, KG_EXIT_USAGE,
                          "no \"Function :\" header in %zu bytes of SASS: "
                          "not `cuobjdump -sass` output",
                          len);
    return 0;
}

const kg_sass_fn *kg_sass_find(const kg_sass_fn *fns, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strncmp(fns[i].name, name, KG_KNAME_MAX - 1) == 0)
            return &fns[i];
    return NULL;
}
