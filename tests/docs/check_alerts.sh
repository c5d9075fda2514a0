#!/usr/bin/env bash
# docs/alerts.yaml: valid rules (promtool check rules), and the behaviour
# tests/docs/alerts_test.yaml expects of each alert (promtool test rules).
# Then the same tests against rules with a threshold moved, or without what
# carries an alert across a failover, must fail: the tests do see what the
# rules say.
set -euo pipefail
cd "$(dirname "$0")/../.."
promtool check rules docs/alerts.yaml
promtool test rules tests/docs/alerts_test.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs" "$work/tests/docs"
cp tests/docs/alerts_test.yaml "$work/tests/docs/"
# Each change of the rules that the tests must catch.
mutations=(
  's/group_left max by (job) (metasrv_flow_stall_after_seconds)/group_left (3 * max by (job) (metasrv_flow_stall_after_seconds))/'
  '/keep_firing_for/d'
  's/max_over_time(metasrv_flows_stalled\[2m\])/metasrv_flows_stalled/'
)
for mutation in "${mutations[@]}"; do
  sed "$mutation" docs/alerts.yaml >"$work/docs/alerts.yaml"
  if cmp -s docs/alerts.yaml "$work/docs/alerts.yaml"; then
    echo "the mutation $mutation changes nothing: update it" >&2
    exit 1
  fi
  if promtool test rules "$work/tests/docs/alerts_test.yaml" >/dev/null 2>&1; then
    echo "the rule tests pass on rules changed by $mutation: they miss it" >&2
    exit 1
  fi
done
echo "alert rules: valid, tested, and the tests catch each changed rule"
