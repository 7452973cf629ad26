export * from './metrics';
export * from './tracing';
