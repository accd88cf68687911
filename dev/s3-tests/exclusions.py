#!/usr/bin/env python3
"""
Checks a ceph/s3-tests run (run.sh's JUnit file) against the lists of functions shardgate is
expected to fail (dev/s3-tests/*-exclusions.txt, `<test name>  # <reason>` a line), and prints
docs/COMPATIBILITY.md's table of them. A function counts once: it fails when any of its cases
fails (a line may name one case, `name[params]`; it lists its function). Exit status 1 when
  - a function of the run fails and no line lists it (a failure without a reason: a bug to fix
    or a reason to write), or
  - a line lists a function that the run ran and that passed in every case (a stale line),
    unless its reason starts with `(timing)`: a function whose outcome depends on how fast the
    machine is (log objects rolled on a timer), which passes in some runs and fails in others.
Functions the run did not run are neither checked nor reported, so a targeted run checks only
what it ran.
  usage: exclusions.py <out>.xml [--markdown]
"""
import collections, glob, os, re, sys
import xml.etree.ElementTree as ET

here = os.path.dirname(os.path.abspath(__file__))
xml_path = sys.argv[1]
markdown = '--markdown' in sys.argv

# function -> (family file, reason); the first line naming a function gives its reason
listed = {}
families = collections.OrderedDict()
for path in sorted(glob.glob(os.path.join(here, '*-exclusions.txt'))):
    family = os.path.basename(path)[: -len('-exclusions.txt')]
    for line in open(path, encoding='utf-8'):
        if not line.strip() or line.startswith('#'):
            continue
        name, _, reason = line.partition('  # ')
        function = name.strip().split('[')[0]
        if function not in listed:
            listed[function] = (family, reason.strip())
            families.setdefault(family, []).append(function)

# function -> 'pass' | 'fail' | 'skip' over its cases (test_s3.py only)
state = {}
for tc in ET.parse(xml_path).iter('testcase'):
    if not tc.get('classname', '').endswith('test_s3'):
        continue
    function = tc.get('name').split('[')[0]
    if tc.find('failure') is not None or tc.find('error') is not None:
        state[function] = 'fail'
    elif tc.find('skipped') is not None:
        state.setdefault(function, 'skip')
    elif state.get(function) != 'fail':
        state[function] = 'pass'

unlisted = sorted(f for f, s in state.items() if s == 'fail' and f not in listed)
stale = sorted(f for f, s in state.items() if s == 'pass' and f in listed and not listed[f][1].startswith('(timing)'))
failing = [f for f, s in state.items() if s == 'fail']
print(f'{len(state)} test_s3.py functions ran: {sum(s == "pass" for s in state.values())} pass in every case, '
      f'{len(failing)} fail, {sum(s == "skip" for s in state.values())} skipped', file=sys.stderr)
for f in unlisted:
    print(f'FAILS WITHOUT A REASON: {f}', file=sys.stderr)
for f in stale:
    print(f'LISTED BUT PASSES: {f} ({listed[f][0]}-exclusions.txt)', file=sys.stderr)

if markdown:
    for family, functions in families.items():
        rows = [f for f in functions if state.get(f) == 'fail' or (state.get(f) == 'pass' and listed[f][1].startswith('(timing)'))]
        if not rows:
            continue
        print(f'\n**{family}** (dev/s3-tests/{family}-exclusions.txt: {len(rows)})\n')
        print('| Functions | Why they fail |')
        print('| --- | --- |')
        by_reason = collections.OrderedDict()  # functions sharing one reason share a row
        for f in rows:
            passed = ' (passed in this run)' if state[f] == 'pass' else ''
            by_reason.setdefault(listed[f][1], []).append(f'`{f}`{passed}')
        for reason, names in by_reason.items():
            count = f' ({len(names)})' if len(names) > 1 else ''
            print(f"| {', '.join(names)}{count} | {reason.replace('|', chr(92) + '|')} |")
sys.exit(1 if unlisted or stale else 0)
