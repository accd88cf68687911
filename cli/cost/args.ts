/**
 * What `shardgate cost` takes: providers (presets of worker/config/price-list.ts by name or short alias,
 * or `name=storage:egress:put:get` for one of your own), the schemes to compare, the workload,
 * and where the chart goes. A bad value is an error that says what is expected.
 */
import { PRESET_NAMES, PRICE_PRESETS, presetPrices, type PresetName } from '../../worker/config/price-list.ts';
import { parseScheme, STANDARD_SCHEMES, type Provider, type Scheme, type Workload } from './model.ts';
import type { TransitionPlan } from './lifecycle.ts';

export interface CostArgs {
  providers: Provider[];
  schemes: Scheme[];
  workload: Workload;
  /** --transition: the hot class (the one scheme of --policies) against moving to a cold one (cli/cost/lifecycle.ts). */
  transition: TransitionPlan | null;
  /** Where the SVG chart goes; null: none. */
  svg: string | null;
  json: boolean;
}

export const ALIASES: Record<string, PresetName> = {
  r2: 'cloudflare-r2',
  'r2-ia': 'cloudflare-r2-ia',
  aws: 'aws-s3-standard',
  s3: 'aws-s3-standard',
  b2: 'backblaze-b2',
  gcs: 'gcs-standard',
  minio: 'self-hosted',
};

/** Providers at most: the average over extra-shard layouts enumerates subsets of them. */
const MAX_PROVIDERS = 16;

export const DEFAULTS = {
  providers: 'r2,aws,b2',
  storedGB: 1000,
  readGBPerMonth: 100,
  objects: 100_000,
  putsPerMonth: 0,
  svg: 'shardgate-cost.svg',
  hotScheme: '4+2',
  months: 12,
};

export function parseCostArgs(argv: string[]): CostArgs {
  const flags = new Map<string, string>();
  let json = false,
    svg: string | null = DEFAULTS.svg;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') {
      json = true;
      continue;
    }
    if (a === '--no-svg') {
      svg = null;
      continue;
    }
    const m = /^--(providers|policies|stored|read|objects|puts|gets|svg|transition|after|cold-providers|months)(?:=(.*))?$/.exec(a);
    if (!m) throw new Error(`unknown argument '${a}'`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value`);
    flags.set(m[1]!, value);
  }
  if (flags.has('svg')) svg = flags.get('svg')!;
  const providers = (flags.get('providers') ?? DEFAULTS.providers).split(',').filter(Boolean).map(parseProvider);
  if (providers.length === 0) throw new Error('--providers needs at least one provider');
  if (providers.length > MAX_PROVIDERS) throw new Error(`--providers: at most ${MAX_PROVIDERS}`);
  const schemes = flags.has('policies')
    ? flags
        .get('policies')!
        .split(',')
        .filter(Boolean)
        .map((t) => parseScheme(t) ?? fail(`--policies: '${t}' is not k+m (4+2) or replicate-N`))
    : STANDARD_SCHEMES;
  const storedGB = number(flags.get('stored'), '--stored (GB stored)', DEFAULTS.storedGB);
  const readGBPerMonth = number(flags.get('read'), '--read (GB read per month)', DEFAULTS.readGBPerMonth);
  const objects = number(flags.get('objects'), '--objects (objects stored)', DEFAULTS.objects);
  const putsPerMonth = number(flags.get('puts'), '--puts (object writes per month)', DEFAULTS.putsPerMonth);
  // Object reads: given, or the read volume in objects of the average size.
  const getsPerMonth = number(
    flags.get('gets'),
    '--gets (object reads per month)',
    storedGB > 0 && objects > 0 ? Math.round((readGBPerMonth * objects) / storedGB) : 0,
  );
  const workload = { storedGB, readGBPerMonth, objects, putsPerMonth, getsPerMonth };
  const transitionOnly = ['after', 'cold-providers', 'months'].filter((f) => flags.has(f));
  if (!flags.has('transition')) {
    if (transitionOnly.length) throw new Error(`--${transitionOnly[0]} goes with --transition SCHEME`);
    return { providers, schemes, workload, transition: null, svg, json };
  }
  // One hot class against one cold class: --policies names the hot one (default 4+2).
  const hot = flags.has('policies') ? schemes : [parseScheme(DEFAULTS.hotScheme)!];
  if (hot.length !== 1) throw new Error('--transition compares one class with another: --policies names one scheme (the hot class)');
  const coldScheme = parseScheme(flags.get('transition')!) ?? fail(`--transition: '${flags.get('transition')}' is not k+m (12+4) or replicate-N`);
  if (!flags.has('after')) throw new Error('--transition needs --after DAYS (when the lifecycle rule moves the data)');
  const afterDays = number(flags.get('after'), '--after (days)', 0);
  if (!Number.isInteger(afterDays)) throw new Error('--after (days) must be a whole number of days');
  const months = number(flags.get('months'), '--months (the horizon)', DEFAULTS.months);
  if (!Number.isInteger(months) || months < 1) throw new Error('--months (the horizon) must be a whole number of months, at least 1');
  const coldProviders = flags.has('cold-providers') ? flags.get('cold-providers')!.split(',').filter(Boolean).map(parseProvider) : providers;
  if (coldProviders.length === 0) throw new Error('--cold-providers needs at least one provider');
  if (coldProviders.length > MAX_PROVIDERS) throw new Error(`--cold-providers: at most ${MAX_PROVIDERS}`);
  return {
    providers,
    schemes: hot,
    workload,
    transition: { hot: { scheme: hot[0]!, providers }, cold: { scheme: coldScheme, providers: coldProviders }, afterDays, months },
    svg,
    json,
  };
}

function parseProvider(text: string): Provider {
  const own = /^([\w.-]+)=([\d.]+):([\d.]+):([\d.]+):([\d.]+)$/.exec(text);
  if (own) {
    const [storagePerGBMonth, egressPerGB, putPer1000, getPer1000] = own.slice(2).map(Number) as [number, number, number, number];
    return { name: own[1]!, prices: { storagePerGBMonth, egressPerGB, putPer1000, getPer1000 } };
  }
  const preset = (ALIASES[text] ?? text) as PresetName;
  if (!(preset in PRICE_PRESETS)) {
    fail(
      `--providers: unknown provider '${text}': one of ${[...Object.keys(ALIASES), ...PRESET_NAMES].join(', ')}, or name=storage:egress:put:get (dollars per GB-month, per GB, per 1000 PUTs, per 1000 GETs)`,
    );
  }
  return { name: text, prices: presetPrices(preset) };
}

function number(raw: string | undefined, what: string, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw)) fail(`${what} must be a number >= 0, not '${raw}'`);
  return Number(raw);
}

function fail(message: string): never {
  throw new Error(message);
}
