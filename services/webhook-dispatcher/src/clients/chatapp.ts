import { postChannelMessage } from '@platform/contracts';
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
    const done = (r: Omit<SendResult, 'durationMs' | 'statusCode'>): SendResult => ({
      ...r,
      statusCode: null,
      durationMs: Date.now() - started,
    });
    try {
      const posted = await bus.callInternal(
        postChannelMessage,
        {
          tenantId: post.tenantId,
          projectId: post.projectId,
          channelId: post.channelId,
          text: post.text,
          payload: post.payload,
        },
        { timeoutMs },
      );
      if (!posted.ok)
        return done({
          kind: 'retryable',
          error: `the chat app could not post to channel ${post.channelId}: ${posted.error ?? 'no reason given'}`,
        });
      return done({ kind: 'delivered', error: null });
    } catch (err) {
      if (err instanceof AppError) {
        if (err.code === 'service_unavailable')
          return done({ kind: 'retryable', error: 'the chat app service is not available (no responder); will retry' });
        if (err.code === 'gateway_timeout')
          return done({ kind: 'retryable', error: `the chat app did not answer within ${timeoutMs} ms` });
        if (err.code === 'bad_gateway')
          return done({ kind: 'retryable', error: 'the chat app answered with an unreadable reply' });
        return done({ kind: 'retryable', error: `the chat app refused the message: ${err.message}` });
      }
      return done({ kind: 'retryable', error: `posting to the chat app failed: ${(err as Error).message}` });
    }
  };
}
