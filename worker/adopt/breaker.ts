/**
 * A circuit breaker in front of a source (issue 41): after `failures` calls in a row that got no
 * answer (down, past its timeout, refused credentials), the source is not asked for `openMs`:
 * reads of objects not yet adopted answer 503 SlowDown at once instead of each waiting out the
 * timeout. Then one call is let through (half open): an answer closes the breaker, a failure
 * opens it again. Per isolate, driven by the store's clock.
 */
export class SourceBreaker {
  private inRow = 0;
  private openUntil = 0;
  private trial = false;

  constructor(
    private readonly now: () => number,
    private readonly failures = 5,
    private readonly openMs = 10_000,
  ) {}

  /** Whether a call may go to the source now (a half-open trial counts as one). */
  allow(): boolean {
    if (this.inRow < this.failures) return true;
    if (this.now() < this.openUntil || this.trial) return false;
    this.trial = true;
    return true;
  }

  succeeded(): void {
    this.inRow = 0;
    this.trial = false;
  }

  failed(): void {
    this.inRow++;
    this.trial = false;
    if (this.inRow >= this.failures) this.openUntil = this.now() + this.openMs;
  }

  get open(): boolean {
    return this.inRow >= this.failures && this.now() < this.openUntil;
  }
}
