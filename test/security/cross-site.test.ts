import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { aProject, aTenantToken, http as request, projectPath, startGatewayProcess } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { useBrowser } from '../support/browser';
import { createDestination } from '../support/webhooks';

/**
 * Cross-site writes with the session cookie (issue 54, finding 3), in Chromium: a page of another origin of the same
 * site (another port of 127.0.0.1: the browser sends the cookie along) cannot make a signed-in user's browser change
 * anything; the gateway's own pages still can.
 */

const browser = useBrowser();
let attacker: http.Server;
let attackerUrl = '';

beforeAll(async () => {
  // The other origin: an empty page on another port.
  attacker = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>'),
  );
  await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
});
afterAll(async () => {
  if (attacker) await new Promise((r) => attacker.close(r));
});

/** A browser page on the gateway's origin, signed in the way a browser is: the session call's Set-Cookie. */
async function signedInPage(token: string): Promise<Page> {
  const page = await (await browser().newContext()).newPage();
  await page.goto(`${stack.gatewayUrl}/healthz`);
  const status = await page.evaluate(
    async (bearer) =>
      (await fetch('/manage/auth/session', { method: 'POST', headers: { authorization: `Bearer ${bearer}` } })).status,
    token,
  );
  expect(status).toBe(201);
  return page;
}

/** The status of a body-less POST the page sends to `url` with the browser's cookies, as the network saw it. */
async function postFrom(page: Page, url: string): Promise<number> {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url() === url && r.request().method() === 'POST'),
    page.evaluate(
      (u) =>
        fetch(u, { method: 'POST', mode: 'no-cors', credentials: 'include' }).then(
          () => undefined,
          () => undefined,
        ),
      url,
    ),
  ]);
  return response.status();
}

describe('cross-site writes with the session cookie', () => {
  test("when a page of another origin makes a signed-in browser post a body-less change, then it is refused with 403 and nothing changes; from the gateway's own origin it works", async () => {
    const p = aProject();
    const dest = await createDestination(admin, p, {
      url: 'https://hooks.example.com/csrf',
      eventTypes: ['event.created'],
    });
    const readUpdatedAt = async () =>
      (await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}`)).body.data.updatedAt as string;
    const rotateUrl = `${stack.gatewayUrl}${projectPath(p)}/webhook-destinations/${dest.id}/rotate-secret`;
    const page = await signedInPage(await aTenantToken(admin, p.tenantId, 'admin'));

    const before = await readUpdatedAt();
    await page.goto(attackerUrl);
    expect(await postFrom(page, rotateUrl)).toBe(403);
    expect(await readUpdatedAt()).toBe(before);

    await page.goto(`${stack.gatewayUrl}/healthz`);
    expect(await postFrom(page, rotateUrl)).toBe(200);
    expect(await readUpdatedAt()).not.toBe(before);
    await page.context().close();
  });

  test('when a cookie-authenticated write says it comes from another origin, then it answers 403 problem+json; a bearer token from anywhere, and a cookie without browser headers, go on', async () => {
    const p = aProject();
    const token = await aTenantToken(admin, p.tenantId, 'admin');
    const session = await request('POST', `${stack.gatewayUrl}/manage/auth/session`, { token });
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
    const url = `${stack.gatewayUrl}${projectPath(p)}/webhook-destinations`;
    const json = { name: 'hook', url: 'https://hooks.example.com/x', eventTypes: ['event.created'] };

    const foreign: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'https://evil.example.com' },
      { origin: 'null' },
    ];
    for (const headers of foreign) {
      const res = await request('POST', url, { cookie, json, headers });
      expect(res.status).toBe(403);
      expect(res.contentType).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 403, code: 'forbidden', detail: expect.stringMatching(/Cross-origin/) });
    }
    expect((await admin.get(`${projectPath(p)}/webhook-destinations`)).body.data).toEqual([]);

    expect(
      (
        await request('POST', url, {
          token,
          json,
          headers: { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example.com' },
        })
      ).status,
    ).toBe(201);
    expect((await request('POST', url, { cookie, json, headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(
      201,
    );
    expect(
      (await request('POST', url, { cookie, json, headers: { origin: new URL(stack.gatewayUrl).origin } })).status,
    ).toBe(201);
    expect((await request('POST', url, { cookie, json })).status).toBe(201);
    // Reads are not writes.
    expect((await request('GET', url, { cookie, headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(200);
  });

  test('when the gateway is served over https, then the session cookie is Secure and SameSite=Lax', async () => {
    const gw = await startGatewayProcess(
      stack.env,
      { PUBLIC_BASE_URL: 'https://platform.example.com' },
      'gateway-https',
    );
    try {
      const res = await request('POST', `${gw.url}/manage/auth/session`, { token: stack.adminToken });
      expect(res.status).toBe(201);
      const setCookie = res.headers.get('set-cookie') ?? '';
      expect(setCookie).toMatch(/; Secure/);
      expect(setCookie).toMatch(/SameSite=Lax/);
      expect(setCookie).not.toMatch(/SameSite=None/);
    } finally {
      await gw.stop();
    }
  });
});
