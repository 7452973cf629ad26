// The fake's HTTP plumbing: request bodies in either of the Web API's encodings, JSON answers, HTML pages.
import type http from 'node:http';
import { randomBytes } from 'node:crypto';

export const randomUpper = (n: number) => randomBytes(n).toString('hex').toUpperCase().slice(0, n);

/** A form-encoded or JSON body as flat string parameters (non-string JSON values as their JSON text). */
export async function readBody(req: http.IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (!raw) return {};
  const type = String(req.headers['content-type'] ?? '');
  if (type.includes('application/json')) {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    return Object.fromEntries(
      Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    );
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

export function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
}

export const html = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title><style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}code,pre{background:#f3f3f3;padding:.1rem .3rem}pre{padding:.6rem;white-space:pre-wrap;word-break:break-all}a.button,button{display:inline-block;margin:.2rem .4rem .2rem 0;padding:.4rem .8rem;border:1px solid #444;border-radius:4px;background:#fff;color:#000;text-decoration:none;cursor:pointer}</style></head><body><p><small>Local fake of the chat product (development only)</small></p><h1>${html(title)}</h1>${body}</body></html>`;

export function sendPage(res: http.ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(page(title, body));
}
