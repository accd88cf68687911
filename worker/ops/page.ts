/** Placeholder: the status page. */
export function statusPage(nonce: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>shardgate</title><style nonce="${nonce}"></style></head><body><script nonce="${nonce}"></script></body></html>`;
}
