import { workspaceSealed } from './workspace.model';

/** Every sealed value the chat app stores, by collection: `pnpm secrets:reencrypt` seals them again under the newest key. */
export const sealedValues = [workspaceSealed];
