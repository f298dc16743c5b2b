#!/usr/bin/env bash
# Runs every fenced shell block (```sh, ```bash, ```shell) of README.md and docs/*.md the way a newcomer would:
# on a fresh clone of this repository at HEAD, with `storeledger` first on PATH, from the clone's root, in document
# order, each document in one shell of its own (so a variable or a background job of one block is there for the
# next, as in a terminal) and on a fresh ledger directory. Not part of `swift test`: it needs a release build.
#
#   tools/run-doc-blocks.sh                          # clones, builds storeledger in release there (about 14 minutes cold on 2 cores)
#   tools/run-doc-blocks.sh --binary .build/release/storeledger   # reuses a binary you built (seconds)
#
# Options:
#   --binary PATH    use this storeledger instead of building one in the clone
#   --timeout SEC    the longest a block may take (default 300); a block that takes longer fails, and the rest of
#                    its document is not run
#   --verbose        print every block's output, not only a failed block's first lines
#   --keep           keep the temporary folder (the clone, each block's output) and print where it is
#   FILE...          only these documents (paths from the repository's root, e.g. README.md docs/backup.md)
#
# What it reports, block by block: `PASS file:line`, `FAIL file:line (why)` with the first lines of the block's
# output, `SKIP file:line: reason`; then `N passed, N failed, N skipped`. Exit status 0 when nothing failed, 1 when a
# block failed, 2 for a usage error.
#
# A block passes when every command in it succeeds: a failing command anywhere in it, not only the last, fails it,
# as `set -e` would see it (a command tested by if, while, until, && or || is not a failure), and a pipeline fails
# when any part fails. Tests of HEAD only: commit the documents first (a warning says when README.md
# or docs/ differ from HEAD).
#
# Blocks that cannot run on a developer's machine (root, systemd, apt-get, writing to /etc, /var/lib, /run or
# /usr/local, Apple's network, a NATS cluster) say so in their first line, which the script reads and reports as the
# reason for skipping them:
#
#   # not run by tools/run-doc-blocks.sh: needs root and systemd
#
# A block without that line that names sudo, systemctl, apt-get, useradd, usermod, runuser or one of those system
# folders is not run either: it fails, asking for the line, so that a document's installation steps never run on the
# machine running the script. docs/socket-api.md carries no marks of its own: EXTERNAL_MARKS below holds them.
#
# `swift run [-c CONFIG] storeledger ARGS` in a block runs the storeledger on PATH with ARGS: the same program, without
# a second (debug) build of the clone. Any other `swift` command runs the real toolchain.
#
# Background jobs a block starts (a server) are stopped at the end of its document: every process left in the
# document's session (the script starts each document's shell with setsid and stops only those processes, by id)
# gets SIGTERM, then SIGKILL after 10 seconds.
set -uo pipefail

usage() {
    sed -n '2,/^set -uo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit "${1:-2}"
}

binary=""
block_timeout=300
verbose=0
keep=0
only=()
while [ $# -gt 0 ]; do
    case "$1" in
    --binary) [ $# -ge 2 ] || usage; binary=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; block_timeout=$2; shift 2 ;;
    --verbose) verbose=1; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) usage 0 ;;
    -*) echo "run-doc-blocks: unknown option $1" >&2; usage ;;
    *) only+=("$1"); shift ;;
    esac
