/* dial9-serve: `dial9 serve` as an executable of its own, so that only it loads libmicrohttpd
 * (src/cli/cmd_serve.c parses the options; `dial9 serve` execs this with its arguments). */
#include "cli/cli.h"

int main(int argc, char **argv) {
    return d9_cmd_serve(argc, argv);
}
