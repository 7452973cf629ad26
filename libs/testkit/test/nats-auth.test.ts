import { connect } from 'nats';
import { natsVersion } from '../src/containers';
import { ensureInfra } from '../src/infra';
import { connectAs } from '../src/nats-auth';

/**
 * The run's NATS, whichever TEST_INFRA gives it (scripts/infra.sh's server, or the container of TEST_INFRA=containers),
 * is the server the deployments run: nats-server of deploy/nats/VERSION with the generated authentication.
 */
describe('the NATS server of the test infrastructure', () => {
  test('when a client connects without credentials, then it is refused; with its .creds file, then it gets in to the version of deploy/nats/VERSION', async () => {
    const { NATS_URL } = ensureInfra();
    await expect(connect({ servers: NATS_URL, reconnect: false })).rejects.toMatchObject({
      code: 'AUTHORIZATION_VIOLATION',
    });
    const nc = await connectAs(NATS_URL, 'admin', { maxReconnectAttempts: 0 });
    try {
      await nc.flush();
      expect(nc.info?.version).toBe(natsVersion());
    } finally {
      await nc.close();
    }
  });
});
