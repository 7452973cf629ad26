import { POST_CHANNEL_MESSAGE_SUBJECT, PostChannelMessageReply } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { AppError } from '@platform/problems';
import type { ChannelPost, SendResult } from '../domain/transport';

/**
 * Delivery to a chat channel: a message posted through the chatapp service. No responder, a timeout or a
 * not-ok answer are all retryable failures with a reason; nothing is dropped silently.
 */
export function chatappSender(bus: ServiceBus, timeoutMs: number) {
  return async (post: ChannelPost): Promise<SendResult> => {
    const started = Date.now();
    const done = (r: Omit<SendResult, 'durationMs' | 'statusCode'>): SendResult => ({ ...r, statusCode: null, durationMs: Date.now() - started });
    try {
      const res = await bus.requestWire(
        POST_CHANNEL_MESSAGE_SUBJECT,
        { principal: { kind: 'anonymous' }, body: { tenantId: post.tenantId, projectId: post.projectId, channelId: post.channelId, text: post.text, payload: post.payload } },
        { timeoutMs },
      );
      const parsed = PostChannelMessageReply.safeParse(res.body);
      if (!parsed.success) return done({ kind: 'retryable', error: 'the chat app answered with an unreadable reply' });
      if (!parsed.data.ok) return done({ kind: 'retryable', error: `the chat app could not post to channel ${post.channelId}: ${parsed.data.error ?? 'no reason given'}` });
      return done({ kind: 'delivered', error: null });
    } catch (err) {
      if (err instanceof AppError) {
        if (err.code === 'service_unavailable') return done({ kind: 'retryable', error: 'the chat app service is not available (no responder); will retry' });
        if (err.code === 'gateway_timeout') return done({ kind: 'retryable', error: `the chat app did not answer within ${timeoutMs} ms` });
        return done({ kind: 'retryable', error: `the chat app refused the message: ${err.message}` });
      }
      return done({ kind: 'retryable', error: `posting to the chat app failed: ${(err as Error).message}` });
    }
  };
}
