/* The remembered library choices: a key's last choice is found, other keys
 * and malformed lines are left alone, bad keys are refused, and the file
 * stays bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/choice_cache.h"

static void temp_path(char *buf, size_t size)
{
    snprintf(buf, size, "%s/choices-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
    unlink(buf); /* starts absent */
}

static void put_then_get(void **state)
{
    (void)state;
    char path[256];
    int index = -1, count = -1;
    kg_err e = {0, ""};
    temp_path(path, sizeof path);
    assert_int_equal(kg_choice_get(path, "cudnn-conv 91400 GPU-1 NHWC fp16 32x256", &index, &count), 1);
    assert_int_equal(kg_choice_put(path, "cudnn-conv 91400 GPU-1 NHWC fp16 32x256", 3, 17, &e), 0);
    assert_int_equal(kg_choice_put(path, "cudnn-conv 91400 GPU-2 NHWC fp16 32x256", 5, 9, &e), 0);
    assert_int_equal(kg_choice_get(path, "cudnn-conv 91400 GPU-1 NHWC fp16 32x256", &index, &count), 0);
    assert_int_equal(index, 3);
    assert_int_equal(count, 17);
    /* replaced, not duplicated */
    assert_int_equal(kg_choice_put(path, "cudnn-conv 91400 GPU-1 NHWC fp16 32x256", 0, 17, &e), 0);
    assert_int_equal(kg_choice_get(path, "cudnn-conv 91400 GPU-1 NHWC fp16 32x256", &index, &count), 0);
    assert_int_equal(index, 0);
    assert_int_equal(kg_choice_get(path, "cudnn-conv 91400 GPU-2 NHWC fp16 32x256", &index, &count), 0);
    assert_int_equal(index, 5);
    FILE *f = fopen(path, "r");
    char line[600];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, 2);
    /* a prefix of a key is another key */
    assert_int_equal(kg_choice_get(path, "cudnn-conv 91400 GPU-1", &index, &count), 1);
    unlink(path);
}

static void malformed_lines_are_ignored(void **state)
{
    (void)state;
    char path[256], longkey[2000];
    int index = -1, count = -1;
    kg_err e = {0, ""};
    temp_path(path, sizeof path);
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    FILE *f = fopen(path, "w");
    fprintf(f, "no tabs here\n\tstarts with a tab\t1\t2\nkey\t-1\t2\nkey\t1x\t2\nkey\t1\t2 trailing\n%s\t4\t4\ngood\t7\t8\n",
            longkey);
    fclose(f);
    assert_int_equal(kg_choice_get(path, "key", &index, &count), 1);
    assert_int_equal(kg_choice_get(path, "good", &index, &count), 0);
    assert_int_equal(index, 7);
    assert_int_equal(kg_choice_put(path, "new", 1, 1, &e), 0); /* rewrites without the bad lines */
    assert_int_equal(kg_choice_get(path, "good", &index, &count), 0);
    assert_int_equal(kg_choice_get(path, "new", &index, &count), 0);
    f = fopen(path, "r");
    char line[4096];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, 2);
    unlink(path);
}

static void bad_keys_are_refused(void **state)
{
    (void)state;
    char path[256], big[KG_CHOICE_KEY + 1];
    kg_err e = {0, ""};
    temp_path(path, sizeof path);
    assert_int_equal(kg_choice_put(path, "a\tb", 1, 1, &e), KG_EXIT_IO);
    e.code = 0;
    assert_int_equal(kg_choice_put(path, "a\nb", 1, 1, &e), KG_EXIT_IO);
    e.code = 0;
    assert_int_equal(kg_choice_put(path, "", 1, 1, &e), KG_EXIT_IO);
    e.code = 0;
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(kg_choice_put(path, big, 1, 1, &e), KG_EXIT_IO);
    e.code = 0;
    assert_int_equal(kg_choice_put(path, "k", -1, 1, &e), KG_EXIT_IO);
    assert_int_equal(access(path, F_OK), -1); /* nothing written */
    /* an unwritable place is an error, not a crash */
    e.code = 0;
    assert_int_equal(kg_choice_put("/nonexistent-dir/choices.tsv", "k", 1, 1, &e), KG_EXIT_IO);
}

static void the_file_stays_bounded(void **state)
{
    (void)state;
    char path[256], key[64];
    int index, count;
    kg_err e = {0, ""};
    temp_path(path, sizeof path);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < KG_CHOICE_MAX + 10; i++)
        fprintf(f, "old-%d\t%d\t1\n", i, i % 100);
    fclose(f);
    assert_int_equal(kg_choice_put(path, "newest", 2, 3, &e), 0);
    f = fopen(path, "r");
    char line[256];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    assert_int_equal(lines, KG_CHOICE_MAX);
    assert_int_equal(kg_choice_get(path, "newest", &index, &count), 0);
    snprintf(key, sizeof key, "old-%d", KG_CHOICE_MAX + 9);
    assert_int_equal(kg_choice_get(path, key, &index, &count), 0); /* the newest old ones stay */
    assert_int_equal(kg_choice_get(path, "old-0", &index, &count), 1); /* the oldest went */
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_then_get),
        cmocka_unit_test(malformed_lines_are_ignored),
        cmocka_unit_test(bad_keys_are_refused),
        cmocka_unit_test(the_file_stays_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
