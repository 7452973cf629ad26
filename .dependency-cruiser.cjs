/**
 * Import boundaries (docs/contributing.md "Layout of a service", STYLE.md §1), checked by `pnpm boundaries` inside
 * `pnpm check`.
 *
 * Tiers inside a service's src/:
 *   handlers  src/handlers/**
 *   domain    src/domain/**
 *   data      src/data/** (*.model.ts: mongoose schema and model; *.repo.ts, *.store.ts: plain objects in and out)
 *   wiring    src/main.ts, src/service.ts (and src/wiring/**): build repos, register handlers
 * Other folders (clients/, types/, the gateway's routes/ and middleware/) follow the rules of the domain.
 *
 * Folders are held to it too: no folder imports one that imports it back (a folder counts with its sub-folders).
 */
const SERVICE_SRC = '^services/[^/]+/src/';
const DATA = `${SERVICE_SRC}data/`;
const HANDLERS = `${SERVICE_SRC}handlers/`;
const WIRING = `${SERVICE_SRC}((main|service)[.]ts$|wiring/)`;
const MODEL = `${SERVICE_SRC}.*[.]model[.]ts$`;
const DATABASE = ['^libs/mongo/', '^libs/outbox/', 'node_modules/(mongoose|mongodb)/'];

module.exports = {
  forbidden: [
    {
      name: 'no-cross-service',
      comment: 'A service never imports another service: it asks over NATS or keeps its own projection fed by events.',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/[^/]+/', pathNot: ['^services/$1/'] },
    },
    {
      name: 'libs-not-services',
      comment: 'libs/ hold what two or more services need; they never import a service.',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^services/' },
    },
    {
      name: 'database-only-in-data',
      comment: 'Only the data tier (and the wiring that builds repos) imports mongoose, @platform/mongo or @platform/outbox.',
      severity: 'error',
      from: { path: SERVICE_SRC, pathNot: [DATA, WIRING] },
      to: { path: DATABASE },
    },
    {
      name: 'models-only-in-data',
      comment:
        'A mongoose model and its document type stay in the data tier: repositories hand out plain objects whose types they declare, so nothing above the data tier sees a document type (not even type-only).',
      severity: 'error',
      from: { path: SERVICE_SRC, pathNot: [DATA, WIRING] },
      to: { path: MODEL },
    },
    {
      name: 'handlers-not-data',
      comment: 'Handlers call the domain; the domain calls the repositories.',
      severity: 'error',
      from: { path: HANDLERS },
      to: { path: DATA },
    },
    {
      name: 'domain-not-handlers',
      comment: 'Import direction is handlers -> domain -> data, never back.',
      severity: 'error',
      from: { path: SERVICE_SRC, pathNot: [HANDLERS, WIRING] },
      to: { path: HANDLERS },
    },
    {
      name: 'data-not-domain',
      comment: 'Repositories know documents and wire shapes, not use cases (they may implement a type the domain declares).',
      severity: 'error',
      from: { path: DATA },
      to: { path: SERVICE_SRC, pathNot: [DATA, `${SERVICE_SRC}config[.]ts$`], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-express-outside-gateway',
      comment: 'HTTP lives in the gateway; services speak NATS.',
      severity: 'error',
      from: { path: '^services/(?!gateway/)[^/]+/src/' },
      to: { path: 'node_modules/express/' },
    },
    {
      name: 'no-circular',
      comment: 'No import cycles.',
      severity: 'error',
      from: { path: '^(libs|services)/' },
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      comment:
        'No folder imports a folder that imports it back (directly or around a longer cycle), type-only imports included; a folder counts with its sub-folders, so a sub-folder may use its parent.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^(libs|services)/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/|\\.infra/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    skipAnalysisNotInRules: true,
  },
};
