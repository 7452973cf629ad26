import { getCredentialGatewayJwks, rotateCredentialGatewayKey } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import type { Keyring } from '../domain/signing-keys';

export function registerSigningKeyHandlers(bus: ServiceBus, deps: { keys: Keyring; maxAgeSeconds: number }) {
  bus.handle(getCredentialGatewayJwks, async () =>
    reply(200, deps.keys.jwks(), { 'cache-control': `public, max-age=${deps.maxAgeSeconds}` }),
  );
  bus.handle(rotateCredentialGatewayKey, async () => ({ data: await deps.keys.rotate() }));
}
