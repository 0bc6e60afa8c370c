#!/usr/bin/env bash
# Run one benchmark against two commits side by side, in one sitting (these machines are noisy):
# the rounds alternate A, B, A, B, ... and each prints its RESULT line tagged with its commit.
#
#   bench/compare_refs.sh REF_A REF_B ROUNDS bench/bench_merge.py --rows 1000000 --repeats 1
#
# Each commit is checked out into its own temporary worktree and run with this checkout's .venv
# (PYTHONPATH puts that worktree's zipper first). The worktrees are removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { echo "usage: $0 REF_A REF_B ROUNDS BENCH_SCRIPT [ARGS...]" >&2; exit 2; }
repo=$PWD a=$1 b=$2 rounds=$3 script=$4
shift 4
root=$(mktemp -d -t zipper-bench-refs-XXXXXX)
trap 'git worktree remove --force "$root/a" 2>/dev/null || true; git worktree remove --force "$root/b" 2>/dev/null || true; rm -rf "$root"' EXIT
git worktree add --quiet --detach "$root/a" "$a"
git worktree add --quiet --detach "$root/b" "$b"
for ((round = 1; round <= rounds; round++)); do
  for side in a b; do
    ref=$([ "$side" = a ] && echo "$a" || echo "$b")
    line=$(cd "$root/$side" && PYTHONPATH="$root/$side" "$repo/.venv/bin/python" "$script" "$@" 2>"$root/stderr" | grep '^RESULT' | tail -1) || true
    echo "round $round $ref: ${line:-no RESULT line}"
    [ -n "$line" ] || tail -n 5 "$root/stderr" | sed 's/^/  stderr: /'
  done
done
