import type { SecretBox } from '@platform/secrets';
import type { ChatApi } from '../clients/chat-api';
import type { AgentDirectory } from '../clients/agents';
import type { WorkspaceRepo } from '../data/workspace.repo';
import type { ChannelConfigRepo } from '../data/channel-config.repo';
import type { UserLinkRepo } from '../data/user-link.repo';
import type { NonceStore } from '../data/nonce.store';

export interface ChatappSettings {
  /** Signs state, install-link and link tokens. */
  stateSecret: string;
  /** Verify them: the state secret first, then the ones derived from older sealing keys (during a key rotation). */
  acceptedStateSecrets: string[];
  clientId?: string;
  authorizeUrl?: string;
  redirectUrl?: string;
  resultUrl: string;
  linkUrl: string;
  connectUrl?: string;
  scopes: string[];
  linkTtlSeconds: number;
}

export interface ChatappDeps {
  workspaces: WorkspaceRepo;
  channels: ChannelConfigRepo;
  links: UserLinkRepo;
  nonces: NonceStore;
  chat: ChatApi;
  agents: AgentDirectory;
  box: SecretBox;
  settings: ChatappSettings;
}
