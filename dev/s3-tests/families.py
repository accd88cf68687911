#!/usr/bin/env python3
"""
The family-by-family table of a ceph/s3-tests run (docs/COMPATIBILITY.md), from the JUnit file and
the markers run.sh wrote. Each test goes to the first family in RULES its markers or name match
(a test of tagging under a bucket policy counts as tagging: its subject); each failure gets a
reason from its message (the S3 error code and operation, NotImplemented's own words, or the
client's exception), and the reasons are counted per family.
  usage: families.py <out>.xml <out>.marks.json [--markdown | --detail FAMILY]
"""
import json, re, sys, collections
import xml.etree.ElementTree as ET

xml, marks_file = sys.argv[1], sys.argv[2]
detail = sys.argv[sys.argv.index('--detail') + 1] if '--detail' in sys.argv else None
marks = json.load(open(marks_file))
# first match wins: a test's subject
RULES = [
    ('PostObject (browser forms)', lambda n, m: 'post_object' in n),
    ('Versioning', lambda n, m: 'versioning' in m or 'delete_marker' in m or re.search(r'version', n)),
    ('Object lock', lambda n, m: 'object_lock' in m or 'object_lock' in n or 'retention' in n or 'legal_hold' in n),
    ('Lifecycle', lambda n, m: any(x.startswith('lifecycle') for x in m) or 'lifecycle' in n or 'cloud_' in ' '.join(m)),
    ('Encryption (SSE-C, SSE-KMS, SSE-S3)', lambda n, m: 'encryption' in m or 'sse_s3' in m or 'bucket_encryption' in m or re.search(r'sse|encrypt', n)),
    ('Tagging', lambda n, m: 'tagging' in m or re.search(r'_tags?_|tagging', n)),
    ('Checksum', lambda n, m: 'checksum' in m or 'cksum' in n),
    ('GetObjectAttributes', lambda n, m: 'object_attributes' in n),
    ('Object Ownership', lambda n, m: 'object_ownership' in m or 'ownership' in n),
    ('Bucket policy, public access block', lambda n, m: 'bucket_policy' in m or re.search(r'policy|public_access|block_public', n)),
    ('ACLs', lambda n, m: re.search(r'acl', n)),
    ('SigV2 header auth (test_headers)', lambda n, m: 'auth_aws2' in m),
    ('SigV4 header auth (test_headers)', lambda n, m: 'auth_aws4' in m),
    ('Header handling (test_headers)', lambda n, m: 'auth_common' in m or n.startswith('test_headers.py')),
    ('Bucket logging', lambda n, m: 'bucket_logging' in m or 'logging' in n),
    ('Website', lambda n, m: any(x.startswith('s3website') for x in m)),
    ('CORS', lambda n, m: 'cors' in n),
    ('Append / restore / storage class', lambda n, m: 'appendobject' in m or 'storage_class' in m or 'restore' in n or 'append' in n),
    ('Multipart', lambda n, m: 'multipart' in n),
    ('Copy', lambda n, m: 'copy' in m or 'copy' in n),
    ('Listing', lambda n, m: 'list_objects_v2' in m or re.search(r'list|prefix|delimiter|marker', n)),
    ('Conditional reads and writes', lambda n, m: 'conditional_write' in m or re.search(r'_if_|ifmatch|ifnonematch|if_match|if_none|modified_since', n)),
    ('Ranged reads', lambda n, m: 'range' in n),
    ('Presigned URLs, anonymous access', lambda n, m: re.search(r'presign|anon|public|_auth', n)),
    ('Buckets (create, naming, delete, location)', lambda n, m: n.startswith('test_s3.py::test_bucket') or 'bucket' in n),
    ('Objects (put, get, head, delete, metadata)', lambda n, m: True),
]
def family(nodeid):
    m = marks.get(nodeid, [])
    short = nodeid.replace('s3tests/functional/', '')
    name = short.split('::')[1] if '::' in short else short
    for fam, rule in RULES:
        if fam.endswith('(test_headers)') and not short.startswith('test_headers.py'):
            continue
        if rule(name if not fam.startswith('Header handling') else short, m):
            return fam
    return '?'

def reason(msg):
    if not msg: return ''
    m = re.search(r'An error occurred \(([^)]*)\) when calling the (\w+) operation(?:: (.*))?', msg)
    if m:
        code, op, text = m.group(1), m.group(2), (m.group(3) or '')
        if code == 'NotImplemented':
            t = re.search(r"(\S+ is not implemented|The '[^']+' header is not implemented|[\w ]+ with the '[^']+' query parameter is not implemented)", text)
            return f'NotImplemented: {t.group(1) if t else op}'
        return f'{code} on {op}'
    m = re.search(r'(ParamValidationError|UnknownParameter|TypeError|Failed: DID NOT RAISE|ClientError not raised|KeyError: \'\w+\'|Timeout)[^\n]{0,80}', msg)
    if m: return m.group(0)[:100]
    return msg.splitlines()[0][:100]

tree = ET.parse(xml)
rows = collections.OrderedDict((f, {'total': 0, 'pass': 0, 'fail': collections.Counter(), 'tests': []}) for f, _ in RULES)
for tc in tree.iter('testcase'):
    cls, name = tc.get('classname'), tc.get('name')
    nodeid = cls.replace('.', '/') + '.py::' + name
    nodeid = nodeid.replace('s3tests/functional/test_s3.py', 's3tests/functional/test_s3.py')
    fam = family(nodeid)
    r = rows[fam]; r['total'] += 1
    bad = tc.find('failure') if tc.find('failure') is not None else tc.find('error')
    skipped = tc.find('skipped')
    if bad is None and skipped is None:
        r['pass'] += 1; r['tests'].append((name, 'pass', ''))
    else:
        el = bad if bad is not None else skipped
        why = ('skipped: ' if bad is None else '') + reason((el.get('message') or '') + '\n' + (el.text or ''))
        r['fail'][why] += 1; r['tests'].append((name, 'FAIL', why))
tp = sum(r['pass'] for r in rows.values()); tt = sum(r['total'] for r in rows.values())
if '--markdown' in sys.argv:
    print('| Family | Passed | Failures by reason (count) |')
    print('| --- | ---: | --- |')
    for fam, r in rows.items():
        if r['total']:
            why = '; '.join(f'{n}: {w}' for w, n in r['fail'].most_common()).replace('|', '/')
            print(f"| {fam} | {r['pass']}/{r['total']} | {why} |")
    print(f'| **All** | **{tp}/{tt}** | |')
    sys.exit(0)
print(f'TOTAL {tp}/{tt}')
for fam, r in rows.items():
    if not r['total']: continue
    print(f"{fam}: {r['pass']}/{r['total']}")
    for why, n in r['fail'].most_common():
        print(f'    {n:3d}  {why}')
if detail:
    for name, st, why in rows[detail]['tests']:
        print(st, name, why)
