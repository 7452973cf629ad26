import { postChannelMessage as postChannelMessageCall } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import type { ChatappDeps } from '../domain/deps';
import { postChannelMessage } from '../domain/channel-messages';

/** Internal: the webhook dispatcher posts events of destinations with `chatappChannelId`. */
export function registerChannelMessageHandlers(bus: ServiceBus, deps: ChatappDeps) {
  bus.serveInternal(postChannelMessageCall, (req) => postChannelMessage(deps, req));
}
