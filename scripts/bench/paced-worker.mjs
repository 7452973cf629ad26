// The open-loop pacer of pnpm bench (see paced() in load.ts), run in a worker thread: its own heap and event loop,
// so the bench process's own garbage collection (its heap holds every earlier row's results and autocannon's
// buffers: pauses of 26-36 ms measured during a paced row) and bookkeeping neither delay a request nor the reading of
// its answer, and are not counted as the stack's latency.
//
// workerData: { url, method, headers, body, template, rate, warmupS, durationS, connections, expectStatus, slowMs, recordIds }
// Request i is due at i / rate s from the start and is sent then on a free connection (or waits for one); its latency
// counts from when it was due. The first `warmupS` seconds are paced the same way and not counted: a new thread's code
// is not compiled yet and its connections are not open (the first second of a cold pacer had latencies up to 133 ms). With `template`, each body is the template with every `{{id}}` replaced by a new UUID.
// Posts back { latencies, completed, errors, unexpected, tookS, slow, sentAt, warmSentAt, loader }.
import { randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

const spec = workerData;
const url = new URL(spec.url);
const interval = 1000 / spec.rate;
const warmup = Math.floor((spec.warmupS ?? 0) * spec.rate);
const total = warmup + Math.floor(spec.durationS * spec.rate);
const latencies = new Float64Array(total);
let answered = 0;
const outcome = { completed: 0, errors: 0, unexpected: 0 };
/** What each error or unexpected answer was: `status <code>`, or the socket error's code (`timeout` past 20 s). */
const kinds = {};
const count = (kind) => (kinds[kind] = (kinds[kind] ?? 0) + 1);
/** Requests of `slowMs` or more: due time (wall clock), latency, how late the pacer sent it. */
const slow = [];
/** id -> wall-clock time (ms) the request was sent, when `recordIds` (the webhook lag rows). */
const sentAt = spec.recordIds ? [] : undefined;
/** The same for the warm-up's requests (not counted: the lag rows report them apart). */
const warmSentAt = spec.recordIds ? [] : undefined;
const TIMEOUT_MS = 20_000;
/** Idle connections are closed after this long (checked once a second): below the gateway's 5 s keep-alive. */
const IDLE_CLOSE_MS = 2_000;

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

// HTTP/1.1 over plain keep-alive sockets, written here rather than through node:http: the pacer shares the two cores
// with the stack it measures, and node:http's agent, request and response objects cost it 0.3-0.4 CPU ms a request (a
// seventh of the machine at the half-max row's rate). A request is its bytes made once (the body's id filled in) and one socket
// write; an answer is read for its status line, Content-Length or chunked body, and `connection: close`.
const head = (() => {
  const lines = [`${spec.method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  // Host and the body's type and length are the pacer's own.
  for (const [k, v] of Object.entries(spec.headers)) if (!/^(host|content-type|content-length)$/i.test(k)) lines.push(`${k}: ${v}`);
  return lines.join('\r\n') + '\r\n';
})();
const requestBytes = (body) =>
  body === undefined ? Buffer.from(`${head}\r\n`, 'latin1') : Buffer.from(`${head}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);

/** Open connections with no request on them, the most recently used last (taken first, as node's agent does). */
const idle = [];
/** Requests due with every connection busy: sent as connections free up, oldest first. */
const queue = [];

/** Every open connection (the watchdog looks for requests past their time). */
const connections = new Set();

function newConnection() {
  const socket = net.connect({ host: url.hostname, port: Number(url.port) });
  socket.setNoDelay(true);
  const conn = { socket, job: undefined, buf: null, dead: false, timedOut: false, idleSince: 0, gone: undefined };
  connections.add(conn);
  socket.on('data', (chunk) => {
    conn.buf = conn.buf ? Buffer.concat([conn.buf, chunk]) : chunk;
    readAnswer(conn);
  });
  const gone = (err) => {
    if (conn.dead) return;
    conn.dead = true;
    connections.delete(conn);
    const i = idle.indexOf(conn);
    if (i >= 0) idle.splice(i, 1);
    // node:http names a connection closed before its answer "socket hang up" with the code ECONNRESET.
    if (conn.job) finish(conn.job, undefined, conn.timedOut ? 'timeout' : (err?.code ?? 'ECONNRESET'));
    conn.job = undefined;
    socket.destroy();
    pump();
  };
  socket.on('error', gone);
  socket.on('close', () => gone());
  conn.gone = gone;
  return conn;
}

/** Reads every complete answer in the connection's buffer (there is at most one: one request at a time). */
function readAnswer(conn) {
  const buf = conn.buf;
  if (!buf) return;
  // Bytes with no request on the connection are not an answer to the next one.
  if (!conn.job) {
    conn.buf = null;
    return;
  }
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return;
  const headText = buf.toString('latin1', 0, end);
  const status = Number(headText.slice(9, 12));
  const lower = headText.toLowerCase();
  const lengthAt = lower.indexOf('\r\ncontent-length:');
  let bodyEnd;
  if (lengthAt >= 0) {
    const lineEnd = lower.indexOf('\r\n', lengthAt + 2);
    bodyEnd = end + 4 + Number.parseInt(lower.slice(lengthAt + 17, lineEnd < 0 ? undefined : lineEnd), 10);
    if (buf.length < bodyEnd) return;
  } else if (lower.includes('\r\ntransfer-encoding: chunked')) {
    let at = end + 4;
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd < 0) return;
      const size = Number.parseInt(buf.toString('latin1', at, lineEnd), 16);
      at = lineEnd + 2 + size + 2;
      if (buf.length < at) return;
      if (size === 0) break;
    }
    bodyEnd = at;
  } else {
    bodyEnd = end + 4; // no body (204, 304) or one that ends with the connection: not sent by the gateway
  }
  conn.buf = buf.length > bodyEnd ? buf.subarray(bodyEnd) : null;
  const job = conn.job;
  conn.job = undefined;
  finish(job, status);
  if (lower.includes('\r\nconnection: close')) {
    conn.socket.destroy();
    return;
  }
  conn.idleSince = performance.now();
  idle.push(conn);
  pump();
}

function finish(job, status, error) {
  if (!job.counted) return job.resolve();
  const took = performance.now() - job.due;
  latencies[answered++] = took;
  if (spec.slowMs !== undefined && took >= spec.slowMs) slow.push(`${new Date(performance.timeOrigin + job.due).toISOString()} ${took.toFixed(1)} ${spec.url} ${spec.rate}/s sent ${job.late.toFixed(1)} ms late`);
  if (error !== undefined) {
    outcome.errors++;
    count(error);
  } else if (status === spec.expectStatus) outcome.completed++;
  else {
    outcome.unexpected++;
    count(`status ${status}`);
  }
  job.resolve();
}

/** Sends waiting requests on idle connections, opening new ones up to `connections`. */
function pump() {
  while (queue.length) {
    let conn = idle.pop();
    if (!conn) {
      if (connections.size >= spec.connections) return;
      conn = newConnection();
    }
    const job = queue.shift();
    job.late = performance.now() - job.due;
    job.sentAt = performance.now();
    conn.job = job;
    conn.socket.write(job.bytes);
  }
}

// A request with no answer after 20 s is given up (its connection closed): checked once a second, not by a timer each.
// A connection idle for IDLE_CLOSE_MS is closed by the same check, well before the gateway's keep-alive timeout (5 s):
// a request written on a connection the server is closing at that moment gets a reset, which is the load generator's
// race, not the stack's answer (a run at 100/s on 10 connections leaves most of them idle for seconds).
const watchdog = setInterval(() => {
  const now = performance.now();
  for (const conn of [...idle]) if (now - conn.idleSince > IDLE_CLOSE_MS) conn.gone();
  for (const conn of connections) {
    if (conn.job && now - conn.job.sentAt > TIMEOUT_MS) {
      conn.timedOut = true;
      conn.socket.destroy();
    }
  }
}, 1000);

function send(due, counted) {
  return new Promise((resolve) => {
    let body = spec.body;
    if (spec.template !== undefined) {
      const id = randomUUID();
      body = spec.template.replaceAll('{{id}}', id);
      if (spec.recordIds) (counted ? sentAt : warmSentAt).push([id, performance.timeOrigin + performance.now()]);
    }
    queue.push({ due, counted, resolve, bytes: requestBytes(body), late: 0, sentAt: 0 });
    pump();
  });
}

async function run() {
  const answers = [];
  let start = performance.now();
  let measuring = false;
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
  clearInterval(watchdog);
  for (const conn of idle) conn.socket.destroy();
  const ms = (ns) => (ns / 1e6).toFixed(1);
  const loader = `load generator (worker thread, ${priority}): event-loop delay p99 ${ms(loopDelay.percentile(99))} ms, max ${ms(loopDelay.max)} ms; ${gcPauses.length} GC pauses, longest ${Math.max(0, ...gcPauses).toFixed(1)} ms`;
  const result = latencies.slice(0, answered);
  parentPort.postMessage({ latencies: result, ...outcome, kinds, tookS, slow, sentAt, warmSentAt, loader }, [result.buffer]);
}

void run();
