import { readFileSync } from 'node:fs';

/** The platform catalog file's JSON (parsed, not yet validated); throws a readable error when it cannot be read. */
export function readCatalogFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(
      `Invalid configuration: CREDENTIAL_GATEWAY_PLATFORMS_FILE ${path} cannot be read (${(err as Error).message})`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(
      `Invalid configuration: CREDENTIAL_GATEWAY_PLATFORMS_FILE ${path} is not valid JSON (${(err as Error).message})`,
    );
  }
}
