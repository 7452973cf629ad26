// altcha-lib publishes `altcha-lib/v1` through package.json "exports" only; our `moduleResolution: node`
// does not read "exports", so point the types at the CommonJS build's declarations (node and esbuild resolve the code).
declare module 'altcha-lib/v1' {
  export * from 'altcha-lib/dist/cjs/v1/index';
}
