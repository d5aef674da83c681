/* The `dial9` command: its subcommand table entries and exit codes. Each subcommand lives in
 * its own cmd_<name>.c and is listed once in main.c's table (declare it here). */
#ifndef D9_CLI_CLI_H
#define D9_CLI_CLI_H

#include "common/exit_codes.h" /* D9_EXIT_OK, D9_EXIT_DATA, D9_EXIT_USAGE */

/* The reading commands' help line on s3:// inputs, whose options main.c takes for every
 * command (d9_s3_take_selection_args) before the command sees its arguments. */
#define D9_CLI_S3_INPUT_HELP                                                                     \
    "PATH may be s3://BUCKET[/PREFIX]: uploaded segments chosen by --service S, --instance I\n"  \
    "and a wall-clock --from/--to (now-15m, now-2h, 2026-04-01T08:30Z), fetched into a local\n"  \
    "cache (DIAL9_S3_CACHE_DIR; docs/s3.md).\n\n"

typedef struct d9_cli_command {
    const char *name;
    const char *summary; /* one line for `dial9 --help` */
    /* argv[0] is the subcommand's name; returns the exit code */
    int (*run)(int argc, char **argv);
} d9_cli_command;

int d9_cmd_stats(int argc, char **argv);
int d9_cmd_dump(int argc, char **argv);
int d9_cmd_export(int argc, char **argv);
int d9_cmd_serve(int argc, char **argv);
int d9_cmd_symbolize(int argc, char **argv);
int d9_cmd_analyze(int argc, char **argv);
int d9_cmd_check(int argc, char **argv);
int d9_cmd_diff(int argc, char **argv);
int d9_cmd_run(int argc, char **argv);
int d9_cmd_upload(int argc, char **argv);
int d9_cmd_fold(int argc, char **argv);
int d9_cmd_trigger(int argc, char **argv);
int d9_cmd_dumps(int argc, char **argv);
/* hidden: dial9-serve's fetch step (cmd_serve_fetch.c), not in the table */
int d9_cmd_serve_fetch(int argc, char **argv);

#endif
