import type { Connection } from 'mongoose';
import type { SealedBinding, SecretBox } from '@platform/secrets';

/**
 * Where a service keeps sealed values (libs/secrets SecretBox): one declaration per collection, next to its model. The
 * service seals and opens with `bindingOf` of the record; `pnpm secrets:reencrypt` reads the same declarations, so the
 * two cannot disagree on which record a value is bound to.
 */
export interface SealedFields<D = Record<string, unknown>> {
  /** The collection, in the service's own database. */
  collection: string;
  /** Dotted paths of the sealed string fields of a record (a field that is absent or null is skipped). */
  fields: readonly string[];
  /** The record the values of `doc` are bound to. */
  bindingOf(doc: D): SealedBinding;
  /** Further fields to set when the values of `doc` are sealed again (the credential gateway's key ring). */
  alsoSet?(doc: D, box: SecretBox): Record<string, unknown>;
}

/** What re-encrypting one collection did. */
export interface ReencryptReport {
  collection: string;
  /** Sealed values looked at. */
  values: number;
  /** Values under an older key, or in the format before bindings. */
  stale: number;
  /** Of those, sealed again under the newest key (none with `write: false`). */
  resealed: number;
  /** Values that do not open (another record's value, a key no longer in the list, damage): left as they are. */
  failed: Array<{ recordId: string; field: string; reason: string }>;
  /** Records changed by the service while they were being sealed again: left for the next run. */
  changedMeanwhile: number;
}

function valueAt(doc: Record<string, unknown>, path: string): unknown {
  let v: unknown = doc;
  for (const part of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  return v;
}

/**
 * Seals every value of `fields` that is not under the newest key of `box` again, bound to its record (with
 * `write: false` only counts them, and checks that they open). Idempotent: a value sealed under the newest key is left
 * alone, so a second run changes nothing. Each record is written only if
 * its sealed values are still the ones read (a compare-and-set): a service that changed the record meanwhile sealed
 * its new value under the newest key already, or the next run finds it.
 */
export async function reencryptCollection<D>(
  db: Connection,
  box: SecretBox,
  decl: SealedFields<D>,
  opts: { write?: boolean } = {},
): Promise<ReencryptReport> {
  const write = opts.write ?? true;
  const report: ReencryptReport = {
    collection: decl.collection,
    values: 0,
    stale: 0,
    resealed: 0,
    failed: [],
    changedMeanwhile: 0,
  };
  const collection = db.collection(decl.collection);
  const cursor = collection.find({ $or: decl.fields.map((f) => ({ [f]: { $type: 'string' } })) }).batchSize(200);
  for await (const raw of cursor) {
    const doc = raw as unknown as Record<string, unknown>;
    const binding = decl.bindingOf(doc as D);
    const expect: Record<string, unknown> = {};
    const set: Record<string, unknown> = {};
    for (const field of decl.fields) {
      const value = valueAt(doc, field);
      if (typeof value !== 'string') continue;
      report.values++;
      if (box.isCurrent(value)) continue;
      report.stale++;
      try {
        set[field] = box.reseal(value, binding);
        expect[field] = value;
      } catch (err) {
        report.failed.push({ recordId: binding.recordId, field, reason: (err as Error).message });
      }
    }
    if (!Object.keys(set).length || !write) continue;
    const resealed = { ...doc };
    for (const [field, value] of Object.entries(set)) setAt(resealed, field, value);
    Object.assign(set, decl.alsoSet?.(resealed as D, box));
    const res = await collection.updateOne({ _id: doc._id, ...expect } as never, { $set: set });
    if (res.matchedCount === 0) report.changedMeanwhile++;
    else report.resealed += Object.keys(expect).length;
  }
  return report;
}

function setAt(doc: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let at = doc;
  for (const part of parts.slice(0, -1)) {
    const next = at[part];
    at = at[part] = next && typeof next === 'object' ? { ...(next as Record<string, unknown>) } : {};
  }
  at[parts[parts.length - 1]!] = value;
}
