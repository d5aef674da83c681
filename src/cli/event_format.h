/* Rendering of decoded events and values for people (one line of text) and for programs
 * (JSON through d9_json). Shared by dump and the commands that print events. */
#ifndef D9_CLI_EVENT_FORMAT_H
#define D9_CLI_EVENT_FORMAT_H

#include <stdio.h>

#include "common/json_writer.h"
#include "format/decoder.h"

/* `ts name field=value ...` without the newline. Strings are quoted with C escapes, stacks
 * are [0x...,...], absent optional values `null`, unresolved pool references `<unresolved
 * string #id>`. ts is `-` for schemas without a timestamp. */
void d9_format_event_text(FILE *out, const d9_event *ev);
void d9_format_value_text(FILE *out, const d9_value *v);

/* {"ts":..., "event":"Name", "fields":{...}}: ts null without a timestamp; stacks as arrays
 * of "0x..." strings, Bytes as a hex string, StringMap as an object, DynamicList as an array,
 * DynamicMap as an array of [key, value] pairs, absent and unresolved values as null. */
void d9_format_event_json(d9_json *j, const d9_event *ev);
void d9_format_value_json(d9_json *j, const d9_value *v);

#endif
