export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  contentType: string;
}

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  /** Raw body (sent as is); otherwise `json` is JSON-encoded. */
  raw?: string | Buffer;
  json?: unknown;
  cookie?: string;
}

/** fetch that never throws on 4xx/5xx and parses JSON bodies. */
export async function http<T = any>(method: string, url: string, opts: RequestOptions = {}): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  let body: string | Buffer | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method: method.toUpperCase(), headers, body, redirect: 'manual' });
  const text = await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  let parsed: unknown = text;
  if (text && /json/.test(contentType)) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  } else if (!text) parsed = undefined;
  return { status: res.status, headers: res.headers, body: parsed as T, contentType };
}

/** A client bound to a base URL and a credential. */
export function client(baseUrl: string, token?: string) {
  const call = <T = any>(method: string, path: string, json?: unknown, extra: Omit<RequestOptions, 'json'> = {}) =>
    http<T>(method, baseUrl + path, { token, json, ...extra });
  return {
    baseUrl,
    token,
    get: <T = any>(path: string, extra?: Omit<RequestOptions, 'json'>) => call<T>('GET', path, undefined, extra),
    post: <T = any>(path: string, json?: unknown, extra?: Omit<RequestOptions, 'json'>) =>
      call<T>('POST', path, json, extra),
    put: <T = any>(path: string, json?: unknown, extra?: Omit<RequestOptions, 'json'>) =>
      call<T>('PUT', path, json, extra),
    patch: <T = any>(path: string, json?: unknown, extra?: Omit<RequestOptions, 'json'>) =>
      call<T>('PATCH', path, json, extra),
    delete: <T = any>(path: string, extra?: Omit<RequestOptions, 'json'>) => call<T>('DELETE', path, undefined, extra),
    withToken: (t?: string) => client(baseUrl, t),
  };
}
export type Client = ReturnType<typeof client>;

/** Waits until `check` returns a truthy value, polling; fails with `what` after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  what: string,
  timeoutMs = 15_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as T;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
