import type { Express, Response } from 'express';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { sendStatic, vendoredFile } from './static-files';

const log = getLogger('gateway.api-docs');

/** Swagger UI's self-contained browser bundle and stylesheet, served from the `swagger-ui-dist` package (no CDN). */
const ASSETS = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'favicon-32x32.png': 'image/png',
} as const;
type AssetName = keyof typeof ASSETS;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent Platform API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="api-docs" data-state="loading"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;

/** Renders /openapi.json; marks the container ready once the operations are on the page (tests wait for it). */
const INIT = `(function () {
  var root = document.getElementById('api-docs');
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#api-docs',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    tryItOutEnabled: false,
    validatorUrl: null,
    onComplete: function () { root.setAttribute('data-state', 'ready'); }
  });
})();
`;

// Swagger UI sets style attributes from script, so inline styles are allowed; scripts only from this origin.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function send(res: Response, type: string, body: string | Buffer, cache: string) {
  sendStatic(res, CSP, type, body, cache);
}

/** `GET /docs`: the API reference, rendered in the browser from `GET /openapi.json` (an addition). */
export function mountApiDocs(app: Express): void {
  // Read on first request, then kept (Swagger UI's bundle is megabytes a gateway need not hold before anyone asks).
  const assets = new Map<AssetName, Buffer | undefined>();
  app.get('/docs', (_req, res) => send(res, 'text/html; charset=utf-8', PAGE, 'no-cache'));
  app.get('/docs/assets/init.js', (_req, res) => send(res, 'text/javascript; charset=utf-8', INIT, 'no-cache'));
  for (const [name, type] of Object.entries(ASSETS) as Array<[AssetName, string]>) {
    app.get(`/docs/assets/${name}`, (_req, res, next) => {
      if (!assets.has(name))
        assets.set(
          name,
          vendoredFile('swagger-ui-dist/package.json', name, log, 'the API reference at /docs cannot render'),
        );
      const body = assets.get(name);
      if (!body)
        return next(new AppError('service_unavailable', 'The API reference renderer is not installed on this gateway'));
      send(res, type, body, 'public, max-age=86400');
    });
  }
}
