import { connect } from 'nats';
import type { z } from 'zod';
import { ServiceBus } from '@platform/bus';
import type { InternalCallDef } from '@platform/contracts';

/**
 * Sends one internal call the way a service does (`bus.callInternal`) on its own connection, for launchers and tests
 * that play a caller: the typed reply body, or the problem thrown as an AppError.
 */
export async function callInternalOnce<Q extends z.ZodType, R extends z.ZodType>(natsUrl: string, def: InternalCallDef<Q, R>, request: z.input<Q>, timeoutMs = 10_000): Promise<z.infer<R>> {
  const nc = await connect({ servers: natsUrl, name: `test-call:${def.name}` });
  try {
    return await new ServiceBus(nc, 'testkit', timeoutMs).callInternal(def, request, { timeoutMs });
  } finally {
    await nc.close();
  }
}
