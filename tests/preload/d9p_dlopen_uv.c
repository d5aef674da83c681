/* dlopen()s libuv with RTLD_LOCAL, as plugin hosts do, and runs its default loop. libuv's own
 * calls to its exported functions then reach the shim's wrappers, whose real functions are
 * invisible to dlsym(RTLD_NEXT): the program must still run unchanged. */
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
    void *h = dlopen("libuv.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        puts("libuv.so.1 not installed");
        return 0;
    }
    void *(*default_loop)(void) = (void *(*)(void))dlsym(h, "uv_default_loop");
    int (*run)(void *, int) = (int (*)(void *, int))dlsym(h, "uv_run");
    if (!default_loop || !run) return 1;
    printf("uv_run returned %d\n", run(default_loop(), 0));
    return 0;
}
