/* base/text.h: every text kgate prints or writes is one printable line of
 * valid UTF-8, whatever bytes it came from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "base/text.h"

static const char *clean(const char *src)
{
    static char buf[256];
    kg_text_clean(buf, sizeof buf, src);
    return buf;
}

/* Valid UTF-8 stays as it is; whitespace controls become spaces; other
 * controls, C1 included, and every byte of no valid sequence become '?'. */
static void the_rule(void **state)
{
    (void)state;
    assert_string_equal(clean("plain ascii, 1.5 us"), "plain ascii, 1.5 us");
    assert_string_equal(clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(clean("a\tb\nc\rd\ve\ff"), "a b c d e f");
    assert_string_equal(clean("line\xc2\x85sep\xe2\x80\xa8par\xe2\x80\xa9"), "line sep par ");
    assert_string_equal(clean("\x01\x1b[31mred\x7f"), "??[31mred?");
    assert_string_equal(clean("c1 \xc2\x80 \xc2\x9b \xc2\x9f end"), "c1 ? ? ? end"); /* C1 as UTF-8 */
    assert_string_equal(clean("\x9b[2J"), "?[2J");                                   /* C1 as a raw byte */
    assert_string_equal(clean("\xff\xfe"), "??");
    assert_string_equal(clean("\xc0\xaf \xe0\x80\xaf"), "?? ???");  /* overlong */
    assert_string_equal(clean("\xed\xa0\x80"), "???");              /* a surrogate */
    assert_string_equal(clean("\xf4\x90\x80\x80 \xf5\x80"), "???? ??"); /* past U+10FFFF */
    assert_string_equal(clean("cut \xe2\x82"), "cut ??");           /* a sequence cut short */
    assert_string_equal(clean("\x80lone"), "?lone");
    assert_string_equal(clean("\xc2\xa0nbsp"), "\xc2\xa0nbsp"); /* U+00A0 is printable */
    assert_true(kg_text_is_clean("caf\xc3\xa9 ok"));
    assert_false(kg_text_is_clean("tab\there"));
    assert_false(kg_text_is_clean("c1\xc2\x85"));
    assert_false(kg_text_is_clean("bad\xff"));
}

/* In place, and cut to fit at a character boundary, never in a sequence. */
static void in_place_and_bounded(void **state)
{
    (void)state;
    char s[] = "\xff\xfe\xe2\x82\xac\x1b[0m\xc2\x9b";
    assert_int_equal(kg_text_clean(s, sizeof s, s), strlen("??\xe2\x82\xac?[0m?"));
    assert_string_equal(s, "??\xe2\x82\xac?[0m?");
    char small[6];
    assert_int_equal(kg_text_clean(small, sizeof small, "ab\xe2\x82\xac\xe2\x82\xac"), 5);
    assert_string_equal(small, "ab\xe2\x82\xac");
    assert_int_equal(kg_text_clean(small, 4, "ab\xe2\x82\xac"), 2); /* the euro does not fit: left out whole */
    assert_string_equal(small, "ab");
    assert_int_equal(kg_text_clean(small, 1, "abc"), 0);
    assert_string_equal(small, "");
}

/* The JSON guard: every string value and key of a tree, nested too. */
static void a_json_tree(void **state)
{
    (void)state;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "reason", "worker killed: \xff\xc2\x9b[31m\x1b]0;x\x07");
    cJSON *arr = cJSON_AddArrayToObject(root, "list");
    cJSON_AddItemToArray(arr, cJSON_CreateString("nested \xc0\x80"));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(root, "k\xfe"), "ok", "caf\xc3\xa9");
    kg_json_clean(root);
    char *text = cJSON_PrintUnformatted(root);
    assert_string_equal(text, "{\"reason\":\"worker killed: ??[31m?]0;x?\",\"list\":[\"nested ??\"],"
                              "\"k?\":{\"ok\":\"caf\xc3\xa9\"}}");
    free(text);
    cJSON_Delete(root);
}

/* kg_append: never past the buffer's end; a cut ends with "..." at a
 * character boundary, and nothing is appended after it. */
static void bounded_appends(void **state)
{
    (void)state;
    char buf[16];
    size_t u = 0;
    buf[0] = '\0';
    assert_int_equal(kg_append(buf, sizeof buf, &u, "%s-%d", "ab", 12), 0);
    assert_int_equal(u, 5);
    assert_int_equal(kg_append(buf, sizeof buf, &u, ", %s", "cdefghij"), 0); /* exactly full: 15 bytes */
    assert_int_equal(u, 15);
    assert_string_equal(buf, "ab-12, cdefghij");
    assert_int_equal(kg_append(buf, sizeof buf, &u, "%s", ""), 0); /* nothing fits nothing */
    assert_int_equal(kg_append(buf, sizeof buf, &u, "x"), -1);
    assert_string_equal(buf, "ab-12, cdefg...");
    assert_int_equal(u, sizeof buf);
    assert_int_equal(kg_append(buf, sizeof buf, &u, "y"), -1); /* cut before: stays */
    assert_string_equal(buf, "ab-12, cdefg...");
    /* a cut inside a character moves the "..." before it */
    char e[10];
    u = 0;
    e[0] = '\0';
    assert_int_equal(kg_append(e, sizeof e, &u, "abcde\xe2\x82\xac\xe2\x82\xac"), -1);
    assert_string_equal(e, "abcde...");
    assert_true(kg_text_is_clean(e));
    /* a list built in a small buffer: every item, or "..." */
    char list[24];
    u = 0;
    list[0] = '\0';
    const char *names[] = {"relu", "softmax", "layer_norm", "swiglu"};
    int cut = 0;
    for (int i = 0; i < 4; i++)
        cut |= kg_append(list, sizeof list, &u, "%s%s", i ? ", " : "", names[i]);
    assert_int_equal(cut, -1);
    assert_string_equal(list, "relu, softmax, layer...");
    assert_int_equal(strlen(list), sizeof list - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_rule),
        cmocka_unit_test(in_place_and_bounded),
        cmocka_unit_test(a_json_tree),
        cmocka_unit_test(bounded_appends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
