# Sourced (by the script tests' npm users and scripts/test-viewer.sh): `npm ci` once per tree.
#
#   npm_ci_once DIR   installs DIR/package-lock.json into DIR/node_modules unless it is there
#                     already; returns 0 when installed or current, 2 when npm is missing, else
#                     npm's failure (its messages on stderr)
#
# The lock is DIR/.npm-ci.lock, next to the node_modules it protects: every build directory
# (build/, build-asan/, a soak's) and scripts/test-viewer.sh install into that one source
# tree, so a lock in a build directory would let two of them run `npm ci` there at once (each
# deleting what the other installs). An up-to-date tree is never reinstalled: a test using it
# in another build directory keeps its files.

npm_ci_current() {
    [ -f "$1/node_modules/.package-lock.json" ] && ! [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]
}

npm_ci_once() {
    local dir=$1
    npm_ci_current "$dir" && return 0
    command -v npm >/dev/null || return 2
    (
        flock 9
        npm_ci_current "$dir" && exit 0
        # playwright-core (viewer/) drives Debian's chromium: never let it fetch a browser
        cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >&2
    ) 9>"$dir/.npm-ci.lock"
}

# For a script test: npm_ci_once DIR, then go on (installed), exit 0 with SKIP (no npm), or
# exit 1 (npm ci failed).
npm_ci_or_skip() {
    npm_ci_once "$1"
    case $? in
        0) ;;
        2) echo "SKIP: npm is not installed"; exit 0 ;;
        *) echo "npm ci failed in $1"; exit 1 ;;
    esac
}
