export * from './metrics';
export * from './tracing';
export * from './memory';
