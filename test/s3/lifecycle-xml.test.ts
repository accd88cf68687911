/**
 * The LifecycleConfiguration document (s3/lifecycle-xml.ts): each error as AWS answers it, and a
 * configuration read back in the form it was written.
 */
import { describe, expect, it } from 'vitest';
import { S3Error } from '../../worker/model/errors.ts';
import { lifecycleConfigurationXml, parseLifecycleConfiguration } from '../../worker/s3/lifecycle-xml.ts';

const doc = (...rules: string[]) => `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules.join('')}</LifecycleConfiguration>`;
const rule = (inner: string, head = '<ID>r</ID><Filter><Prefix>p/</Prefix></Filter><Status>Enabled</Status>') => `<Rule>${head}${inner}</Rule>`;
const days = (n: string) => rule(`<Expiration><Days>${n}</Days></Expiration>`);

function codeOf(xml: string): string {
  try {
    parseLifecycleConfiguration(xml);
  } catch (err) {
    if (err instanceof S3Error) return err.code;
    throw err;
  }
  return 'ok';
}

describe('parseLifecycleConfiguration', () => {
  it.each([
    ['Days 0', doc(days('0')), 'InvalidArgument'],
    ['Days negative', doc(days('-3')), 'InvalidArgument'],
    ['Days not a number', doc(days('x')), 'MalformedXML'],
    ['Date not at midnight', doc(rule('<Expiration><Date>2026-01-01T10:00:00Z</Date></Expiration>')), 'InvalidArgument'],
    ['Date not ISO 8601', doc(rule('<Expiration><Date>20200101</Date></Expiration>')), 'MalformedXML'],
    ['Days and Date', doc(rule('<Expiration><Days>1</Days><Date>2026-01-01</Date></Expiration>')), 'MalformedXML'],
    ['duplicate ID', doc(days('1'), days('2')), 'InvalidArgument'],
    [
      'ID of 256 characters',
      doc(rule('<Expiration><Days>1</Days></Expiration>', `<ID>${'a'.repeat(256)}</ID><Prefix></Prefix><Status>Enabled</Status>`)),
      'InvalidArgument',
    ],
    ['no rules', doc(), 'MalformedXML'],
    [
      '1001 rules',
      doc(...Array.from({ length: 1001 }, (_, i) => rule('<Expiration><Days>1</Days></Expiration>', `<ID>r${i}</ID><Prefix/><Status>Enabled</Status>`))),
      'MalformedXML',
    ],
    [
      'both Prefix and Filter',
      doc(rule('<Expiration><Days>1</Days></Expiration>', '<ID>r</ID><Prefix>a</Prefix><Filter/><Status>Enabled</Status>')),
      'MalformedXML',
    ],
    ['neither Prefix nor Filter', doc(rule('<Expiration><Days>1</Days></Expiration>', '<ID>r</ID><Status>Enabled</Status>')), 'MalformedXML'],
    ['Status enabled (lower case)', doc(rule('<Expiration><Days>1</Days></Expiration>', '<ID>r</ID><Prefix/><Status>enabled</Status>')), 'MalformedXML'],
    ['no action', doc(rule('')), 'InvalidRequest'],
    ['NoncurrentDays 0', doc(rule('<NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>')), 'InvalidArgument'],
    [
      'NewerNoncurrentVersions 101',
      doc(
        rule(
          '<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration>',
        ),
      ),
      'InvalidArgument',
    ],
    [
      'ExpiredObjectDeleteMarker with a tag',
      doc(
        rule(
          '<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>',
          '<ID>r</ID><Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Status>Enabled</Status>',
        ),
      ),
      'InvalidRequest',
    ],
    ['a transition (issue 44)', doc(rule('<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>')), 'ok'],
    ['a transition without a StorageClass', doc(rule('<Transition><Days>1</Days></Transition>')), 'MalformedXML'],
    [
      'a transition with Days and Date',
      doc(rule('<Transition><Days>1</Days><Date>2030-01-01</Date><StorageClass>GLACIER</StorageClass></Transition>')),
      'MalformedXML',
    ],
    [
      'two transitions to one class',
      doc(
        rule(
          '<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition><Transition><Days>5</Days><StorageClass>GLACIER</StorageClass></Transition>',
        ),
      ),
      'InvalidArgument',
    ],
    [
      'a noncurrent transition without NoncurrentDays',
      doc(rule('<NoncurrentVersionTransition><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>')),
      'MalformedXML',
    ],
    ['a transition with a bad date', doc(rule('<Transition><Date>20220927</Date><StorageClass>GLACIER</StorageClass></Transition>')), 'MalformedXML'],
    ['not XML', 'nope', 'MalformedXML'],
  ])('%s: %s', (_, xml, code) => {
    expect(codeOf(xml)).toBe(code);
  });

  it('gives a rule without an ID one', () => {
    const [r] = parseLifecycleConfiguration(doc(rule('<Expiration><Days>1</Days></Expiration>', '<Prefix>a/</Prefix><Status>Enabled</Status>')));
    expect(r!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reads back in the form it was written', () => {
    const written = [
      rule('<Expiration><Days>31</Days></Expiration>', '<ID>legacy</ID><Prefix>test1/</Prefix><Status>Enabled</Status>'),
      rule(
        '<Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration><NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>',
        '<ID>filtered</ID><Filter><And><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></And></Filter><Status>Disabled</Status>',
      ),
      rule(
        '<AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload>',
        '<ID>mp</ID><Filter/><Status>Enabled</Status>',
      ),
      rule(
        '<Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition><Transition><Date>2030-01-01</Date><StorageClass>GLACIER</StorageClass></Transition><NoncurrentVersionTransition><NoncurrentDays>0</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>',
        '<ID>tiers</ID><Filter/><Status>Enabled</Status>',
      ),
    ];
    const rules = parseLifecycleConfiguration(doc(...written));
    const xml = lifecycleConfigurationXml(rules);
    expect(xml).toContain('<Rule><ID>legacy</ID><Prefix>test1/</Prefix><Status>Enabled</Status><Expiration><Days>31</Days></Expiration></Rule>');
    expect(xml).toContain(
      '<Filter><And><Prefix>a/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></And></Filter><Status>Disabled</Status><Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration>',
    );
    expect(xml).toContain(
      '<ID>mp</ID><Filter></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload>',
    );
    expect(xml).toContain(
      '<Status>Enabled</Status><Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition><Transition><Date>2030-01-01T00:00:00.000Z</Date><StorageClass>GLACIER</StorageClass></Transition><NoncurrentVersionTransition><NoncurrentDays>0</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition>',
    );
    expect(parseLifecycleConfiguration(xml)).toEqual(rules);
  });
});
