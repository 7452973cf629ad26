import { createPublicKey, type KeyObject } from 'node:crypto';
import type { AppKeyAlgorithm } from '@platform/contracts';
import { AppError } from '@platform/problems';

const CURVE: Record<string, string> = { ES256: 'prime256v1', ES384: 'secp384r1', ES512: 'secp521r1' };
const CURVE_NAME: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };

const invalid = (detail: string) =>
  new AppError('unprocessable_entity', detail, { errors: [{ pointer: '/publicKey', detail }] });

/**
 * Checks that `pem` is a PEM public key of the kind `algorithm` needs and returns it as SPKI PEM
 * (the form JOSE libraries import). RSA keys need at least 2048 bits.
 */
export function normalizePublicKey(algorithm: AppKeyAlgorithm, pem: string): string {
  const text = pem.trim();
  if (!/^-----BEGIN (RSA )?PUBLIC KEY-----/.test(text))
    throw invalid('publicKey must be a PEM-encoded public key (-----BEGIN PUBLIC KEY-----)');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: text, format: 'pem' });
  } catch {
    throw invalid('publicKey is not a readable PEM public key');
  }
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (algorithm.startsWith('RS')) {
    if (type !== 'rsa') throw invalid(`${algorithm} needs an RSA public key, got ${type ?? 'an unknown key type'}`);
    if ((details.modulusLength ?? 0) < 2048) throw invalid(`${algorithm} needs an RSA key of at least 2048 bits`);
  } else if (algorithm.startsWith('ES')) {
    if (type !== 'ec')
      throw invalid(
        `${algorithm} needs an EC public key on ${CURVE_NAME[algorithm]}, got ${type ?? 'an unknown key type'}`,
      );
    if (details.namedCurve !== CURVE[algorithm])
      throw invalid(`${algorithm} needs an EC key on ${CURVE_NAME[algorithm]}`);
  } else if (algorithm === 'EdDSA') {
    if (type !== 'ed25519') throw invalid(`EdDSA needs an Ed25519 public key, got ${type ?? 'an unknown key type'}`);
  }
  return key.export({ type: 'spki', format: 'pem' }).toString();
}