done
case "$block_timeout" in '' | *[!0-9]*) echo "run-doc-blocks: --timeout takes whole seconds" >&2; exit 2 ;; esac

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || exit 2
head=$(git -C "$root" rev-parse HEAD) || exit 2
if [ -n "$binary" ]; then
    case "$binary" in /*) ;; *) binary="$PWD/$binary" ;; esac
    [ -x "$binary" ] || { echo "run-doc-blocks: --binary $binary is not an executable file" >&2; exit 2; }
fi
if [ -n "$(git -C "$root" status --porcelain -- README.md docs)" ]; then
    echo "warning: README.md or docs/ differ from HEAD; this run tests HEAD ($head), not the work tree" >&2
fi

# Marks for blocks of documents that carry none of their own: the document, the block's first line exactly, and
# what to do: `skip:REASON`, or `before:COMMAND` (run in the document's shell before the block, and reported). A
# block whose first line changes no longer matches: it then runs, or fails on the system check, never silently.
EXTERNAL_MARKS=(
    'docs/socket-api.md'
    'swift build -c release --product storeledger && swift build -c release --product loadgen   # one --product per build'
    'skip:a benchmark: builds loadgen in release (about 10 minutes) and loads every core for 40 seconds'
)

# A block that names one of these and carries no mark would change the machine: it is failed, never run.
SYSTEM_PATTERN='(^|[^A-Za-z0-9_./-])(sudo|systemctl|apt-get|apt|useradd|usermod|runuser|chown)([^A-Za-z0-9_-]|$)|(^|[ "=:])(/etc|/var/lib|/var/backups|/run|/usr/local)(/|[ "]|$)'
MARK_PREFIX='# not run by tools/run-doc-blocks.sh:'

work=$(mktemp -d "${TMPDIR:-/tmp}/run-doc-blocks.XXXXXX") || exit 2
shell_pid=""
shell_sid=""

# Every process of the current document's session except its shell, by id.
session_processes() {
    [ -n "$shell_sid" ] || return 0
    ps -e -o pid=,sid= | awk -v sid="$shell_sid" -v shell="$shell_pid" '$2 == sid && $1 != shell { print $1 }'
}

stop_session() {
    local pids left i
    pids=$(session_processes)
    if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null
        for i in $(seq 100); do
            left=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
            [ -z "$left" ] && break
            sleep 0.1
        done
        # shellcheck disable=SC2086
        [ -n "$left" ] && kill -KILL $left 2>/dev/null
    fi
    if [ -n "$shell_pid" ]; then
        exec 3>&-
        # At the end of its input the shell exits; one that does not within 2 seconds is killed.
        for i in $(seq 20); do kill -0 "$shell_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$shell_pid" 2>/dev/null
        wait "$shell_pid" 2>/dev/null
    fi
    shell_pid=""
    shell_sid=""
}

cleanup() {
    stop_session
    if [ "$keep" = 1 ]; then
        echo "kept: $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

clone="$work/repo"
echo "cloning $root at $head"
git clone -q "$root" "$clone" && git -C "$clone" checkout -q --detach "$head" || { echo "run-doc-blocks: git clone failed" >&2; exit 1; }

if [ -z "$binary" ]; then
    echo "building storeledger (release) in the clone: about 14 minutes on 2 cores when cold"
    if ! (cd "$clone" && nice -n 15 swift build -c release --product storeledger > "$work/build.log" 2>&1); then
        tail -n 30 "$work/build.log"
        echo "run-doc-blocks: the release build failed ($work/build.log)" >&2
        keep=1
        exit 1
    fi
    binary="$clone/.build/release/storeledger"
fi

# PATH: storeledger first, and `swift run storeledger …` as that same program.
mkdir -p "$work/bin"
ln -s "$binary" "$work/bin/storeledger"
real_swift=$(command -v swift || true)
cat > "$work/bin/swift" <<SHIM
#!/usr/bin/env bash
# swift run [-c CONFIG] [--quiet] storeledger ARGS: the storeledger on PATH (run-doc-blocks.sh); anything else: swift.
if [ "\${1:-}" = run ]; then
    args=("\$@"); i=1
    while [ \$i -lt \${#args[@]} ]; do
        case "\${args[\$i]}" in
        -c | --configuration) i=\$((i + 2)) ;;
        -*) i=\$((i + 1)) ;;
        *) break ;;
        esac
    done
    if [ "\${args[\$i]:-}" = storeledger ]; then exec "$work/bin/storeledger" "\${args[@]:\$((i + 1))}"; fi
fi
[ -n "$real_swift" ] || { echo "swift: not installed" >&2; exit 127; }
exec "$real_swift" "\$@"
SHIM
chmod +x "$work/bin/swift"
echo "storeledger: $binary ($("$binary" --version 2>/dev/null))"
echo

# The documents, in order: README.md, then docs/*.md by name (or the ones named on the command line).
documents=()
if [ ${#only[@]} -gt 0 ]; then
    documents=("${only[@]}")
else
    documents=(README.md)
    for f in "$clone"/docs/*.md; do documents+=("docs/${f##*/}"); done
