/* dial9's version: the one place it is written. CMakeLists.txt reads the three numbers from
 * here (project(VERSION), the shared libraries' SOVERSION), so they cannot disagree.
 *
 * DIAL9_VERSION* say which headers a program was compiled against; d9_version() and
 * d9_version_string() say which library it runs with (docs/abi.md: what each part of the
 * version promises). */
#ifndef DIAL9_VERSION_H
#define DIAL9_VERSION_H

#define DIAL9_VERSION_MAJOR 0
#define DIAL9_VERSION_MINOR 6
#define DIAL9_VERSION_PATCH 0

#define DIAL9__STRINGIFY_(x) #x
#define DIAL9__STRINGIFY(x) DIAL9__STRINGIFY_(x)

/* 0xMMmmpp: one number that compares in version order (0.2.0 is 0x000200). */
#define DIAL9_VERSION ((DIAL9_VERSION_MAJOR << 16) | (DIAL9_VERSION_MINOR << 8) | DIAL9_VERSION_PATCH)
/* "0.5.0" */
#define DIAL9_VERSION_STRING                                                                     \
    DIAL9__STRINGIFY(DIAL9_VERSION_MAJOR) "." DIAL9__STRINGIFY(DIAL9_VERSION_MINOR) "."         \
        DIAL9__STRINGIFY(DIAL9_VERSION_PATCH)

#endif /* DIAL9_VERSION_H */
