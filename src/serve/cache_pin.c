/* Segments kept in the S3 cache while served (cache_pin.h). */
#include "serve/cache_pin.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "serve/open_beneath.h"

struct d9_pins {
    size_t n;
    int fd[];
};

d9_pins *d9_pin_files(int dir_fd, const char *const *rel, size_t n) {
    d9_pins *p = malloc(sizeof *p + n * sizeof p->fd[0]);
    if (!p) return NULL;
    p->n = 0;
    struct timespec now[2];
    clock_gettime(CLOCK_REALTIME, &now[0]);
    now[1].tv_nsec = UTIME_OMIT; /* the modification time is the index's: it would decode again */
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        int fd = d9_open_regular_beneath(dir_fd, rel[i], &st);
        if (fd >= 0) p->fd[p->n++] = fd;
        /* locked by the evictor, or unlinked by it before our lock: gone */
        if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) != 0 || fstat(fd, &st) != 0 || st.st_nlink == 0) {
            d9_unpin_files(p);
            return NULL;
        }
        futimens(fd, now);
    }
    return p;
}

void d9_unpin_files(d9_pins *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) close(p->fd[i]);
    free(p);
}
