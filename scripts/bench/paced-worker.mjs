// The open-loop pacer of pnpm bench (see paced() in load.ts), run in a worker thread: its own heap and event loop,
// so the bench process's own garbage collection (its heap holds every earlier row's results and autocannon's
// buffers: pauses of 26-36 ms measured during a paced row) and bookkeeping neither delay a request nor the reading of
// its answer, and are not counted as the stack's latency.
//
// workerData: { url, method, headers, body, template, rate, warmupS, durationS, connections, expectStatus, slowMs, recordIds }
// Request i is due at i / rate s from the start and is sent then on a free connection (or waits for one); its latency
// counts from when it was due. The first `warmupS` seconds are paced the same way and not counted: a new thread's code
// is not compiled yet and its connections are not open (the first second of a cold pacer had latencies up to 133 ms). With `template`, each body is the template with every `{{id}}` replaced by a new UUID.
// Posts back { latencies, completed, errors, unexpected, tookS, slow, sentAt, loader }.
import { randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

const spec = workerData;
const url = new URL(spec.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
const interval = 1000 / spec.rate;
const warmup = Math.floor((spec.warmupS ?? 0) * spec.rate);
const total = warmup + Math.floor(spec.durationS * spec.rate);
const latencies = new Float64Array(total);
/** Whether the warm-up is over (answers of warm-up requests are not counted). */
let measuring = false;
let answered = 0;
const outcome = { completed: 0, errors: 0, unexpected: 0 };
/** What each error or unexpected answer was: `status <code>`, or the socket error's code (`timeout` past 20 s). */
const kinds = {};
const count = (kind) => (kinds[kind] = (kinds[kind] ?? 0) + 1);
/** Requests of `slowMs` or more: due time (wall clock), latency, how late the pacer sent it. */
const slow = [];
/** id -> wall-clock time (ms) the request was sent, when `recordIds` (the webhook lag rows). */
const sentAt = spec.recordIds ? [] : undefined;

/**
 * The pacer's thread asks for a higher priority (nice -10; root or CAP_SYS_NICE may set it). It shares two cores with
 * the stack, and every wait of its own for a core (a request sent late, an answer read late) counted as the stack's
 * latency; a client on a machine of its own would not wait so. On Linux a priority is a thread's, set by its id.
 */
function raisePriority() {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    os.setPriority(tid, -10);
    return 'nice -10';
  } catch (err) {
    return `priority unchanged (${err.code ?? err.message})`;
  }
}
const priority = raisePriority();

const loopDelay = monitorEventLoopDelay({ resolution: 5 });
const gcPauses = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcPauses.push(e.duration);
});

function send(due, counted) {
  return new Promise((resolve) => {
    const late = performance.now() - due;
    let body = spec.body;
    if (spec.template !== undefined) {
      const id = randomUUID();
      body = spec.template.replaceAll('{{id}}', id);
      if (counted) sentAt?.push([id, performance.timeOrigin + performance.now()]);
    }
    const headers = { ...spec.headers };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method, headers, timeout: 20_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        if (!counted) return resolve();
        const took = performance.now() - due;
        latencies[answered++] = took;
        if (spec.slowMs !== undefined && took >= spec.slowMs) slow.push(`${new Date(performance.timeOrigin + due).toISOString()} ${took.toFixed(1)} ${spec.url} ${spec.rate}/s sent ${late.toFixed(1)} ms late`);
        if (res.statusCode === spec.expectStatus) outcome.completed++;
        else {
          outcome.unexpected++;
          count(`status ${res.statusCode}`);
        }
        resolve();
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => {
      if (counted) {
        outcome.errors++;
        count(err.code ?? err.message);
      }
      resolve();
    });
    req.end(body);
  });
}

async function run() {
  const answers = [];
  let start = performance.now();
  const begin = performance.now();
  await new Promise((done) => {
    let sent = 0;
    const tick = () => {
      const now = performance.now();
      for (; sent < total && begin + sent * interval <= now; sent++) {
        if (sent === warmup) {
          measuring = true;
          start = begin + sent * interval;
          loopDelay.enable();
          gcObserver.observe({ entryTypes: ['gc'] });
        }
        answers.push(send(begin + sent * interval, measuring));
      }
      if (sent >= total) return done();
      setTimeout(tick, Math.max(0, begin + sent * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(answers);
  const tookS = (performance.now() - start) / 1000;
  loopDelay.disable();
  gcObserver.disconnect();
  agent.destroy();
  const ms = (ns) => (ns / 1e6).toFixed(1);
  const loader = `load generator (worker thread, ${priority}): event-loop delay p99 ${ms(loopDelay.percentile(99))} ms, max ${ms(loopDelay.max)} ms; ${gcPauses.length} GC pauses, longest ${Math.max(0, ...gcPauses).toFixed(1)} ms`;
  const result = latencies.slice(0, answered);
  parentPort.postMessage({ latencies: result, ...outcome, kinds, tookS, slow, sentAt, loader }, [result.buffer]);
}

void run();
