import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One chat-completions request the fake received. */
export interface LlmRequest {
  headers: http.IncomingHttpHeaders;
  body: { model?: string; messages?: Array<{ role: string; content: string }>; response_format?: unknown } & Record<
    string,
    unknown
  >;
  /** Every message's content joined (handy for matching). */
  text: string;
}

/**
 * How the fake answers: the assistant message content (usually a JSON text), or an HTTP failure. With `gate`, the
 * answer is held until the test calls `open(gate)` (so a test can look at a request still being answered).
 */
export type LlmAnswer =
  | { content: string; delayMs?: number; gate?: string }
  | { status: number; delayMs?: number; gate?: string };

export interface LlmRule {
  /** The rule applies when a request's messages contain this text. */
  match: string;
  answer: LlmAnswer;
}

export interface FakeLlm {
  /** Base URL to configure as LLM_BASE_URL (requests go to `${baseUrl}/chat/completions`). */
  baseUrl: string;
  received: LlmRequest[];
  /** Adds a rule (newest rules win). Without a matching rule the fake answers `{}`. */
  on(match: string, answer: LlmAnswer): void;
  /** Releases the answers held by `gate` (now and from then on). */
  open(gate: string): void;
  close(): Promise<void>;
}

/**
 * A local stand-in for an OpenAI-compatible chat-completions API (`POST /v1/chat/completions`), answering in its
 * shape (`{id, object: 'chat.completion', choices: [{index, message: {role, content}, finish_reason}], usage}`).
 * Answers are chosen by rules matched against the request's messages. Rules can also be added over HTTP
 * (`POST /__fake/rules` with a rule) and requests read back (`GET /__fake/requests`), for processes other than
 * the one that started it.
 */
export async function startFakeLlm(): Promise<FakeLlm> {
  const received: LlmRequest[] = [];
  const rules: LlmRule[] = [];
  let counter = 0;
  const opened = new Set<string>();
  const held = new Map<string, Array<() => void>>();
  const whenOpen = (gate: string | undefined, fn: () => void) => {
    if (!gate || opened.has(gate)) return fn();
    held.set(gate, [...(held.get(gate) ?? []), fn]);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, json: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      let body: any;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      } catch {
        return send(400, { error: { message: 'invalid JSON', type: 'invalid_request_error' } });
      }
      const path = (req.url ?? '').split('?')[0];
      if (path === '/__fake/rules' && req.method === 'POST') {
        rules.unshift(body as LlmRule);
        return send(201, { ok: true });
      }
      if (path === '/__fake/requests' && req.method === 'GET') return send(200, { requests: received });
      if (path !== '/v1/chat/completions' || req.method !== 'POST')
        return send(404, { error: { message: 'not found', type: 'invalid_request_error' } });
      if (!Array.isArray(body.messages))
        return send(400, { error: { message: 'messages is required', type: 'invalid_request_error' } });
      const text = body.messages.map((m: { content?: unknown }) => String(m.content ?? '')).join('\n');
      received.push({ headers: req.headers, body, text });
      const rule = rules.find((r) => text.includes(r.match));
      const answer: LlmAnswer = rule?.answer ?? { content: '{}' };
      const reply = () => {
        if ('status' in answer)
          return send(answer.status, { error: { message: 'fake failure', type: 'server_error' } });
        counter++;
        send(200, {
          id: `chatcmpl-fake-${counter}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? 'fake',
          choices: [{ index: 0, message: { role: 'assistant', content: answer.content }, finish_reason: 'stop' }],
          usage: {
            prompt_tokens: text.length,
            completion_tokens: answer.content.length,
            total_tokens: text.length + answer.content.length,
          },
        });
      };
      whenOpen(answer.gate, () => {
        if (answer.delayMs) setTimeout(reply, answer.delayMs);
        else reply();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    on(match, answer) {
      rules.unshift({ match, answer });
    },
    open(gate) {
      opened.add(gate);
      for (const fn of held.get(gate) ?? []) fn();
      held.delete(gate);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
