/**
 * A progress bar for long work (scrub, repair, collect, rescue, verify) on stderr, redrawn in
 * place at most ten times a second; only when stderr is a terminal and the output is not JSON,
 * so logs and pipes get no control characters.
 */
export class Progress {
  private last = 0;
  private drawn = false;

  constructor(
    private readonly label: string,
    private readonly enabled: boolean = Boolean(process.stderr.isTTY),
  ) {}

  update(done: number, total: number, detail = ''): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.last < 100 && done < total) return;
    this.last = now;
    const ratio = total > 0 ? Math.min(1, done / total) : 0;
    const width = 30;
    const filled = Math.round(ratio * width);
    process.stderr.write(`\r${this.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${detail}\x1b[K`);
    this.drawn = true;
  }

  end(): void {
    if (this.drawn) process.stderr.write('\n');
    this.drawn = false;
  }
}
