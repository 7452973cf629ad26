import type { AccessToken } from '@platform/contracts';
import { listPage, type Connection } from '@platform/mongo';
import { accessTokenModel } from './access-token.model';

/** A tenant access token as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredAccessToken {
  _id: string;
  tenantId: string;
  name: string;
  userId: string;
  tokenHash: string;
  expiresAt?: Date | null;
  createdAt: Date;
  role: 'owner' | 'admin' | 'member' | 'viewer';
}

export function toAccessToken(d: StoredAccessToken): AccessToken {
  return {
    id: d._id,
    tenantId: d.tenantId,
    name: d.name,
    role: d.role,
    userId: d.userId,
    expiresAt: d.expiresAt ? d.expiresAt.toISOString() : null,
    createdAt: d.createdAt.toISOString(),
  };
}

export type AccessTokenRepo = ReturnType<typeof accessTokenRepo>;

/** Tenant access tokens (management bearer tokens); only their keyed hash is stored. */
export function accessTokenRepo(db: Connection) {
  const Model = accessTokenModel(db);
  return {
    async insert(doc: StoredAccessToken): Promise<void> {
      await Model.create(doc);
    },
    async listPage(tenantId: string, page: number, limit: number) {
      const { rows, total } = await listPage(
        Model,
        { filter: { tenantId }, sort: { createdAt: -1, _id: 1 }, projection: { tokenHash: 0 } },
        page,
        limit,
      );
      return { rows: rows.map(toAccessToken), total };
    },
    /** True when the token existed (in this tenant) and is gone now. */
    async remove(tenantId: string, id: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: id, tenantId });
      return r.deletedCount > 0;
    },
    /** For verification: by id, with the hash. */
    async findForVerify(id: string): Promise<StoredAccessToken | null> {
      return Model.findById(id).lean();
    },
  };
}
