/**
 * One bucket's S3 requests from clients: how many, request body bytes, response body bytes (egress
 * to clients). Counted by each isolate's meter (ops/meter.ts), kept in the shared record's totals,
 * read by the usage report (upkeep/bucket-usage.ts) and the status (ops/status.ts).
 */
export interface ClientTraffic {
  requests: number;
  bytesIn: number;
  bytesOut: number;
}
