// The MongoDB driver parses connection strings with the `whatwg-url` package, whose Unicode tables (tr46) cost every
// service several MB of memory. Node's own URL and URLSearchParams implement the same WHATWG URL Standard; the
// service bundles use them instead (scripts/build-service.mjs, `alias`).
module.exports = { URL: globalThis.URL, URLSearchParams: globalThis.URLSearchParams };
