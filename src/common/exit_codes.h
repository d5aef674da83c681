/* The exit codes of `dial9` and its subcommands, `dial9 serve` (dial9-serve) among them: in
 * common/ because the CLI (cli/) and the server (serve/) both return them. */
#ifndef D9_COMMON_EXIT_CODES_H
#define D9_COMMON_EXIT_CODES_H

enum {
    D9_EXIT_OK = 0,    /* everything read and decoded (a truncated tail is fine) */
    D9_EXIT_DATA = 1,  /* a file could not be read or had a decode error */
    D9_EXIT_USAGE = 2, /* bad arguments */
};

#endif
