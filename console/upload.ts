/**
 * Uploads: one row per file with a progress bar. Files up to MULTIPART_FROM go in one PUT; larger
 * ones as a multipart upload of PART_SIZE parts, PARALLEL_PARTS at a time. A PUT (the object's, or
 * each part on its own) is sent again when it failed in a way a retry can mend (the network, a 5xx
 * such as 503 SlowDown, a timeout), after a growing pause as the AWS SDKs do; a refusal (403, 404
 * NoSuchUpload, 400) fails at once. A multipart upload may be paused (its parts in flight are dropped, the parts
 * stored stay), resumed, or cancelled (AbortMultipartUpload: nothing is left behind). Its upload id,
 * bucket, key and the file's name, size and date are kept in localStorage (no secret: every request
 * on it is still signed) so that after a reload the user picks the same file again and only the
 * missing parts are sent (ListParts says which are stored). They are offered again only to the key
 * that started them.
 * The panel lives outside the views, so uploads go on while the user browses.
 */
import { h, fill } from './dom.ts';
import { bytes, errorText } from './format.ts';
import { S3RequestError } from './s3.ts';
import { session, type Session } from './session.ts';

const MiB = 1024 * 1024;
export const MULTIPART_FROM = 16 * MiB;
const PART_SIZE = 8 * MiB;
const PARALLEL_PARTS = 3;
/** Attempts at a PUT (an object's or a part's) when a retry can help. */
const ATTEMPTS = 3;
/** The pause before a second attempt; each later one waits twice the one before (the AWS SDKs' standard mode: 1 s base, jittered). */
const RETRY_PAUSE_MS = 1000;
/** Files sent at once; the others wait their turn (a drop of a thousand files opens three uploads, not a thousand). */
const PARALLEL_FILES = 3;
const STORED = 'shardgate.console.uploads';

interface Resumable {
  /** Whose upload: after a reload it is offered to that key only. */
  accessKeyId: string;
  bucket: string;
  key: string;
  uploadId: string;
  name: string;
  size: number;
  lastModified: number;
  partSize: number;
}

type State = 'queued' | 'uploading' | 'paused' | 'done' | 'failed' | 'cancelled' | 'interrupted';

interface Job {
  bucket: string;
  key: string;
  file: File | null;
  size: number;
  sent: number;
  state: State;
  message: string;
  resumable?: Resumable;
  controller: AbortController;
  row: HTMLElement;
}

