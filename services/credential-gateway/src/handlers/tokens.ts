import { exchangeToken } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { exchangeToken as exchange, type TokenExchangeDeps } from '../domain/token-exchange';

export function registerTokenHandlers(bus: ServiceBus, deps: TokenExchangeDeps) {
  bus.handle(exchangeToken, async ({ body }) => {
    const issued = await exchange(deps, body);
    return reply(200, issued, { 'cache-control': 'no-store', pragma: 'no-cache' });
  });
}
