#!/usr/bin/env bash
# scripts/check_doc_names.sh fails on a doc naming members that do not
# exist, and names each, nested ones (A::B::c) whole.
#   bash tests/docs/doc_names_test.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$(bash scripts/check_doc_names.sh tests/docs/stale_names.md 2>&1) && {
  echo "check_doc_names.sh passed a doc of stale names" >&2
  exit 1
}
for name in WatchHub::Options::max_watchers CallLedger::NoSuchMember; do
  grep -qF "$name is not in the code" <<<"$out" || {
    echo "check_doc_names.sh did not name $name: $out" >&2
    exit 1
  }
done
echo "doc names: both stale names caught"