function stored(): Resumable[] {
  try {
    const v = JSON.parse(localStorage.getItem(STORED) ?? '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

function store(list: Resumable[]): void {
  if (list.length) localStorage.setItem(STORED, JSON.stringify(list));
  else localStorage.removeItem(STORED);
}

const keep = (r: Resumable) => store([...stored().filter((x) => x.uploadId !== r.uploadId), r]);
const forget = (uploadId: string) => store(stored().filter((x) => x.uploadId !== uploadId));

export class Uploads {
  readonly panel = h('section', { className: 'uploads', 'aria-labelledby': 'uploads-title', hidden: true });
  private readonly list = h('ul', { className: 'upload-list' });
  private readonly jobs: Job[] = [];
  /** Called when an upload ends stored (the listing may show it). */
  onStored: (bucket: string, key: string) => void = () => {};

  constructor(private readonly session: () => Session | null) {
    fill(
      this.panel,
      h(
        'div',
        { className: 'panel-head' },
        h('h2', { id: 'uploads-title' }, 'Uploads'),
        h('button', { type: 'button', onclick: () => this.clearFinished() }, 'Clear finished'),
      ),
      this.list,
    );
  }

  /** After a sign-in: offers this key's uploads that a reload interrupted (once each). */
  restore(accessKeyId: string): void {
    for (const r of stored()) if (r.accessKeyId === accessKeyId && !this.jobs.some((j) => j.resumable?.uploadId === r.uploadId)) this.addInterrupted(r);
  }

  /** Uploads `files` under `prefix` of `bucket`, PARALLEL_FILES at a time. */
  add(bucket: string, prefix: string, files: Iterable<File>): void {
    for (const file of files) {
      const job = this.newJob(bucket, prefix + file.name, file, file.size);
      job.state = 'queued';
      this.draw(job);
    }
    this.pump();
  }

  /** Starts queued uploads while fewer than PARALLEL_FILES are sending. */
  private pump(): void {
    for (const job of this.jobs) {
      if (this.jobs.filter((j) => j.state === 'uploading').length >= PARALLEL_FILES) return;
      if (job.state === 'queued') void this.run(job);
    }
  }

  /**
   * The user signs out: the key is gone, so nothing more can be sent. Uploads in flight stop; a
   * multipart upload's stored parts and its record stay (the same key resumes it after signing in
   * again, picking the file), a single PUT is simply not stored.
   */
  stopAll(): void {
    for (const job of this.jobs) if (job.state === 'uploading') job.controller.abort();
    // The next key to sign in here sees none of these rows; a stored upload is offered again to its own key.
    for (const job of this.jobs) job.state = 'cancelled';
    this.clearFinished();
  }

  /** Drops the rows of uploads that ended (stored or cancelled); the panel hides when none is left. */
  clearFinished(): void {
    for (let i = this.jobs.length - 1; i >= 0; i--) {
      const job = this.jobs[i]!;
      if (job.state === 'done' || job.state === 'cancelled') {
        job.row.remove();
        this.jobs.splice(i, 1);
      }
    }
    this.panel.hidden = this.jobs.length === 0;
  }

  private newJob(bucket: string, key: string, file: File | null, size: number): Job {
    const job: Job = { bucket, key, file, size, sent: 0, state: 'uploading', message: '', controller: new AbortController(), row: h('li') };
    this.jobs.push(job);
    this.list.append(job.row);
    this.panel.hidden = false;
    this.draw(job);
    return job;
  }

  private addInterrupted(r: Resumable): void {
    const job = this.newJob(r.bucket, r.key, null, r.size);
    job.resumable = r;
    job.state = 'interrupted';
    job.message = 'interrupted by a reload: pick the same file to resume';
    this.draw(job);
  }

  private draw(job: Job): void {
    const label = `${job.bucket}/${job.key}`;
    const buttons: HTMLElement[] = [];
    const button = (text: string, action: () => void) => h('button', { type: 'button', 'aria-label': `${text} ${label}`, onclick: action }, text);
    if (job.state === 'uploading' && job.resumable) buttons.push(button('Pause', () => this.pause(job)));
    if (job.state === 'paused' || (job.state === 'failed' && job.resumable && job.file)) buttons.push(button('Resume', () => void this.run(job)));
    if (job.state === 'interrupted') {
      const picker = h('input', {
        type: 'file',
        className: 'visually-hidden',
        'aria-label': `Pick the file to resume ${label}`,
        onchange: () => {
          const f = picker.files?.[0];
          const r = job.resumable!;
          if (!f) return;
          if (f.name !== r.name || f.size !== r.size || f.lastModified !== r.lastModified) {
            job.message = `that is not the same file (${r.name}, ${bytes(r.size)})`;
            return this.draw(job);
          }
          job.file = f;
          void this.run(job);
        },
      });
      buttons.push(
        picker,
        button('Resume…', () => picker.click()),
      );
    }
    if (job.state === 'queued' || job.state === 'uploading' || job.state === 'paused' || job.state === 'interrupted' || job.state === 'failed')
      buttons.push(button(job.state === 'failed' ? 'Discard' : 'Cancel', () => void this.cancel(job)));
    const done = job.state === 'done';
    fill(
      job.row,
      h('span', { className: 'upload-name' }, label),
      h('progress', { max: Math.max(job.size, 1), value: done ? Math.max(job.size, 1) : job.sent, 'aria-label': `Upload of ${label}` }),
      h(
        'span',
        { className: `upload-state ${job.state}`, 'data-state': job.state },
        `${bytes(done ? job.size : job.sent)} of ${bytes(job.size)} · ${job.state}`,
      ),
      job.message && h('span', { className: job.state === 'failed' ? 'error' : 'hint' }, job.message),
      buttons,
    );
    job.row.dataset.state = job.state;
  }

  private progress(job: Job, sent: number): void {
    job.sent = sent;
    const bar = job.row.querySelector('progress');
    const text = job.row.querySelector('.upload-state');
    if (bar) bar.value = sent;
    if (text) text.textContent = `${bytes(sent)} of ${bytes(job.size)} · ${job.state}`;
  }

  private pause(job: Job): void {
    job.state = 'paused';
    job.controller.abort();
    this.draw(job);
  }

  private async cancel(job: Job): Promise<void> {
    const was = job.state;
    job.state = 'cancelled';
    job.controller.abort();
    this.draw(job);
    const s = this.session();
    if (job.resumable && s) {
      try {
        await s.s3.abortMultipart(job.bucket, job.key, job.resumable.uploadId);
      } catch (err) {
        if (was !== 'failed') job.message = `the multipart upload could not be aborted: ${errorText(err)}`;
      }
      forget(job.resumable.uploadId);
      this.draw(job);
    }
  }

  private async run(job: Job): Promise<void> {
    const s = this.session();
    if (!s || !job.file || job.state === 'cancelled') return;
    job.state = 'uploading';
    job.message = '';
    job.controller = new AbortController();
    this.draw(job);
    const signal = job.controller.signal;
    try {
      if (!job.resumable && job.file.size < MULTIPART_FROM) {
        const file = job.file;
        await withRetries(
          () =>
            s.s3.upload(job.bucket, job.key, file, { contentType: file.type || 'application/octet-stream', signal, onProgress: (n) => this.progress(job, n) }),
          signal,
          () => this.progress(job, 0),
        );
      } else {
        await this.multipart(s, job, signal);
      }
      job.state = 'done';
      this.draw(job);
      this.onStored(job.bucket, job.key);
    } catch (err) {
      if (job.state !== 'uploading') return; // paused or cancelled: drawn by them
      job.state = 'failed';
      job.message = errorText(err);
      this.draw(job);
    } finally {
      this.pump();
    }
  }

  private async multipart(s: Session, job: Job, signal: AbortSignal): Promise<void> {
    const file = job.file!;
    if (!job.resumable) {
      const partSize = Math.max(PART_SIZE, Math.ceil(file.size / 10_000 / MiB) * MiB);
      const uploadId = await s.s3.createMultipart(job.bucket, job.key, file.type || 'application/octet-stream');
      job.resumable = {
        accessKeyId: s.accessKeyId,
        bucket: job.bucket,
        key: job.key,
        uploadId,
        name: file.name,
        size: file.size,
        lastModified: file.lastModified,
        partSize,
      };
      keep(job.resumable);
      this.draw(job);
    }
    const r = job.resumable;
    const count = Math.max(1, Math.ceil(file.size / r.partSize));
    const etags = new Map<number, string>();
    for (const p of await s.s3.listParts(job.bucket, job.key, r.uploadId)) {
      const expected = Math.min(r.partSize, file.size - (p.partNumber - 1) * r.partSize);
      if (p.partNumber <= count && p.size === expected) etags.set(p.partNumber, p.etag);
    }
    const partBytes = (n: number) => Math.min(r.partSize, file.size - (n - 1) * r.partSize);
    let stored = [...etags.keys()].reduce((sum, n) => sum + partBytes(n), 0);
    const inFlight = new Map<number, number>();
    const report = () => this.progress(job, stored + [...inFlight.values()].reduce((a, b) => a + b, 0));
    report();
    const todo = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !etags.has(n));
    const worker = async () => {
      for (let n = todo.shift(); n !== undefined; n = todo.shift()) {
        const part = n;
        const blob = file.slice((part - 1) * r.partSize, (part - 1) * r.partSize + partBytes(part));
        const etag = await withRetries(
          () =>
            s.s3.upload(job.bucket, job.key, blob, {
              query: { partNumber: String(part), uploadId: r.uploadId },
              signal,
              onProgress: (sent) => {
                inFlight.set(part, sent);
                report();
              },
            }),
          signal,
          () => {
            inFlight.delete(part);
            report();
          },
        );
        etags.set(part, etag);
        inFlight.delete(part);
        stored += partBytes(part);
        report();
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL_PARTS, todo.length) }, worker));
    } catch (err) {
      job.controller.abort(); // the other parts in flight stop too; the stored ones stay for a retry
      throw err;
    }
    const parts = [...etags].sort((a, b) => a[0] - b[0]).map(([partNumber, etag]) => ({ partNumber, etag }));
    await s.s3.completeMultipart(job.bucket, job.key, r.uploadId, parts);
    forget(r.uploadId);
  }
}

/**
 * Runs `send` until it succeeds, fails in a way a retry cannot mend, or ATTEMPTS are spent,
 * pausing between attempts; `failed` runs after each failed attempt (its progress is undone).
 */
async function withRetries<T>(send: () => Promise<T>, signal: AbortSignal, failed: () => void): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      failed();
      if (signal.aborted || attempt >= ATTEMPTS || !retryable(err)) throw err;
      await pause(RETRY_PAUSE_MS * 2 ** (attempt - 1) * (0.5 + Math.random() / 2), signal);
    }
  }
}

/** Whether sending a PUT again may succeed: the network failed, the gateway was busy or failed, or the request timed out. */
function retryable(err: unknown): boolean {
  if (!(err instanceof S3RequestError)) return false;
  return err.status === 0 || err.status >= 500 || err.status === 429 || err.code === 'RequestTimeout';
}

/** Waits `ms`, or rejects as soon as `signal` aborts (a pause or cancel does not wait out a retry's pause). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      reject(new DOMException('cancelled', 'AbortError'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve();
    }, ms);
    if (signal.aborted) done();
    else signal.addEventListener('abort', done, { once: true });
  });
}

/** The console's one upload panel (main.ts places it beside every view). */
export const uploads = new Uploads(session);