fi

passed=0
failed=0
skipped=0

# Splits a document's shell blocks into $2/N.sh, with "N LINE" lines (LINE: the block's first line) in $2/index.
extract_blocks() {
    awk -v dir="$2" '
        inblock && /^```/ { inblock = 0; close(file); next }
        inblock { print > file; next }
        $0 == "```sh" || $0 == "```bash" || $0 == "```shell" {
            n++; inblock = 1; file = dir "/" n ".sh"; printf "" > file
            print n, NR + 1 > (dir "/index")
        }
    ' "$1"
    touch "$2/index"
}

start_shell() {
    local fifo=$1 log=$2
    rm -f "$fifo" && mkfifo "$fifo" || return 1
    # The document's shell: its own session (so its background jobs can be found and stopped), reading commands
    # from the fifo; STORELEDGER_DATA unset so that the documents' default ledger directory is theirs.
    (cd "$clone" && exec env -u STORELEDGER_DATA -u STORELEDGER_LOG_LEVEL PATH="$work/bin:$PATH" \
        setsid bash --noprofile --norc < "$fifo" > "$log" 2>&1) &
    shell_pid=$!
    exec 3> "$fifo"
    echo 'set -o pipefail' >&3
    local i
    for i in $(seq 50); do
        shell_sid=$(ps -o sid= -p "$shell_pid" 2>/dev/null | tr -d ' ')
        [ -n "$shell_sid" ] && [ "$shell_sid" != "$$" ] && [ "$shell_sid" = "$shell_pid" ] && break
        sleep 0.05
    done
    [ "$shell_sid" = "$shell_pid" ]
}

# Runs $1 (a file) in the document's shell, its output into $2; sets `result` to 0 when every command succeeded, else
# to the number of failures the ERR trap counted (each also noted in the output, with its exit status and line), or
# to "timeout" or "died". It sets a variable rather than printing, so that it runs in the script's own process, where
# a SIGINT or SIGTERM is handled within a tenth of a second (a command substitution would defer it to its end). The trap counts the failing commands of the block as `set -e` would see them; `source`
# itself is not guarded with `|| true`, which would turn the trap off inside the block.
run_in_shell() {
    local script=$1 out=$2 status="$2.status" waited=0
    rm -f "$status"
    {
        echo "__rdb_failed=0"
        echo "trap 'echo \"[run-doc-blocks: exit status \$? at line \$LINENO]\" >&2; __rdb_failed=\$((__rdb_failed + 1))' ERR"
        echo "source '$script' > '$out' 2>&1 < /dev/null"
        echo "trap - ERR"
        echo "echo \$__rdb_failed > '$status.tmp' && mv '$status.tmp' '$status'"
    } >&3
    while [ ! -f "$status" ]; do
        if ! kill -0 "$shell_pid" 2>/dev/null; then result=died; return; fi
        if [ "$waited" -ge $((block_timeout * 10)) ]; then result=timeout; return; fi
        sleep 0.1
        waited=$((waited + 1))
    done
    result=$(cat "$status")
}

show_output() {
    local lines=$1 file=$2
    if [ "$lines" = all ]; then sed 's/^/    | /' "$file"; else head -n "$lines" "$file" | sed 's/^/    | /'; fi
    if [ "$lines" != all ] && [ "$(wc -l < "$file")" -gt "$lines" ]; then echo "    | …"; fi
}

