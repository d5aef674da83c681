/* The exit codes of `dial9` and its subcommands, `dial9 serve` (dial9-serve) among them: in
 * common/ because the CLI (cli/) and the server (serve/) both return them. */
#ifndef D9_COMMON_EXIT_CODES_H
#define D9_COMMON_EXIT_CODES_H

enum {
    D9_EXIT_OK = 0,    /* everything read and decoded (a torn tail, the last frame of the last
                          stream incomplete, is fine) */
    D9_EXIT_DATA = 1,  /* a file could not be read, is no trace, or is damaged (its intact
                          streams after the damage are still read: docs/cli.md, "Damage and
                          torn tails") */
    D9_EXIT_USAGE = 2, /* bad arguments */
};

#endif
