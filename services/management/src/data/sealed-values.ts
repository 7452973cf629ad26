import { credentialEntrySealed } from './credential-store-entry.model';
import { webhookDestinationSealed } from './webhook-destination.model';

/** Every sealed value management stores, by collection: `pnpm secrets:reencrypt` seals them again under the newest key. */
export const sealedValues = [webhookDestinationSealed, credentialEntrySealed];
