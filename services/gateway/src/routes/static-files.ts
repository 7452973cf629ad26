import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Response } from 'express';
import type { Logger } from '@platform/logger';

/** Sends a page or an asset the gateway serves itself, under the Content-Security-Policy of its page. */
export function sendStatic(res: Response, csp: string, type: string, body: string | Buffer, cache: string): void {
  res.setHeader('content-security-policy', csp);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('cache-control', cache);
  res.type(type).send(body);
}

/**
 * A browser file of an npm package the gateway serves itself (no CDN): from the installed package (the folder
 * `require.resolve(moduleId)` lands in), else from the copy the build puts next to the bundle (`dist/assets/`, for
 * container images that carry no node_modules). Undefined, logged with what cannot work without it, when neither has it.
 */
export function vendoredFile(moduleId: string, file: string, log: Logger, without: string): Buffer | undefined {
  const candidates: string[] = [];
  try {
    candidates.push(join(dirname(require.resolve(moduleId)), file));
  } catch {
    /* not installed: try the bundled copy */
  }
  candidates.push(join(__dirname, 'assets', file));
  const found = candidates.find((c) => existsSync(c));
  if (!found) {
    log.warn({ candidates }, `${file} not found; ${without}`);
    return undefined;
  }
  return readFileSync(found);
}
