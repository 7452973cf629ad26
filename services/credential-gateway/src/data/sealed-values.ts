import { signingKeySealed } from './signing-key.model';

/** Every sealed value the credential gateway stores: `pnpm secrets:reencrypt` seals them again under the newest key. */
export const sealedValues = [signingKeySealed];
