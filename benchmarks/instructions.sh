#!/usr/bin/env bash
# Instructions per operation of the fold's hot paths, counted by callgrind: a figure that does not move with the
# machine's load or clock, so two builds compare side by side on a shared VM (wall-clock figures are still the
# benchmarks' job; this says whether a change does more work).
#
# usage: benchmarks/instructions.sh [--ops "fold tail5 tail100 past metrics100 restate100 decode encode"] [CHECKOUT ...]
#   Each CHECKOUT (default: this repository) is built in release mode with the workload in benchmarks/Sources, in a
#   scratch package under ${TMPDIR:-/tmp}/storeledger-instructions; each operation runs at two counts and the
#   difference is divided, so setup cancels out. With two checkouts the table gives the ratio second ÷ first.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
ops="fold tail5 tail100 past metrics100 restate100 decode encode"
checkouts=()
while (($#)); do
    case "$1" in
        --ops) ops="$2"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) checkouts+=("$(cd "$1" && pwd)"); shift ;;
    esac
done
((${#checkouts[@]})) || checkouts=("$(dirname "$here")")

if ! command -v valgrind >/dev/null; then
    echo "installing valgrind" >&2
    apt-get update -qq >&2 && apt-get install -y -qq valgrind >&2
fi

# Counts per operation: large enough that the difference dwarfs noise in setup, small enough for callgrind.
counts() {
    case "$1" in
        fold) echo "10 60" ;; past) echo "5 25" ;; metrics100) echo "2 12" ;; restate100) echo "100 1100" ;; tail5|tail100) echo "100 1100" ;; decode|encode) echo "1000 11000" ;;
        *) echo "unknown operation $1" >&2; exit 2 ;;
    esac
}

build() {  # CHECKOUT -> path of the fold-instructions binary
    local checkout="$1" name; name="$(basename "$checkout")"
    local dir="${TMPDIR:-/tmp}/storeledger-instructions/$name-$(echo "$checkout" | cksum | cut -d' ' -f1)"
    mkdir -p "$dir/Sources"
    rm -rf "$dir/Sources/FoldWorkload" "$dir/Sources/fold-instructions"
    cp -R "$here/Sources/FoldWorkload" "$here/Sources/fold-instructions" "$dir/Sources/"
    # The codec has its own module since issue 11; older checkouts keep it in LedgerCore.
    local products='.product(name: "LedgerCore", package: "'"$name"'")'
    [[ -d "$checkout/Sources/LedgerCodec" ]] && products+=', .product(name: "LedgerCodec", package: "'"$name"'")'
    cat > "$dir/Package.swift" <<PKG
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "FoldInstructions",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "$checkout")],
    targets: [
        .target(name: "FoldWorkload", dependencies: [$products]),
        .executableTarget(name: "fold-instructions", dependencies: ["FoldWorkload", $products]),
    ]
)
PKG
    echo "building $checkout ($(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo '?'))" >&2
    if ! (cd "$dir" && swift build -c release --product fold-instructions >&2); then
        echo "instructions.sh: the workload does not build against $checkout (see the errors above)" >&2
        return 1
    fi
    echo "$dir/.build/release/fold-instructions"
}

total() {  # BINARY OP COUNT -> instructions of the whole run
    local out; out="$(mktemp)"
    if ! valgrind --tool=callgrind --callgrind-out-file="$out" "$1" "$2" "$3" >/dev/null 2>&1; then
        echo "instructions.sh: $1 $2 $3 failed under callgrind" >&2
        rm -f "$out"; return 1
    fi
    awk '/^(summary|totals):/ {print $2; exit}' "$out"
    rm -f "$out"
}

for op in $ops; do counts "$op" >/dev/null || exit 2; done  # refuse an unknown operation before building

binaries=()
for c in "${checkouts[@]}"; do
    binary="$(build "$c")" || exit 1  # a failed build must not become a row of zeros
    binaries+=("$binary")
done

header="| operation |"; rule="|---|"
for c in "${checkouts[@]}"; do header+=" $(basename "$c") ($(git -C "$c" rev-parse --short HEAD 2>/dev/null || echo '?')) |"; rule+="---|"; done
((${#checkouts[@]} == 2)) && { header+=" ratio |"; rule+="---|"; }
echo "$header"; echo "$rule"
for op in $ops; do
    read -r n1 n2 <<<"$(counts "$op")"
    row="| $op |"; first=""
    for b in "${binaries[@]}"; do
        a="$(total "$b" "$op" "$n1")" || exit 1
        z="$(total "$b" "$op" "$n2")" || exit 1
        per=$(( (z - a) / (n2 - n1) ))
        row+=" $per |"
        if [[ -z "$first" ]]; then first=$per; else ratio="$(awk -v a="$first" -v b="$per" 'BEGIN {printf "%.2f", b / a}')"; fi
    done
    ((${#binaries[@]} == 2)) && row+=" ${ratio}× |"
    echo "$row"
done
