#!/usr/bin/env python3
"""The folder rules of src/README.md, checked (tests/scripts/test_source_layout.sh).

  source_layout.py SRC_DIR README [COMPILE_COMMANDS_JSON]

1. Every `#include "..."` of a part's file (src/<folder>/, not its tests/) names a header of
   its own folder, of a folder that the README's table lets it use ("may use" column), or the
   public API (dial9/...). A bare "name.h" must be in the file's own folder or in
   adapters/common (the one include directory the adapters and the shim add).
2. With the build's compile_commands.json: no file of a part is compiled more than once (each
   .c belongs to one library or binary, which the others link).

Prints one line per breach and exits 1; exits 0 when everything holds."""

import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
TICKED = re.compile(r"`([^`]+)`")


def read_rules(readme):
    """{folder: set of folders it may use} from the table's rows."""
    rules = {}
    with open(readme, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| `"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            folder = TICKED.findall(cells[0])[0].rstrip("/")
            uses = {t.rstrip("/") for t in TICKED.findall(cells[-1])}
            rules[folder] = uses
    return rules


def part_of(rel):
    """The part a path under src/ belongs to: its first folder, adapters/<name> for an adapter;
    None for a test or a file directly in src/."""
    bits = rel.split("/")
    if len(bits) < 2 or "tests" in bits[:-1]:
        return None
    if bits[0] == "adapters":
        return "adapters/" + bits[1] if len(bits) > 2 else None
    return bits[0]


def row_of(part):
    return "adapters/*" if part.startswith("adapters/") else part


def target_part(src, rel, name):
    """The part an #include "name" of file rel reaches, or None when it names nothing there."""
    own_dir = os.path.dirname(os.path.join(src, rel))
    if os.path.isfile(os.path.join(own_dir, name)):
        return part_of(os.path.relpath(os.path.normpath(os.path.join(own_dir, name)), src))
    if "/" not in name:
        if os.path.isfile(os.path.join(src, "adapters", "common", name)):
            return "adapters/common"
        return None
    if os.path.isfile(os.path.join(src, name)):
        return part_of(name)
    return None


def check_includes(src, rules):
    errors = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for fname in sorted(files):
            if not fname.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(root, fname), src)
            part = part_of(rel)
            if part is None:
                continue
            row = row_of(part)
            if row not in rules:
                errors.append(f"src/{rel}: folder {part}/ has no row in src/README.md's table")
                continue
            with open(os.path.join(root, fname), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    name = m.group(1)
                    if name.startswith("dial9/"):
                        continue  # the public API, for every part
                    to = target_part(src, rel, name)
                    if to is None:
                        errors.append(f"src/{rel}:{n}: #include \"{name}\" is no header under src/")
                    elif to != part and to not in rules[row]:
                        allowed = ", ".join(sorted(rules[row])) or "nothing"
                        errors.append(f"src/{rel}:{n}: #include \"{name}\": {part}/ may not use {to}/ "
                                      f"(src/README.md: it may use {allowed})")
    return errors


def check_compiled_once(src, commands):
    errors = []
    seen = {}
    with open(commands, encoding="utf-8") as f:
        entries = json.load(f)
    for e in entries:
        path = os.path.realpath(os.path.join(e.get("directory", ""), e["file"]))
        rel = os.path.relpath(path, src)
        if rel.startswith("..") or part_of(rel) is None:
            continue
        out = e.get("output")
        if out is None:
            m = re.search(r"\s-o\s+(\S+)", e.get("command", ""))
            out = m.group(1) if m else "?"
        seen.setdefault(rel, []).append(out)
    for rel, outs in sorted(seen.items()):
        if len(outs) > 1:
            errors.append(f"src/{rel}: compiled {len(outs)} times ({', '.join(outs)}); "
                          "build it into one library that the others link")
    if not seen:
        errors.append(f"{commands}: names no file of src/")
    return errors


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    src, readme = os.path.realpath(argv[1]), argv[2]
    rules = read_rules(readme)
    if not rules:
        print(f"{readme}: no table of folders found", file=sys.stderr)
        return 1
    errors = check_includes(src, rules)
    if len(argv) == 4:
        errors += check_compiled_once(src, argv[3])
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
