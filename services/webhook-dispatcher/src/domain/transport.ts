import type { OutcomeKind } from './retry-policy';

/** The result of one attempt, whatever carried it. */
export interface SendResult {
  kind: OutcomeKind;
  /** HTTP status, when a receiver answered. */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** From a receiver's `Retry-After`. */
  retryAfterMs?: number;
}

export interface HttpPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs?: number;
}

export interface ChannelPost {
  tenantId: string;
  projectId: string;
  channelId: string;
  text: string;
  payload: unknown;
}

export interface Transports {
  http(post: HttpPost): Promise<SendResult>;
  chat(post: ChannelPost): Promise<SendResult>;
}
