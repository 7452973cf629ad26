import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`, HMAC-SHA256 keyed by the base64 part of a `whsec_` secret;
 * `webhook-signature` lists `v1,<base64>` per secret, space-separated (two during a rotation's grace period).
 */
export const SECRET_PREFIX = 'whsec_';

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export function signatureHeader(id: string, timestampSeconds: number, body: string, secrets: string[]): string {
  return secrets
    .map((s) => `v1,${createHmac('sha256', keyOf(s)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers for one attempt (a fresh timestamp each time, the same id). */
export function signedHeaders(id: string, body: string, secrets: string[], now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(timestamp) };
  if (secrets.length) headers['webhook-signature'] = signatureHeader(id, timestamp, body, secrets);
  return headers;
}
