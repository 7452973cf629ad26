import { anApp, aProject, http, solveChallenge } from '@platform/testkit';
import { admin, stack } from '../support/stack';

const ORIGIN = 'https://app.example.com';

const get = (path: string, headers: Record<string, string> = { origin: ORIGIN }) =>
  http('GET', `${stack.gatewayUrl}${path}`, { headers });
const post = (path: string, json: unknown, headers: Record<string, string> = { origin: ORIGIN }) =>
  http('POST', `${stack.gatewayUrl}${path}`, { json, headers });

describe('challenge endpoints (local proof of work)', () => {
  test('when a challenge is fetched, solved and verified, then it verifies once; a second verification of the same solution is refused', async () => {
    const app = await anApp(admin, aProject());
    const res = await get(`/run/auth/challenge?appId=${app.id}&endpointClass=anonymous-session`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ algorithm: 'SHA-256', maxnumber: expect.any(Number) });
    expect(res.body.challenge).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.expiresAt).toBeGreaterThan(Date.now());
    const solution = solveChallenge(res.body);

    const first = await post(`/run/auth/challenge/verify?appId=${app.id}`, solution);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ verified: true });
    const again = await post(`/run/auth/challenge/verify?appId=${app.id}`, {
      payload: Buffer.from(JSON.stringify(solution)).toString('base64'),
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ verified: false, reason: 'already_used' });
  });

  test('when a solution is wrong, or was issued for another app, then it does not verify and stays unspent', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const other = await anApp(admin, p);
    const solution = solveChallenge((await get(`/run/auth/challenge?appId=${app.id}`)).body);
    const wrongNumber = await post(`/run/auth/challenge/verify?appId=${app.id}`, {
      ...solution,
      number: solution.number + 1,
    });
    expect(wrongNumber.body).toEqual({ verified: false, reason: 'invalid' });
    const forged = await post(`/run/auth/challenge/verify?appId=${app.id}`, { ...solution, signature: '0'.repeat(64) });
    expect(forged.body).toEqual({ verified: false, reason: 'invalid' });
    const elsewhere = await post(`/run/auth/challenge/verify?appId=${other.id}`, solution);
    expect(elsewhere.body).toEqual({ verified: false, reason: 'wrong_app' });
    expect((await post(`/run/auth/challenge/verify?appId=${app.id}`, solution)).body).toEqual({ verified: true });
  });

  test('when the payload is not a solution, then verify answers 400', async () => {
    const app = await anApp(admin, aProject());
    expect((await post(`/run/auth/challenge/verify?appId=${app.id}`, { payload: 'bm90IGpzb24=' })).status).toBe(400);
    expect((await post(`/run/auth/challenge/verify?appId=${app.id}`, { hello: 'world' })).status).toBe(400);
  });

  test('when interaction data is posted, then it is acknowledged with a fresh challenge', async () => {
    const app = await anApp(admin, aProject());
    const res = await post(`/run/auth/challenge?appId=${app.id}`, {
      endpointClass: 'chat',
      pointer: [[1, 2]],
      keys: 12,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ received: true, challenge: { algorithm: 'SHA-256' } });
    expect(new Date(res.body.receivedAt).toISOString()).toBe(res.body.receivedAt);
    const solution = solveChallenge(res.body.challenge);
    expect((await post(`/run/auth/challenge/verify?appId=${app.id}`, solution)).body).toEqual({ verified: true });
  });

  test('when the Origin is not allowed, then every challenge endpoint answers 403 "Origin not allowed"', async () => {
    const app = await anApp(admin, aProject());
    const bad = { origin: 'https://evil.example.net' };
    for (const res of [
      await get(`/run/auth/challenge?appId=${app.id}`, bad),
      await get(`/run/auth/challenge?appId=${app.id}`, {}),
      await post(`/run/auth/challenge?appId=${app.id}`, {}, bad),
      await post(`/run/auth/challenge/verify?appId=${app.id}`, { payload: 'x' }, bad),
    ]) {
      expect(res.status).toBe(403);
      expect(res.contentType).toMatch(/application\/problem\+json/);
      expect(res.body.detail).toBe('Origin not allowed');
    }
  });

  test('when the app is unknown, disabled or not a web_client, then the challenge endpoints answer 404 with the challenge detail', async () => {
    const p = aProject();
    const disabled = await anApp(admin, p, { enabled: false });
    const api = await anApp(admin, p, { type: 'api' });
    for (const appId of ['app_unknown', disabled.id, api.id]) {
      const res = await get(`/run/auth/challenge?appId=${appId}`);
      expect({ appId, status: res.status, detail: res.body.detail }).toEqual({
        appId,
        status: 404,
        detail: 'Challenge service is not enabled or app not found',
      });
    }
    expect((await post(`/run/auth/challenge/verify?appId=app_unknown`, { payload: 'x' })).status).toBe(404);
  });

  test('when endpointClass breaks its pattern or is longer than 32 characters, or appId is missing, then it answers 400', async () => {
    const app = await anApp(admin, aProject());
    expect((await get(`/run/auth/challenge?appId=${app.id}&endpointClass=${'a'.repeat(32)}`)).status).toBe(200);
    for (const q of [
      `appId=${app.id}&endpointClass=${'a'.repeat(33)}`,
      `appId=${app.id}&endpointClass=Chat`,
      `appId=${app.id}&endpointClass=a_b`,
      'endpointClass=chat',
    ]) {
      const res = await get(`/run/auth/challenge?${q}`);
      expect({ q, status: res.status }).toEqual({ q, status: 400 });
    }
    expect((await post(`/run/auth/challenge?appId=${app.id}`, { endpointClass: 'UPPER' })).status).toBe(400);
  });

  test('when a legacy proof-of-work challenge is fetched, then it carries expiresAt in milliseconds and its solution verifies once', async () => {
    const app = await anApp(admin, aProject());
    const res = await get('/run/auth/pow/challenge', {});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ algorithm: 'SHA-256', salt: expect.stringContaining('expires=') });
    expect(res.body.expiresAt).toBeGreaterThan(Date.now());
    const solution = solveChallenge(res.body);
    expect((await post(`/run/auth/challenge/verify?appId=${app.id}`, solution)).body).toEqual({ verified: true });
    expect((await post(`/run/auth/challenge/verify?appId=${app.id}`, solution)).body).toEqual({
      verified: false,
      reason: 'already_used',
    });
  });
});
