import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { SealedValueError, SecretBox, randomSecret, type SealedBinding } from '../src';

const record: SealedBinding = { tenantId: 't1', collection: 'webhookDestinations', recordId: 'p1/d1' };

/** A value sealed the way the release before bindings did (`v1.<iv>.<tag>.<ct>`, no associated data). */
function legacySeal(key: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(key).digest(), iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
    '.',
  );
}

const reasonOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof SealedValueError
      ? { reason: err.reason, message: err.message }
      : { reason: 'other', message: String(err) };
  }
  return null;
};

describe('sealed values', () => {
  const a = randomSecret(32);
  const b = randomSecret(32);

  test('when a value is sealed for a record, then it opens for that record and names the newest key', () => {
    const box = new SecretBox([b, a]);
    const sealed = box.seal('whsec_x', record);
    expect(sealed.startsWith(`v2.${box.keyIds[0]}.`)).toBe(true);
    expect(box.open(sealed, record)).toBe('whsec_x');
    expect(box.isCurrent(sealed)).toBe(true);
  });

  test('when a sealed value is opened for another record, collection or tenant, then it fails with a clear error', () => {
    const box = new SecretBox(a);
    const sealed = box.seal('whsec_x', record);
    for (const other of [
      { ...record, recordId: 'p1/d2' },
      { ...record, collection: 'credentialStoreEntries' },
      { ...record, tenantId: 't2' },
      { ...record, tenantId: null },
    ]) {
      expect(reasonOf(() => box.open(sealed, other))).toEqual({
        reason: 'not_this_record',
        message: expect.stringContaining('was not sealed for this record'),
      });
    }
  });

  test('when the key list changes, then values of every listed key open, the newest seals, and a dropped key is named', () => {
    const sealedA = new SecretBox(a).seal('old', record);
    const rotated = new SecretBox([b, a]);
    expect(rotated.open(sealedA, record)).toBe('old');
    expect(rotated.isCurrent(sealedA)).toBe(false);
    const resealed = rotated.reseal(sealedA, record);
    expect(rotated.isCurrent(resealed)).toBe(true);
    const onlyB = new SecretBox(b);
    expect(onlyB.open(resealed, record)).toBe('old');
    expect(reasonOf(() => onlyB.open(sealedA, record))).toEqual({
      reason: 'unknown_key',
      message: expect.stringContaining('not in ENCRYPTION_KEYS'),
    });
  });

  test('when a value was sealed before bindings, then it opens under any listed key and is sealed again bound to its record', () => {
    const legacy = legacySeal(a, 'bot-token');
    const box = new SecretBox([b, a]);
    expect(box.open(legacy, record)).toBe('bot-token');
    expect(box.isCurrent(legacy)).toBe(false);
    const resealed = box.reseal(legacy, record);
    expect(box.open(resealed, record)).toBe('bot-token');
    expect(reasonOf(() => box.open(resealed, { ...record, recordId: 'p1/other' }))?.reason).toBe('not_this_record');
    expect(reasonOf(() => new SecretBox(b).open(legacy, record))?.reason).toBe('no_key_opens');
  });

  test('when values of the format before are no longer accepted, then a v1 value in a record is refused and bound ones still open', () => {
    const strict = new SecretBox(a, { acceptUnbound: false });
    expect(reasonOf(() => strict.open(legacySeal(a, 'old backup'), record))).toEqual({
      reason: 'unbound',
      message: expect.stringContaining('ENCRYPTION_ACCEPT_UNBOUND=false'),
    });
    expect(strict.open(new SecretBox(a).reseal(legacySeal(a, 'converted'), record), record)).toBe('converted');
  });

  test('when a value is damaged or its tag is shortened, then it does not open', () => {
    const box = new SecretBox(a);
    const [v, kid, iv, tag, ct] = box.seal('secret', record).split('.');
    const shortTag = Buffer.from(tag!, 'base64url').subarray(0, 4).toString('base64url');
    expect(reasonOf(() => box.open([v, kid, iv, shortTag, ct].join('.'), record))?.reason).toBe('not_this_record');
    expect(reasonOf(() => box.open('plain text', record))?.reason).toBe('malformed');
  });

  test('when the same key is listed twice or a key is short, then the box refuses to be made', () => {
    expect(() => new SecretBox([a, a])).toThrow('differ');
    expect(() => new SecretBox('short')).toThrow('16 characters');
    expect(() => new SecretBox([])).toThrow('at least one');
  });
});
