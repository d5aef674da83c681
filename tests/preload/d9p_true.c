/* Does nothing: what `dial9 run` adds to a program's start and exit is measured on it. With
 * the argument "start" it prints CLOCK_MONOTONIC in ns as main begins, so a caller that noted
 * the clock before starting it knows how long the start took. */
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "start")) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    }
    return 0;
}
