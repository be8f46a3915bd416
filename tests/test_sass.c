/* Counting SASS instructions in cuobjdump listings: the planted kernels of
 * data/sass/planted.cu (one signature each, real cuobjdump output in
 * planted.sass; how it was made is at the top of planted.cu), an excerpt of
 * the bundled library's multi-ELF fatbin listing (wgmma and TMA kernels, and
 * one kernel present in two ELFs), single instructions, and bad input.
 * The expected counts were read off the listings by eye; totals agree with
 * the last address of each function (address / 16 + 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "diagnose/sass.h"

#ifndef KG_TEST_DATA
#define KG_TEST_DATA "tests/data"
#endif

/* Every count of a kg_sass, to compare two field by field. */
#define SASS_FIELDS(X) \
    X(found) X(ldg_128) X(ldg_64) X(ldg_narrow) X(stg_128) X(stg_narrow) X(ldgsts) \
    X(utmaldg) X(hgmma) X(hmma) X(ldl) X(stl) X(total)

static void assert_sass_equal(const char *name, const kg_sass *got, const kg_sass *want)
{
#define X(f)                                                                              \
    if (got->f != want->f)                                                                \
        print_error("%s: " #f " is %d, expected %d\n", name, got->f, want->f);          \
    assert_int_equal(got->f, want->f);
    SASS_FIELDS(X)
#undef X
}

/* The whole file, in a buffer of exactly its size with no NUL after it, so
 * that ASan catches a scanner reading past len. */
static char *load(const char *rel, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KG_TEST_DATA, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(size > 0);
    char *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

/* planted.sass, in listing order (cuobjdump lists the last kernel first). */
static const struct {
    const char *name;
    kg_sass want;
} planted[] = {
    /* 2 HFMA2.MMA register moves, no HMMA */
    {"_Z6constsP6float4", {.found = 1, .stg_128 = 1, .total = 24}},
    /* @!P0 LDG.E and @!P1 LDG.E: predicated loads count; 1 HFMA2.MMA move */
    {"_Z8tail_sumPKfPfi", {.found = 1, .ldg_narrow = 2, .stg_narrow = 1, .total = 32}},
    /* LDGSTS.E.BYPASS.128 is cp.async, not an LDG; LDGDEPBAR counts nowhere */
    {"_Z8cp_asyncPK6float4PS_", {.found = 1, .stg_128 = 1, .ldgsts = 1, .total = 40}},
    /* 8 LDG.E of fragments, 2 HMMA.16816.F32, 4 STG.E.64 (neither narrow nor 128) */
    {"_Z9wmma_tilePK6__halfS1_Pf", {.found = 1, .ldg_narrow = 8, .hmma = 2, .total = 40}},
    /* 16 STL.128 and 1 STL fill buf; 2 LDL read it at runtime indices */
    {"_Z9local_bufPKfPKiPfi",
     {.found = 1, .ldg_narrow = 66, .stg_narrow = 1, .ldl = 2, .stl = 17, .total = 128}},
    /* LDG.E.64, STG.E.64 */
    {"_Z7f2_copyPK6float2PS_i", {.found = 1, .ldg_64 = 1, .total = 32}},
    /* LDG.E.U16.CONSTANT, STG.E.U16 */
    {"_Z9half_copyPK6__halfPS_i", {.found = 1, .ldg_narrow = 1, .stg_narrow = 1, .total = 32}},
    /* LDG.E.128.CONSTANT, STG.E.128 */
    {"_Z7v4_copyPK6float4PS_i", {.found = 1, .ldg_128 = 1, .stg_128 = 1, .total = 32}},
};
#define N_PLANTED ((int)(sizeof planted / sizeof planted[0]))

static void planted_kernels(void **state)
{
    (void)state;
    size_t len;
    char *text = load("sass/planted.sass", &len);
    kg_sass_fn fns[16];
    int n = -1, trunc = -1;
    kg_err err = {0};
    assert_int_equal(kg_sass_scan(text, len, fns, 16, &n, &trunc, &err), 0);
    assert_int_equal(err.code, 0);
    assert_int_equal(n, N_PLANTED);
    assert_int_equal(trunc, 0);
    for (int i = 0; i < N_PLANTED; i++) {
        assert_string_equal(fns[i].name, planted[i].name);
        assert_sass_equal(planted[i].name, &fns[i].s, &planted[i].want);
    }
    free(text);
}

static void find_by_mangled_name(void **state)
{
    (void)state;
    size_t len;
    char *text = load("sass/planted.sass", &len);
    kg_sass_fn fns[16];
    int n = 0;
    assert_int_equal(kg_sass_scan(text, len, fns, 16, &n, NULL, NULL), 0);
    for (int i = 0; i < N_PLANTED; i++) {
        const kg_sass_fn *f = kg_sass_find(fns, n, planted[i].name);
        assert_non_null(f);
        assert_ptr_equal(f, &fns[i]);
    }
    assert_null(kg_sass_find(fns, n, "v4_copy"));                    /* demangled: no */
    assert_null(kg_sass_find(fns, n, "_Z7v4_copyPK6float4PS_"));     /* a prefix: no */
    assert_null(kg_sass_find(fns, n, "_Z7v4_copyPK6float4PS_ii"));   /* longer: no */
    assert_null(kg_sass_find(fns, 0, planted[0].name));
    free(text);
}

/* The bundled library's listing: one "Fatbin elf code" block per kernels
 * file; the wgmma + TMA matmul (v2), and gather_v2_scalar<float,int> that two
 * ELFs both hold (identical code): it takes one entry, with one copy's counts. */
static void bundled_multi_elf(void **state)
{
    (void)state;
    size_t len;
    char *text = load("sass/bundled_excerpt.sass", &len);
    kg_sass_fn fns[8];
    int n = 0, trunc = -1;
    kg_err err = {0};
    assert_int_equal(kg_sass_scan(text, len, fns, 8, &n, &trunc, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(trunc, 0);
    static const struct {
        const char *name;
        kg_sass want;
    } want[] = {
        {"_Z13add_v2_scalarI13__nv_bfloat16EvPKT_S3_PS1_ll",
         {.found = 1, .ldg_narrow = 2, .stg_narrow = 1, .total = 56}},
        {"_Z16gather_v2_scalarIfiEvPKT_PKT0_PS0_lll",
         {.found = 1, .ldg_narrow = 8, .stg_narrow = 7, .total = 168}},
        /* 4 HGMMA.64x256x16.F32.BF16, 5 UTMALDG.2D, output by 128 narrow STG */
        {"_ZN2v26kernelI13__nv_bfloat16EEv14CUtensorMap_stS2_PT_iii",
         {.found = 1, .stg_narrow = 128, .utmaldg = 5, .hgmma = 4, .total = 656}},
    };
    for (int i = 0; i < 3; i++) {
        const kg_sass_fn *f = kg_sass_find(fns, n, want[i].name);
        assert_non_null(f);
        assert_ptr_equal(f, &fns[i]);
        assert_sass_equal(want[i].name, &f->s, &want[i].want);
    }
    free(text);
}

static void truncated_when_max_is_small(void **state)
{
    (void)state;
    size_t len;
    char *text = load("sass/planted.sass", &len);
    kg_sass_fn fns[3];
    int n = 0, trunc = 0;
    assert_int_equal(kg_sass_scan(text, len, fns, 3, &n, &trunc, NULL), 0);
    assert_int_equal(n, 3);
    assert_int_equal(trunc, 1);
    for (int i = 0; i < 3; i++)
        assert_sass_equal(planted[i].name, &fns[i].s, &planted[i].want);
    assert_null(kg_sass_find(fns, n, "_Z7v4_copyPK6float4PS_i"));
    /* exactly as many as there are: not truncated; no room at all: truncated */
    kg_sass_fn all[N_PLANTED];
    assert_int_equal(kg_sass_scan(text, len, all, N_PLANTED, &n, &trunc, NULL), 0);
    assert_int_equal(n, N_PLANTED);
    assert_int_equal(trunc, 0);
    assert_int_equal(kg_sass_scan(text, len, NULL, 0, &n, &trunc, NULL), 0);
    assert_int_equal(n, 0);
    assert_int_equal(trunc, 1);
    free(text);
}

/* The text stops at len, even inside a function and without a newline. */
static void text_ends_at_len(void **state)
{
    (void)state;
    size_t len;
    char *text = load("sass/planted.sass", &len);
    /* the v4_copy function is last; cut just before its STG.E.128 line */
    const char *key = "/*00e0*/                   STG.E.128";
    size_t cut = 0;
    for (size_t i = 0; i + strlen(key) <= len; i++)
        if (memcmp(text + i, key, strlen(key)) == 0)
            cut = i; /* the last one */
    assert_true(cut > 0);
    kg_sass_fn fns[16];
    int n = 0;
    /* the text ends 12 spaces after the address of that line */
    assert_int_equal(kg_sass_scan(text, cut + 20, fns, 16, &n, NULL, NULL), 0);
    assert_int_equal(n, N_PLANTED);
    /* 0x00 .. 0xd0 are 14 instructions; the cut line has its address and no opcode */
    kg_sass want = {.found = 1, .ldg_128 = 1, .total = 14};
    assert_sass_equal("v4_copy cut", &fns[N_PLANTED - 1].s, &want);
    free(text);
}

/* One instruction's text and what it should count: the counter's offset in
 * kg_sass (NONE: only total), and whether total counts it at all. */
#define NONE ((size_t)-1)
static const struct {
    const char *insn;
    size_t field;
    int total;
} lines[] = {
    /* forms seen on sm_90 (planted.sass; the bundled kernels) */
    {"LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_128), 1},
    {"LDG.E.CONSTANT R3, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_narrow), 1},
    {"LDG.E R3, desc[UR6][R2.64] ;", offsetof(kg_sass, ldg_narrow), 1},
    {"LDG.E.U16.CONSTANT R3, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_narrow), 1},
    {"LDG.E.64 R4, desc[UR4][R4.64] ;", offsetof(kg_sass, ldg_64), 1},
    {"STG.E.128 desc[UR4][R2.64], R8 ;", offsetof(kg_sass, stg_128), 1},
    {"STG.E.U16 desc[UR4][R4.64], R3 ;", offsetof(kg_sass, stg_narrow), 1},
    {"STG.E desc[UR4][R4.64], R3 ;", offsetof(kg_sass, stg_narrow), 1},
    {"STG.E.64 desc[UR4][R4.64], R16 ;", NONE, 1}, /* 8-byte stores: neither */
    {"LDL.LU R4, [R1+0x10] ;", offsetof(kg_sass, ldl), 1},
    {"LDL R0, [R27] ;", offsetof(kg_sass, ldl), 1},
    {"STL [R1+0x4], R9 ;", offsetof(kg_sass, stl), 1},
    {"STL.128 [R1], R16 ;", offsetof(kg_sass, stl), 1},
    {"HMMA.16816.F32 R16, R4.reuse, R12, RZ ;", offsetof(kg_sass, hmma), 1},
    {"HMMA.16816.F32.BF16 R24, R4, R8, R24 ;", offsetof(kg_sass, hmma), 1},
    {"HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8].tnspB, R24 ;", offsetof(kg_sass, hgmma), 1},
    {"HGMMA.64x256x16.F32.BF16 R24, gdesc[UR16].tnspB, R24, gsb0 ;", offsetof(kg_sass, hgmma), 1},
    {"LDGSTS.E.BYPASS.128 [R7], desc[UR6][R4.64] ;", offsetof(kg_sass, ldgsts), 1},
    {"UTMALDG.4D [UR8], [UR4] ;", offsetof(kg_sass, utmaldg), 1},
    {"UTMALDG.2D [UR24], [UR30] ;", offsetof(kg_sass, utmaldg), 1},
    /* the trap: HFMA2 on the MMA pipe is a register move */
    {"HFMA2.MMA R3, -RZ, RZ, 0, 0 ;", NONE, 1},
    {"HFMA2.MMA R9, -RZ, RZ, 1.875, 0 ;", NONE, 1},
    /* predicates, and the text after an address as the scanner passes it */
    {"@!P0 LDG.E R9, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_narrow), 1},
    {"      @P1 STG.E.128 desc[UR4][R2.64], R8 ;  /* 0x0001 */", offsetof(kg_sass, stg_128), 1},
    {"@UP0 LDL R2, [R1] ;", offsetof(kg_sass, ldl), 1},
    {"@!PT LDS RZ, [RZ] ;", NONE, 1},
    /* old dual-issue braces */
    {"{ LDG.E.64 R2, [R4] ;", offsetof(kg_sass, ldg_64), 1},
    {"   LDG.E.128 R8, [R6] ;  }", offsetof(kg_sass, ldg_128), 1},
    /* modifiers are matched whole */
    {"LDG.E.LTC128B.128 R4, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_128), 1},
    {"LDG.E.LTC128B R4, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_narrow), 1},
    {"LDG.E.ENL2.256 R4, desc[UR4][R2.64] ;", offsetof(kg_sass, ldg_128), 1},
    {"LDGDEPBAR ;", NONE, 1},
    {"LDS.128 R4, [R2] ;", NONE, 1},
    {"STS.128 [R2], R4 ;", NONE, 1},
    {"LDC R1, c[0x0][0x28] ;", NONE, 1},
    {"ULDC.64 UR4, c[0x0][0x208] ;", NONE, 1},
    {"UTMASTG.2D [UR4], [UR8] ;", NONE, 1},
    {"NOP;", NONE, 1},
    /* not instructions */
    {"", NONE, 0},
    {"   }", NONE, 0},
    {"  /* 0x000fe20000000800 */", NONE, 0},
};

static void single_instructions(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        kg_sass got = {0}, want = {0};
        kg_sass_count(&got, lines[i].insn);
        if (lines[i].field != NONE)
            (*(int *)((char *)&want + lines[i].field))++;
        want.total = lines[i].total;
        assert_sass_equal(lines[i].insn, &got, &want);
    }
}

/* Hand-written: an old listing with dual-issue braces and a predicated
 * instruction (not recorded output; no sm_3x toolkit here). */
static void braces_and_predicates_in_a_listing(void **state)
{
    (void)state;
    const char text[] =
        "\tcode for sm_35\n"
        "\t\tFunction : _Z3oldPfS_\n"
        "\t.headerflags\t@\"EF_CUDA_SM35 EF_CUDA_PTX_SM(EF_CUDA_SM35)\"\n"
        "                                                                /* 0x08a0bc80c0a08cc0 */\r\n"
        "        /*0008*/                   MOV R1, c[0x0][0x44];        /* 0x64c03c00089c0006 */\r\n"
        "        /*0010*/         {         LDG.E.128 R4, [R2];          /* 0x600210847f9c0006 */\r\n"
        "        /*0018*/                   STL [R1], R4;  }             /* 0x600210847f9c0007 */\r\n"
        "        /*0020*/              @!P0 LDG.E R9, [R2];              /* 0x600210847f9c0008 */\r\n"
        "        /*0028*/                   EXIT;                        /* 0x18000000001c003c */\r\n"
        "        /*0030*/                   BRA 0x30;                    /* 0x12007ffffc1c003c */\r\n"
        "\t\t..........\n"
        "        /*0038*/                   LDL R0, [R1];   stray, after the end: not counted\n";
    kg_sass_fn fns[2];
    int n = 0;
    assert_int_equal(kg_sass_scan(text, sizeof text - 1, fns, 2, &n, NULL, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(fns[0].name, "_Z3oldPfS_");
    kg_sass want = {.found = 1, .ldg_128 = 1, .ldg_narrow = 1, .stl = 1, .total = 6};
    assert_sass_equal("old", &fns[0].s, &want);
}

/* A name longer than KG_KNAME_MAX - 1 is kept truncated and found by its
 * full spelling. */
static void long_names(void **state)
{
    (void)state;
    char name[400], text[600];
    memset(name, 'a', sizeof name - 1);
    memcpy(name, "_Z", 2);
    name[sizeof name - 1] = '\0';
    snprintf(text, sizeof text,
             "\t\tFunction : %s\n        /*0000*/  HMMA.16816.F32 R0, R2, R4, R0 ;\n", name);
    kg_sass_fn fns[1];
    int n = 0;
    assert_int_equal(kg_sass_scan(text, strlen(text), fns, 1, &n, NULL, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(strlen(fns[0].name), KG_KNAME_MAX - 1);
    assert_ptr_equal(kg_sass_find(fns, n, name), &fns[0]);
    assert_int_equal(fns[0].s.hmma, 1);
}

static void no_function_header(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",
        "cuobjdump info    : File '/tmp/x.o' does not contain device code\n",
        /* instructions but no header: a fragment, not a listing */
        "        /*0000*/                   LDG.E R3, desc[UR6][R2.64] ;\n",
        "Fatbin ptx code:\n================\narch = sm_90a\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_sass_fn fns[2];
        int n = -1, trunc = -1;
        kg_err err = {0};
        assert_int_equal(kg_sass_scan(bad[i], strlen(bad[i]), fns, 2, &n, &trunc, &err),
                         KG_EXIT_USAGE);
        assert_int_equal(err.code, KG_EXIT_USAGE);
        assert_non_null(strstr(err.msg, "Function :"));
        assert_null(strchr(err.msg, '\n'));
        assert_int_equal(n, 0);
        assert_int_equal(trunc, 0);
    }
    int n = -1;
    assert_int_equal(kg_sass_scan(NULL, 0, NULL, 0, &n, NULL, NULL), KG_EXIT_USAGE);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(planted_kernels),
        cmocka_unit_test(find_by_mangled_name),
        cmocka_unit_test(bundled_multi_elf),
        cmocka_unit_test(truncated_when_max_is_small),
        cmocka_unit_test(text_ends_at_len),
        cmocka_unit_test(single_instructions),
        cmocka_unit_test(braces_and_predicates_in_a_listing),
        cmocka_unit_test(long_names),
        cmocka_unit_test(no_function_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
