import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import {
  freePort,
  natsCredsFile,
  repoRoot,
  startGatewayProcess,
  testStack,
  type GatewayProcess,
} from '@platform/testkit';

const stack = testStack();
const extra: GatewayProcess[] = [];
afterAll(async () => {
  await Promise.all(extra.map((g) => g.stop()));
});

/** A GET with a Host header of our choosing (fetch does not let a caller set Host). */
function getWithHost(url: string, host: string): Promise<{ status: number; contentType: string; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers: { host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          body: text ? JSON.parse(text) : undefined,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Host header and the public base URL', () => {
  test('when the gateway starts with NODE_ENV=production and neither PUBLIC_BASE_URL nor ALLOWED_HOSTS, then it refuses to start and says why', async () => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...stack.env,
      NATS_CREDS: natsCredsFile('gateway'),
      NODE_ENV: 'production',
      GATEWAY_PORT: String(await freePort()),
      ANALYTICS_PORT: String(await freePort()),
      SERVICE_NAME: 'gateway',
    };
    delete env.PUBLIC_BASE_URL;
    delete env.ALLOWED_HOSTS;
    const child = spawn(process.execPath, [join(repoRoot, 'services', 'gateway', 'dist', 'main.js')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).not.toBe(0);
    expect(output).toMatch(/PUBLIC_BASE_URL: required when NODE_ENV=production/);
  });

  test('when ALLOWED_HOSTS is set, then a request naming another Host gets 400 problem+json and a listed host is served', async () => {
    const gw = await startGatewayProcess(
      stack.env,
      { NODE_ENV: 'production', PUBLIC_BASE_URL: '', ALLOWED_HOSTS: '127.0.0.1, api.example.com' },
      'gateway-hosts',
    );
    extra.push(gw);
    const forged = await getWithHost(`${gw.url}/ping`, 'evil.example.net');
    expect(forged.status).toBe(400);
    expect(forged.contentType).toMatch(/application\/problem\+json/);
    expect(forged.body).toMatchObject({
      status: 400,
      code: 'bad_request',
      detail: 'This gateway does not answer for that Host',
    });
    expect((await getWithHost(`${gw.url}/ping`, 'api.example.com')).status).toBe(200);
    expect((await getWithHost(`${gw.url}/ping`, `127.0.0.1:${new URL(gw.url).port}`)).status).toBe(200);
  });
});
