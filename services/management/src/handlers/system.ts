import { ping } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';

export function registerSystemHandlers(bus: ServiceBus, instance: string) {
  bus.handle(ping, () => ({ ok: true, service: 'management', instance }));
}
