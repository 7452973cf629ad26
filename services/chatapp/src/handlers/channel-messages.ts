import { POST_CHANNEL_MESSAGE_SUBJECT, PostChannelMessageRequest } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { validationError } from '@platform/problems';
import type { ChatappDeps } from '../domain/deps';
import { postChannelMessage } from '../domain/channel-messages';

/** Internal: the webhook dispatcher posts events of destinations with `chatappChannelId`. */
export function registerChannelMessageHandlers(bus: ServiceBus, deps: ChatappDeps) {
  bus.serve(POST_CHANNEL_MESSAGE_SUBJECT, async (wire) => {
    const parsed = PostChannelMessageRequest.safeParse(wire.body);
    if (!parsed.success) throw validationError(parsed.error, 'body');
    return { ok: true, status: 200, body: await postChannelMessage(deps, parsed.data) };
  });
}
