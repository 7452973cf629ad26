import type { z } from 'zod';
import { ServiceBus } from '@platform/bus';
import type { InternalCallDef } from '@platform/contracts';
import { connectAs } from './nats-auth';

/**
 * Sends one internal call the way a service does (`bus.callInternal`) on its own connection, for launchers and tests
 * that play a caller: the typed reply body, or the problem thrown as an AppError.
 */
export async function callInternalOnce<Q extends z.ZodType, R extends z.ZodType>(
  natsUrl: string,
  def: InternalCallDef<Q, R>,
  request: z.input<Q>,
  timeoutMs = 10_000,
): Promise<z.infer<R>> {
  // As the admin identity: the tools' one (the bot side of the chat product is no service of ours).
  const nc = await connectAs(natsUrl, 'admin', { name: `test-call:${def.name}`, maxReconnectAttempts: 0 });
  try {
    return await new ServiceBus(nc, 'testkit', timeoutMs).callInternal(def, request, { timeoutMs });
  } finally {
    await nc.close();
  }
}
