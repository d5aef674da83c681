/* Callback names: static functions of an executable linked without -rdynamic come from its
 * .symtab, exported ones from dladdr; each address is resolved and interned once; an explicit
 * location is taken by exactly one registration. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "callback_names.h"
#include "check.h"

static int __attribute__((noinline)) static_callback(int x) { return x * 3 + 1; }
int __attribute__((noinline)) global_callback(int x);
int global_callback(int x) { return x * 5 + 2; }

int main(void) {
    const d9_loc *a = d9a_callback_loc((const void *)static_callback);
    CHECK(a != NULL);
    if (a) CHECK_STR(a->file, "static_callback");
    CHECK(d9a_callback_loc((const void *)static_callback) == a); /* cached */

    const d9_loc *b = d9a_callback_loc((const void *)global_callback);
    CHECK(b != NULL && b != a);
    if (b) CHECK_STR(b->file, "global_callback");

    /* a function of a shared library, named through its dynamic symbol table */
    char name[256];
    d9a_describe_function((const void *)opendir, name, sizeof name);
    CHECK_STR(name, "opendir");

    /* an address inside a function */
    d9a_describe_function((const char *)(const void *)static_callback + 1, name, sizeof name);
    CHECK(strncmp(name, "static_callback+0x", 18) == 0);

    /* explicit locations are used once */
    static d9_loc here = {"here", "main", 0, 0};
    CHECK(d9a_take_next_loc() == NULL);
    d9a_set_next_loc(&here);
    CHECK(d9a_loc_for((const void *)static_callback, d9a_take_next_loc()) == &here);
    CHECK(d9a_take_next_loc() == NULL);
    CHECK(d9a_loc_for((const void *)static_callback, NULL) == a);
    CHECK(d9a_loc_for(NULL, NULL) == NULL);

    /* the object holding a callback */
    CHECK_STR(d9a_callback_object((const void *)static_callback), "test_adapter_callback_names");
    CHECK(strncmp(d9a_callback_object((const void *)getpid), "libc.so", 7) == 0);
    CHECK_STR(d9a_callback_object(NULL), "");

    CHECK(static_callback(1) + global_callback(1) == 11);
    return d9t_summary("test_adapter_callback_names");
}
