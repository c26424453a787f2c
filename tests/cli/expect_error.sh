#!/usr/bin/env bash
# Runs one syncplan command on bad input and checks what SPEC section 2 promises for it: exit code 2,
# exactly one line on stderr containing every expected text (the file, field or layer), and no
# output file afterwards, nor a temporary .NAME.tmp.* beside it.
#
# usage: expect_error.sh --workdir DIR [--expect TEXT]... [--unexpected TEXT]... [--absent PATH]... -- COMMAND [ARG]...
#   --workdir DIR  emptied, then the command runs there (relative paths below are inside it)
#   --expect TEXT  a substring the stderr line must contain (repeatable)
#   --unexpected TEXT  a substring the stderr line must not contain (repeatable)
#   --absent PATH  an output the command must not leave behind (repeatable); when its folder did
#                  not exist before, it must not exist afterwards either
set -uo pipefail

workdir="" expects=() unexpected=() absents=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --workdir) workdir="$2"; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --unexpected) unexpected+=("$2"); shift 2 ;;
    --absent) absents+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "expect_error.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
if [[ -z "$workdir" || $# -eq 0 ]]; then
  echo "usage: expect_error.sh --workdir DIR [--expect TEXT]... [--unexpected TEXT]... [--absent PATH]... -- COMMAND [ARG]..." >&2
  exit 1
fi

rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir" || exit 1
folder_existed=()
for path in "${absents[@]}"; do
  rm -f "$path"
  if [[ -d "$(dirname "$path")" ]]; then folder_existed+=(yes); else folder_existed+=(no); fi
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

echo "command: $*"
"$@" >stdout.txt 2>stderr.txt
rc=$?
echo "exit code: $rc"
echo "--- stdout"; cat stdout.txt
echo "--- stderr"; cat stderr.txt
echo "---"

[[ $rc -eq 2 ]] || fail "exit code $rc, expected 2 (bad input or usage)"

# Exactly one line: one newline, at the end, and something before it.
newlines=$(tr -cd '\n' <stderr.txt | wc -c)
if [[ $newlines -ne 1 || $(wc -c <stderr.txt) -lt 2 || -n "$(tail -c 1 stderr.txt)" ]]; then
  fail "stderr holds $newlines line break(s); expected exactly one line"
fi
for text in "${expects[@]}"; do
  grep -qF -- "$text" stderr.txt || fail "stderr does not mention: $text"
done
for text in "${unexpected[@]}"; do
  ! grep -qF -- "$text" stderr.txt || fail "stderr mentions what it should not: $text"
done

for i in "${!absents[@]}"; do
  path="${absents[$i]}"
  folder=$(dirname "$path")
  name=$(basename "$path")
  [[ -e "$path" ]] && fail "output $path exists after a failed command"
  if [[ -d "$folder" ]]; then
    [[ "${folder_existed[$i]}" == no ]] && fail "folder $folder was created by a failed command"
    leftovers=$(find "$folder" -maxdepth 1 -name ".$name.tmp.*" -print)
    [[ -n "$leftovers" ]] && fail "temporary file(s) left behind: $leftovers"
  fi
done

stray=$(find . -name '.*.tmp.*' -print)
[[ -n "$stray" ]] && fail "temporary file(s) left in the working folder: $stray"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "ok: exit code 2, one line on stderr, nothing written"
