import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';
import type { TestStackInfo } from '@platform/testkit';

/*
 * The headless Chromium the browser tests drive (the gateway's pages: /docs, the analytics and webhooks views), and
 * the checks those pages share.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Launches Chromium before the calling file's first test and closes it after the last (jest's beforeAll and afterAll
 * of that file); the returned function gives the browser inside a test.
 */
export function useBrowser(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium not found at ${CHROMIUM}: scripts/test.sh installs it (apt-get install -y chromium)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("the browser is launched before the file's tests: use it inside a test");
    return browser;
  };
}

/** A browser context signed in with a management session cookie (POST /manage/auth/session). */
export async function signedInContext(
  browser: Browser,
  stack: Pick<TestStackInfo, 'gatewayUrl' | 'adminToken'>,
  options?: BrowserContextOptions,
): Promise<BrowserContext> {
  const res = await fetch(`${stack.gatewayUrl}/manage/auth/session`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}` },
  });
  expect(res.status).toBe(201);
  const [pair] = (res.headers.get('set-cookie') ?? '').split(';');
  const eq = pair!.indexOf('=');
  const context = await browser.newContext(options);
  await context.addCookies([{ name: pair!.slice(0, eq), value: pair!.slice(eq + 1), url: stack.gatewayUrl }]);
  return context;
}

/**
 * A visitor without a session opens the view at `url`: the element `root` (e.g. `#analytics`) ends in
 * `data-state="error"` and the status line asks to sign in.
 */
export async function expectSignInAsked(browser: Browser, url: string, root: string): Promise<void> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector(`${root}[data-state="error"]`);
  expect(await page.textContent('#status')).toMatch(/^401 Unauthorized: .*Sign in/);
  await context.close();
}

/**
 * Fetches the page at `url`: 200, HTML, a content security policy matching `csp`, and no absolute URL in it (nothing
 * from a CDN). Returns the HTML for the caller's own checks.
 */
export async function fetchStrictPage(url: string, csp: RegExp): Promise<string> {
  const page = await fetch(url);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/text\/html/);
  expect(page.headers.get('content-security-policy')).toMatch(csp);
  const html = await page.text();
  expect(html).not.toMatch(/https?:\/\//);
  return html;
}
