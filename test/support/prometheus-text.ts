/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for the tests that
 * read /_shardgate/metrics on every machine. The official Python client (python3-prometheus-
 * client) stays the cross-check where it is installed (test/ops/helpers.ts; always in CI), but its
 * parser is lax by its own account ("successful parsing does not imply that the parsed text meets
 * the specification"), and the npm parsers are laxer still (parse-prometheus-text-format 1.1.1
 * accepts an unterminated label value and a value of "abc", and drops a histogram's labels), so
 * this one refuses what Prometheus' own (Go) parser refuses, as far as shardgate's output goes:
 * - every line a HELP, a TYPE, a comment, blank, or `name{label="value",...} value [timestamp]`;
 * - names and label names as the format defines them, label values quoted with only \\ \" \n
 *   escapes, no label twice, values Go's float syntax (NaN, +Inf, -Inf too);
 * - one HELP and one TYPE per family, before its samples; the samples of a family together and
 *   named as its type allows (a histogram's _bucket with `le`, _sum, _count); no series twice;
 * - a histogram's buckets cumulative, ending with le="+Inf" equal to its _count.
 *
 * The samples come out as the Python client gives them: a counter family's name without
 * `_total`, an untyped family's type "unknown" (OpenMetrics' word), each sample's own name.
 */

export interface ParsedSample {
  family: string;
  type: string;
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Inf|NaN)$/;
const TYPES = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];
const SUFFIXES: Record<string, string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  summary: ['', '_sum', '_count'],
  histogram: ['_bucket', '_sum', '_count'],
};

interface Family {
  name: string;
  type: string;
  /** Its TYPE line was seen (a second one is refused). */
  typed: boolean;
  help?: string;
  samples: ParsedSample[];
}

export function parsePrometheusText(text: string): ParsedSample[] {
  if (text.length && !text.endsWith('\n')) throw new Error('the text does not end with a newline');
  const families = new Map<string, Family>();
  const series = new Set<string>();
  let current: Family | undefined;
  const lines = text.split('\n').slice(0, -1);
  lines.forEach((line, i) => {
    const fail = (why: string): never => {
      throw new Error(`line ${i + 1}: ${why}: ${JSON.stringify(line)}`);
    };
    if (line.trim() === '') return;
    const meta = /^#\s*(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta;
      if (!METRIC_NAME.test(name!)) fail('invalid metric name');
      let family = families.get(name!);
      if (family && family !== current) fail('a family whose samples were already given');
      if (!family) {
        family = { name: name!, type: 'untyped', typed: false, samples: [] };
        families.set(name!, family);
      }
      current = family;
      if (kind === 'HELP') {
        if (family.help !== undefined) fail('a second HELP');
        if (/\\[^\\n]|\\$/.test(rest)) fail('an escape HELP does not allow');
        family.help = rest;
      } else {
        if (family.samples.length || family.typed) fail('TYPE after samples or twice');
        if (!TYPES.includes(rest)) fail('an unknown type');
        family.type = rest;
        family.typed = true;
      }
      return;
    }
    if (line.startsWith('#')) return;
    const sample = parseSampleLine(line, fail);
    const owner = current && SUFFIXES[current.type]!.some((s) => `${current!.name}${s}` === sample.name) ? current : undefined;
    if (!owner) {
      // A sample of no declared family is an untyped family of its own, as in the format.
      if (families.has(sample.name)) fail('a sample away from the rest of its family');
      current = { name: sample.name, type: 'untyped', typed: true, samples: [] };
      families.set(sample.name, current);
    }
    const family = owner ?? current!;
    if (family.type === 'histogram' && sample.name.endsWith('_bucket') && !('le' in sample.labels)) fail('a histogram bucket without le');
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (series.has(key)) fail('a series given twice');
    series.add(key);
    family.samples.push({ family: family.name, type: family.type, ...sample });
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return [...families.values()].flatMap((f) => {
    const name = f.type === 'counter' && f.name.endsWith('_total') ? f.name.slice(0, -6) : f.name;
    return f.samples.map((s) => ({ ...s, family: name, type: f.type === 'untyped' ? 'unknown' : f.type }));
  });
}

function parseSampleLine(line: string, fail: (why: string) => never): Omit<ParsedSample, 'family' | 'type'> {
  const head = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line) ?? fail('invalid metric name');
  const name = head[1]!;
  let at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === '{') {
    at++;
    while (line[at] !== '}') {
      const label = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"/.exec(line.slice(at)) ?? fail('invalid label');
      at += label[0].length;
      let value = '';
      for (;;) {
        const c = line[at++];
        if (c === undefined) fail('an unterminated label value');
        if (c === '"') break;
        if (c === '\\') {
          const e = line[at++];
          if (e === '\\') value += '\\';
          else if (e === '"') value += '"';
          else if (e === 'n') value += '\n';
          else fail('an escape a label value does not allow');
        } else value += c;
      }
      if (!LABEL_NAME.test(label[1]!) || label[1]!.startsWith('__')) fail('a reserved or invalid label name');
      if (label[1]! in labels) fail('a label given twice');
      labels[label[1]!] = value;
      const sep = /^\s*(,\s*)?/.exec(line.slice(at))!;
      at += sep[0].length;
      if (!sep[1] && line[at] !== '}') fail('labels not separated by commas');
    }
    at++;
  }
  const rest = line.slice(at);
  const fields = /^[ \t]+(\S+)(?:[ \t]+(-?\d+))?[ \t]*$/.exec(rest) ?? fail('not "value [timestamp]" after the name and labels');
  if (!FLOAT.test(fields[1]!)) fail('a value that is not a number');
  return { name, labels, value: Number(fields[1]!.replace(/^([+-]?)Inf$/, '$1Infinity')) };
}

function checkHistogram(f: Family): void {
  const groups = new Map<string, { buckets: { le: number; value: number }[]; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    if (!groups.has(key)) groups.set(key, { buckets: [] });
    const g = groups.get(key)!;
    if (s.name.endsWith('_bucket')) g.buckets.push({ le: Number(le!.replace(/^([+-]?)Inf$/, '$1Infinity')), value: s.value });
    else if (s.name.endsWith('_count')) g.count = s.value;
  }
  for (const [labels, g] of groups) {
    const where = `histogram ${f.name} ${labels}`;
    g.buckets.sort((a, b) => a.le - b.le);
    if (g.buckets.some((b) => Number.isNaN(b.le))) throw new Error(`${where}: a bucket whose le is not a number`);
    if (g.buckets.at(-1)?.le !== Infinity) throw new Error(`${where}: no le="+Inf" bucket`);
    g.buckets.forEach((b, i) => {
      if (i && b.value < g.buckets[i - 1]!.value) throw new Error(`${where}: buckets not cumulative at le=${b.le}`);
    });
    if (g.count !== g.buckets.at(-1)!.value) throw new Error(`${where}: _count ${g.count} is not the +Inf bucket's ${g.buckets.at(-1)!.value}`);
  }
}
