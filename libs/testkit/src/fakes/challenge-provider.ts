import { createHash, createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ProviderFailure = 'error' | 'rate-limited' | 'garbage';

export interface FakeChallengeProvider {
  url: string;
  /** Requests received: method, path, headers, parsed JSON body. */
  received: Array<{ method: string; path: string; headers: http.IncomingHttpHeaders; body: unknown }>;
  /** Answer every following request with this failure (500, 429 or a body that is not JSON) until `recover()`. */
  fail(kind: ProviderFailure): void;
  recover(): void;
  close(): Promise<void>;
}

/**
 * A local stand-in for a hosted ALTCHA Sentinel-style challenge provider:
 * GET/POST /v1/challenge issue an ALTCHA challenge (small difficulty), POST /v1/verify checks a solution and returns
 * `{verified, payload}` where payload is a signed verification, POST /v1/verify/signature checks such a payload.
 */
export async function startFakeChallengeProvider(): Promise<FakeChallengeProvider> {
  const key = randomBytes(32);
  const hmac = (v: string) => createHmac('sha256', key).update(v).digest('hex');
  const received: FakeChallengeProvider['received'] = [];
  let failure: ProviderFailure | undefined;

  const challenge = () => {
    const salt = `${randomBytes(12).toString('hex')}?expires=${Math.floor(Date.now() / 1000) + 300}&`;
    const number = Math.floor(Math.random() * 1000);
    const c = createHash('sha256')
      .update(salt + number)
      .digest('hex');
    return { algorithm: 'SHA-256', challenge: c, maxnumber: 1000, salt, signature: hmac(c) };
  };
  const verifySolution = (s: any) =>
    typeof s === 'object' &&
    s !== null &&
    typeof s.salt === 'string' &&
    typeof s.challenge === 'string' &&
    createHash('sha256')
      .update(s.salt + s.number)
      .digest('hex') === s.challenge &&
    hmac(s.challenge) === s.signature;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      const send = (status: number, json: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      if (failure === 'error') return send(500, { error: 'internal' });
      if (failure === 'rate-limited') return send(429, { error: 'too many requests' });
      if (failure === 'garbage') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>oops</html>');
      const path = (req.url ?? '').split('?')[0];
      if (path === '/v1/challenge') return send(200, challenge());
      if (path === '/v1/verify' && req.method === 'POST') {
        const solution =
          typeof (body as any)?.payload === 'string'
            ? JSON.parse(Buffer.from((body as any).payload, 'base64').toString('utf8'))
            : body;
        if (!verifySolution(solution)) return send(200, { verified: false });
        const verification = Buffer.from(JSON.stringify({ verified: true, at: Date.now() })).toString('base64url');
        return send(200, { verified: true, payload: `${verification}.${hmac(verification)}` });
      }
      if (path === '/v1/verify/signature' && req.method === 'POST') {
        const payload = String((body as any)?.payload ?? '');
        const [v, sig] = payload.split('.');
        return send(200, { verified: Boolean(v && sig && hmac(v) === sig) });
      }
      send(404, { error: 'not found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    fail(kind) {
      failure = kind;
    },
    recover() {
      failure = undefined;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