for document in "${documents[@]}"; do
    if [ ! -f "$clone/$document" ]; then
        echo "FAIL  $document (no such document in the clone)"
        failed=$((failed + 1))
        continue
    fi
    dir="$work/blocks/${document//\//_}"
    mkdir -p "$dir"
    extract_blocks "$clone/$document" "$dir"
    [ -s "$dir/index" ] || continue

    # A fresh start for each document: the clone as checked out (no ledger-data, no demo-ledger), the build kept.
    git -C "$clone" checkout -q -- . && git -C "$clone" clean -ffdqx -e /.build
    if ! start_shell "$dir/shell.fifo" "$dir/shell.log"; then
        echo "FAIL  $document (could not start its shell)"
        failed=$((failed + 1))
        stop_session
        continue
    fi
    abandoned=""
    while read -r n line; do
        where="$document:$line"
        block="$dir/$n.sh"
        out="$dir/$n.out"
        first=$(head -n 1 "$block")
        if [ -n "$abandoned" ]; then
            echo "FAIL  $where (not run: $abandoned)"
            failed=$((failed + 1))
            continue
        fi
        case "$first" in
        "$MARK_PREFIX"*)
            echo "SKIP  $where: ${first#"$MARK_PREFIX" }"
            skipped=$((skipped + 1))
            continue
            ;;
        esac
        action=""
        for ((i = 0; i < ${#EXTERNAL_MARKS[@]}; i += 3)); do
            if [ "${EXTERNAL_MARKS[i]}" = "$document" ] && [ "${EXTERNAL_MARKS[i + 1]}" = "$first" ]; then
                action=${EXTERNAL_MARKS[i + 2]}
            fi
        done
        case "$action" in
        skip:*)
            echo "SKIP  $where: ${action#skip:} (marked in tools/run-doc-blocks.sh)"
            skipped=$((skipped + 1))
            continue
            ;;
        before:*)
            printf '%s\n' "${action#before:}" > "$dir/$n.before.sh"
            run_in_shell "$dir/$n.before.sh" "$dir/$n.before.out"
            if [ "$result" != 0 ]; then
                echo "FAIL  $where (its setup failed: ${action#before:}: $result)"
                show_output 20 "$dir/$n.before.out"
                failed=$((failed + 1))
                [ "$result" = timeout ] || [ "$result" = died ] && abandoned="an earlier block's setup did not finish"
                continue
            fi
            echo "      $where: first ran ${action#before:} (marked in tools/run-doc-blocks.sh)"
            ;;
        esac
        if grep -Eq "$SYSTEM_PATTERN" "$block"; then
            echo "FAIL  $where (not run: it names sudo, systemctl, apt-get or a system folder and has no first line"
            echo "      '$MARK_PREFIX <reason>')"
            show_output 5 "$block"
            failed=$((failed + 1))
            continue
        fi
        run_in_shell "$block" "$out"
        case "$result" in
        0)
            echo "PASS  $where"
            passed=$((passed + 1))
            [ "$verbose" = 1 ] && show_output all "$out"
            ;;
        timeout | died)
            if [ "$result" = timeout ]; then why="took over ${block_timeout} s"; else why="its shell exited"; fi
            echo "FAIL  $where ($why)"
            show_output 20 "$out"
            failed=$((failed + 1))
            abandoned="an earlier block of $document $why"
            ;;
        *)
            echo "FAIL  $where (a command failed; see the [run-doc-blocks: …] lines)"
            show_output 20 "$out"
            failed=$((failed + 1))
            ;;
        esac
    done < "$dir/index"

    left=$(session_processes)
    if [ -n "$left" ]; then
        # shellcheck disable=SC2086
        echo "      $document: stopping what its blocks left running: $(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)" | sed 's/^ *//' | paste -sd ';' -)"
    fi
    stop_session
done

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
