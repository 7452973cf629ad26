#!/usr/bin/env node
// Bundles services into services/<name>/dist/main.js (one file each; production dependencies inlined).
// Usage: node scripts/build-service.mjs [name ...]   (no names: every service of libs/contracts/src/services.ts)
import { build, transformSync } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The list of services, a TypeScript file that imports nothing: compiled here and loaded as a module.
const list = transformSync(readFileSync(join(root, 'libs', 'contracts', 'src', 'services.ts'), 'utf8'), { loader: 'ts', format: 'esm' }).code;
const { SERVICE_NAMES } = await import(`data:text/javascript,${encodeURIComponent(list)}`);
const names = process.argv.slice(2).length ? process.argv.slice(2) : SERVICE_NAMES;
const unknown = names.filter((n) => !SERVICE_NAMES.includes(n));
if (unknown.length) {
  console.error(`build-service: ${unknown.join(', ')}: not in libs/contracts/src/services.ts (one of: ${SERVICE_NAMES.join(', ')})`);
  process.exit(64);
}

// Optional native add-ons of the MongoDB driver and friends: never installed, loaded lazily.
const external = [
  'kerberos', '@mongodb-js/zstd', '@aws-sdk/credential-providers', 'gcp-metadata', 'snappy', 'socks', 'aws4',
  'mongodb-client-encryption', 'pino-pretty', 'bufferutil', 'utf-8-validate', 'playwright-core', 'chromium-bidi',
];

// Each run bundles into a folder of its own: `pnpm build` (turbo) runs one of these per service at once, and a shared
// folder was removed under the others (ENOENT on rename).
const tmp = join(root, '.build-tmp', String(process.pid));

await build({
  entryPoints: Object.fromEntries(names.map((n) => [n, join(root, 'services', n, 'src', 'main.ts')])),
  outdir: tmp,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'cjs',
  sourcemap: 'linked',
  minifyWhitespace: true,
  minifySyntax: true,
  external,
  // Node's WHATWG URL instead of the whatwg-url package (scripts/shims/whatwg-url.cjs says why).
  alias: { 'whatwg-url': join(root, 'scripts', 'shims', 'whatwg-url.cjs') },
  logLevel: 'warning',
  write: true,
  entryNames: '[name]/main',
});
// move each bundle next to its service
import { renameSync, mkdirSync, rmSync } from 'node:fs';
for (const n of names) {
  const out = join(root, 'services', n, 'dist');
  mkdirSync(out, { recursive: true });
  for (const f of ['main.js', 'main.js.map']) renameSync(join(tmp, n, f), join(out, f));
}
rmSync(tmp, { recursive: true, force: true });
// The gateway serves Chart.js's UMD file (analytics view); a copy next to the bundle serves images without node_modules.
if (names.includes('gateway')) {
  const { createRequire } = await import('node:module');
  const { copyFileSync } = await import('node:fs');
  const req = createRequire(join(root, 'services', 'gateway', 'package.json'));
  const assets = join(root, 'services', 'gateway', 'dist', 'assets');
  mkdirSync(assets, { recursive: true });
  copyFileSync(join(dirname(req.resolve('chart.js')), 'chart.umd.min.js'), join(assets, 'chart.umd.min.js'));
  // and Swagger UI's browser bundle (the API reference at /docs)
  for (const f of ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png']) copyFileSync(join(dirname(req.resolve('swagger-ui-dist/package.json')), f), join(assets, f));
}
console.log(`built ${names.length} service bundle(s): ${names.join(', ')}`);
