/**
 * The Condition operators of IAM policies (IAM JSON policy reference, "Condition operators"), as
 * a bucket policy uses them: String*, Numeric*, Date*, Bool, BinaryEquals, IpAddress /
 * NotIpAddress, Arn*, Null; the `IfExists` suffix (every operator but Null) and the
 * `ForAnyValue:` / `ForAllValues:` set qualifiers.
 * Semantics, as IAM documents them: the keys of one operator and the operators of one block must
 * all hold (AND); the values of one key are alternatives (OR). A key absent from the request
 * makes a positive operator false and a negated one (StringNotEquals, NotIpAddress, ...) true,
 * unless IfExists makes it true anyway; Null "true" holds when the key is absent, "false" when it
 * is there. ForAllValues holds for an absent key, ForAnyValue does not.
 * Keys the gateway does not know are absent, as IAM treats keys missing from the request.
 * Policy variables (`${aws:username}`) are not substituted: they compare literally.
 */
import { glob, type MatchMeter } from './glob.ts';

/** Positive operators; each negated one maps to its positive twin. */
const POSITIVE = new Set([
  'StringEquals',
  'StringEqualsIgnoreCase',
  'StringLike',
  'NumericEquals',
  'NumericLessThan',
  'NumericLessThanEquals',
  'NumericGreaterThan',
  'NumericGreaterThanEquals',
  'DateEquals',
  'DateLessThan',
  'DateLessThanEquals',
  'DateGreaterThan',
  'DateGreaterThanEquals',
  'Bool',
  'BinaryEquals',
  'IpAddress',
  'ArnEquals',
  'ArnLike',
]);
const NEGATED: Record<string, string> = {
  StringNotEquals: 'StringEquals',
  StringNotEqualsIgnoreCase: 'StringEqualsIgnoreCase',
  StringNotLike: 'StringLike',
  NumericNotEquals: 'NumericEquals',
  DateNotEquals: 'DateEquals',
  NotIpAddress: 'IpAddress',
  ArnNotEquals: 'ArnEquals',
  ArnNotLike: 'ArnLike',
};

interface Operator {
  qualifier: 'ForAnyValue' | 'ForAllValues' | null;
  /** The positive operator, or 'Null'. */
  base: string;
  negated: boolean;
  ifExists: boolean;
}

function parseOperator(name: string): Operator | null {
  let rest = name;
  let qualifier: Operator['qualifier'] = null;
  const q = /^(ForAnyValue|ForAllValues):(.*)$/.exec(rest);
  if (q) {
    qualifier = q[1] as Operator['qualifier'];
    rest = q[2]!;
  }
  if (rest === 'Null') return qualifier ? null : { qualifier, base: 'Null', negated: false, ifExists: false };
  const ifExists = rest.endsWith('IfExists');
  if (ifExists) rest = rest.slice(0, -'IfExists'.length);
  if (POSITIVE.has(rest)) return { qualifier, base: rest, negated: false, ifExists };
  if (Object.hasOwn(NEGATED, rest)) return { qualifier, base: NEGATED[rest]!, negated: true, ifExists };
  return null;
}

export function isConditionOperator(name: string): boolean {
  return parseOperator(name) !== null;
}

/**
 * `*` any run, `?` one character, the rest literal; anchored. Compiled once and matched in one
 * left-to-right pass (glob.ts): no pattern a policy's author writes can make a request's key cost
 * pattern x key steps, let alone backtrack. `meter` counts the steps.
 */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false, meter?: MatchMeter): boolean {
  return ignoreCase ? glob(pattern.toLowerCase()).matches(value.toLowerCase(), meter) : glob(pattern).matches(value, meter);
}

function number(s: string): number | null {
  return /^\s*-?\d+(\.\d+)?\s*$/.test(s) ? Number(s) : null;
}

function date(s: string): number | null {
  if (/^\d+$/.test(s)) return Number(s) * 1000; // epoch seconds
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

/** An IPv4 or IPv6 address as a bigint with its bit width, or null. */
function ipBits(address: string): { bits: bigint; width: number } | null {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) {
    const parts = address.split('.').map(Number);
    if (parts.some((p) => p > 255)) return null;
    return { bits: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n), width: 32 };
  }
  if (!/^[0-9a-fA-F:]+$/.test(address) || !address.includes(':')) return null;
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 1 && missing !== 0) || missing < 0) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  return { bits: all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n), width: 128 };
}

function inCidr(value: string, cidr: string): boolean {
  const [net, lenText] = cidr.split('/');
  const a = ipBits(value.trim());
  const n = ipBits(net!.trim());
  if (!a || !n || a.width !== n.width) return false;
  const len = lenText === undefined ? n.width : Number(lenText);
  if (!Number.isInteger(len) || len < 0 || len > n.width) return false;
  const shift = BigInt(n.width - len);
  return a.bits >> shift === n.bits >> shift;
}

function compare(base: string, value: string, wanted: string, meter: MatchMeter | undefined): boolean {
  switch (base) {
    case 'StringEquals':
      return value === wanted;
    case 'StringEqualsIgnoreCase':
      return value.toLowerCase() === wanted.toLowerCase();
    case 'StringLike':
    case 'ArnLike':
    case 'ArnEquals':
      return wildcardMatch(wanted, value, false, meter);
    case 'Bool':
      return value.toLowerCase() === wanted.toLowerCase();
    case 'BinaryEquals':
      return value === wanted;
    case 'IpAddress':
      return inCidr(value, wanted);
  }
  const numeric = base.startsWith('Numeric');
  const a = numeric ? number(value) : date(value);
  const b = numeric ? number(wanted) : date(wanted);
  if (a === null || b === null) return false;
  switch (base.replace(/^(Numeric|Date)/, '')) {
    case 'Equals':
      return a === b;
    case 'LessThan':
      return a < b;
    case 'LessThanEquals':
      return a <= b;
    case 'GreaterThan':
      return a > b;
    case 'GreaterThanEquals':
      return a >= b;
  }
  return false;
}

/** The request's values of a condition key (lower-case key names), or undefined when absent. */
export type ConditionContext = (key: string) => readonly string[] | undefined;

function keyHolds(op: Operator, present: readonly string[] | undefined, wanted: readonly string[], meter: MatchMeter | undefined): boolean {
  const absent = present === undefined || present.length === 0;
  if (op.base === 'Null') return wanted.some((w) => (w.toLowerCase() === 'true') === absent);
  if (absent) return op.ifExists || op.qualifier === 'ForAllValues' || (op.qualifier === null && op.negated);
  const matchesSome = (v: string) => wanted.some((w) => compare(op.base, v, w, meter));
  const ok = (v: string) => (op.negated ? !matchesSome(v) : matchesSome(v));
  if (op.qualifier === 'ForAllValues') return present.every(ok);
  if (op.qualifier === 'ForAnyValue') return present.some(ok);
  return op.negated ? !present.some(matchesSome) : present.some(matchesSome);
}

/** Whether every operator and key of `block` holds for the request. */
export function conditionsHold(
  block: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>,
  context: ConditionContext,
  meter?: MatchMeter,
): boolean {
  for (const [name, keys] of Object.entries(block)) {
    const op = parseOperator(name);
    if (!op) return false; // parsing refuses these; never reached for a stored policy
    for (const [key, wanted] of Object.entries(keys)) {
      if (!keyHolds(op, context(key.toLowerCase()), wanted, meter)) return false;
    }
  }
  return true;
}

/** The condition keys `block` names (lower-case). */
export function conditionKeys(block: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>): string[] {
  return Object.values(block).flatMap((keys) => Object.keys(keys).map((k) => k.toLowerCase()));
}
