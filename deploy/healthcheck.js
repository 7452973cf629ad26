// Container health check: `node /app/healthcheck.js [/healthz|/readyz]` (default /healthz, liveness).
// The gateway answers on its public port, every other service on HEALTH_PORT. Exit 0 healthy, 1 not.
const path = process.argv[2] === '/readyz' ? '/readyz' : '/healthz';
const gateway = process.env.SERVICE === 'gateway';
const port = gateway ? process.env.GATEWAY_PORT || '3000' : process.env.HEALTH_PORT || '8081';
fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2500) }).then(
  (res) => process.exit(res.ok ? 0 : 1),
  () => process.exit(1),
);
