#!/bin/bash
# Runs ceph/s3-tests against `npm start`'s local gateway, fresh state, and writes
# <out>.txt (pytest's output), <out>.xml (JUnit) and <out>.marks.json (markers), which
# `python3 dev/s3-tests/families.py <out>.xml <out>.marks.json` turns into docs/COMPATIBILITY.md's table.
# `python3 dev/s3-tests/exclusions.py <out>.xml` checks every failing function has its reason in
# dev/s3-tests/*-exclusions.txt (--markdown: the table of docs/COMPATIBILITY.md's "still fails").
#   usage: dev/s3-tests/run.sh <s3-tests checkout> <out prefix> [pytest args...]
#   e.g.   dev/s3-tests/run.sh ~/s3-tests /tmp/s3t s3tests/functional/test_s3.py s3tests/functional/test_headers.py
# The checkout needs list-versions.patch (the teardown aborts multipart uploads left behind, which
# shardgate's DeleteBucket refuses to leave, and lists keys where ListObjectVersions is
# NotImplemented, as before issue 25: without it one leftover fails every later test's setup) and Python with boto3, pytest and pytest-timeout (Debian: python3-boto3
# python3-pytest python3-pytest-timeout, and the suite's own requirements: python3-munch python3-gevent
# python3-isodate python3-tz python3-httplib2 python3-lxml; docs/COMPATIBILITY.md says how the runs of
# 2026-12-06 put Debian's next to a current botocore). PORT (default 8812), STATE (a temp dir), PYTHON and PYTEST_TIMEOUT
# (seconds per test, default 180: the suite's test_lifecycle_noncur_transition sleeps 14 lifecycle days, 140 s) may be set.
set -u
suite=$(cd "$1" && pwd); out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
port=${PORT:-8812}; state=${STATE:-$(mktemp -d /tmp/shardgate-s3tests-XXXXXX)}
sed -e "s/@PORT@/$port/" -e "s/@LC_DAY@/${LC_DAY_SECONDS:-10}/" "$here/s3tests.conf" > "$out.conf"
cd "$root"
# npm start's config (SHARDGATE_CONFIG from the environment, else wrangler.toml's) with the suite's
# [s3 alt] user as a key of a second account, "alt" (s3tests.conf), [iam root] and [iam alt root]
# as keys of a third and fourth, and unsigned requests judged
# by bucket policies and ACLs as AWS judges them (allowAnonymous "policy"; npm start refuses them),
# and new buckets ObjectWriter (ACLs enabled) unless the request names an ownership, as RGW makes them.
SHARDGATE_CONFIG=$(node --import tsx -e "
  import('./dev/dev-config.ts').then((m) => {
    const c = JSON.parse(m.devConfigSource(process.env));
    c.credentials.push({ accessKeyId: 'shardgate-alt', secretAccessKey: 'shardgate-alt-secret', account: 'alt' });
    // [iam root] and [iam alt root] (RGW's IAM account roots): keys of two more accounts, named by the
    // conf's user_id, so the tests that use them as S3 clients of other accounts reach the gateway.
    c.credentials.push({ accessKeyId: 'AAAAAAAAAAAAAAAAAAaa', secretAccessKey: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', account: 'RGW11111111111111111' });
    c.credentials.push({ accessKeyId: 'BBBBBBBBBBBBBBBBBBbb', secretAccessKey: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', account: 'RGW22222222222222222' });
    c.allowAnonymous = 'policy';
    // Buckets with ACLs enabled unless a test asks otherwise, as RGW's are and as the suite assumes (issue 43).
    c.s3 = { ...(c.s3 ?? {}), defaultObjectOwnership: 'ObjectWriter' };
    console.log(JSON.stringify(c));
  });") || exit 1
export SHARDGATE_CONFIG
# A lifecycle day of lc_debug_interval seconds (s3tests.conf; ceph/s3-tests' default 10), as RGW's rgw_lc_debug_interval.
SHARDGATE_LIFECYCLE_DAY_SECONDS=${LC_DAY_SECONDS:-10} SHARDGATE_CRON_SECONDS=0 setsid node --import tsx dev/start.ts --port "$port" --no-watch --persist-to "$state" > "$out.gateway.log" 2>&1 &
gw=$!
trap 'kill -TERM -- -$gw 2>/dev/null; sleep 2; kill -KILL -- -$gw 2>/dev/null' EXIT
for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$port/_shardgate/status" && break; sleep 1; done
# Debian's python3-awscrt (awscli's package brings it) is far older than botocore 1.43 expects:
# importable, it makes botocore sign some requests through it and fail in the client. A stub that
# refuses the import keeps botocore signing in Python (docs/COMPATIBILITY.md, "How it was run").
if [ -z "${S3TESTS_KEEP_AWSCRT:-}" ]; then
  nocrt=$(mktemp -d /tmp/s3tests-nocrt-XXXXXX); mkdir -p "$nocrt/awscrt"
  echo "raise ImportError('awscrt hidden by dev/s3-tests/run.sh: too old for this botocore')" > "$nocrt/awscrt/__init__.py"
  PYTHONPATH="$nocrt${PYTHONPATH:+:$PYTHONPATH}"
fi
cd "$suite"
start=$(date +%s)
S3TEST_CONF="$out.conf" MARKS_OUT="$out.marks.json" PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider -p marks --timeout "${PYTEST_TIMEOUT:-180}" --junitxml="$out.xml" "$@" > "$out.txt" 2>&1
echo "pytest rc=$? seconds=$(( $(date +%s) - start ))" >> "$out.txt"
