// nats is a dependency of the testkit (pnpm does not hoist it to the root): loaded from there, with the few calls the
// bench makes typed here.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { repoRoot } from '@platform/testkit';

interface NatsLib {
  connect(o: { servers: string; name: string }): Promise<{
    jetstreamManager(): Promise<{
      consumers: { list(stream: string): AsyncIterable<{ num_pending: number; num_ack_pending: number }> };
      streams: { add(c: Record<string, unknown>): Promise<unknown>; delete(name: string): Promise<boolean> };
    }>;
    jetstream(): { publish(subject: string, data: Uint8Array, opts: { msgID: string }): Promise<unknown> };
    close(): Promise<void>;
  }>;
}

export const natsLib = createRequire(join(repoRoot, 'libs', 'testkit', 'package.json'))('nats') as NatsLib;
