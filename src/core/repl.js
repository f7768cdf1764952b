// agentjail's JavaScript session interpreter: the Node program that keeps a
// session's JavaScript state, on every tier. The session's Python
// interpreter (src/core/repl.py, op "js") starts it as its own child on the
// first JavaScript call, as `node [flags] -e <this file> REQ_FD REPLY_FD`,
// and forwards each JavaScript cell to it. It runs as the interpreter does:
// the same user, namespaces, rlimits, cgroups and seccomp filter, set from
// outside before either started.
//
// fd 1 and 2 are the session's stdout and stderr (the interpreter's own), so
// console.log reaches the host as it is written (Node writes pipes and files
// synchronously on Linux). REQ_FD carries one JSON object a line from
// repl.py, REPLY_FD one a line back (a private protocol of the two):
//
//   (at start)                     -> {"ready": true}
//   {"cell": n, "code": text}      -> {"exit": 0 | 1, "cpu_us": n, "rss_kb": n}
//   {"cell": n, "code": text, "ts": true}  (TypeScript: its types stripped
//                                   first, src/core/ts_strip.js)
//                                  -> the same, exit 1 with its syntax
//                                     errors on stderr; or {"refused":
//                                     words} where the image has no
//                                     TypeScript compiler
//
// A cell runs in one vm context kept for the session, through Node's own
// REPL evaluator (require('repl')'s eval): top-level let, const, class and
// function declarations persist from call to call as they do at Node's
// prompt, top-level await works (Node rewrites such a cell into an async
// function whose declarations it hoists), and the completion value of the
// last statement is shown as Node's prompt shows it (util.inspect), except
// undefined (as Python's None). An uncaught error prints its stack on stderr
// (without this file's and Node's REPL frames) and the cell exits 1. An error
// thrown by a callback after its cell ended is printed on stderr when it
// happens.
//
// This file is not a protection: a cell may rewrite any of it. What it says
// reaches the host through repl.py and then the host's own checks.
'use strict';
const fs = require('fs');
const net = require('net');
const readline = require('readline');
const repl = require('repl');
const util = require('util');
const { PassThrough } = require('stream');

const REQUESTS = Number(process.argv[1]);
const REPLIES = Number(process.argv[2]);

function reply(obj) {
  const data = Buffer.from(JSON.stringify(obj) + '\n');
  for (let off = 0; off < data.length;)
    off += fs.writeSync(REPLIES, data, off);
}

// stdout and stderr written as the cell writes them: a pipe's writes
// block (libuv would otherwise queue what the pipe cannot take at once, and
// a cell's output would reach the host after its reply, past the output
// cap's reach and out of its call).
for (const stream of [process.stdout, process.stderr]) {
  if (stream._handle && typeof stream._handle.setBlocking === 'function')
    stream._handle.setBlocking(true);
}

// Node's REPL evaluator, never reading a terminal: its input is a stream
// nothing writes, its output (the context's console) the session's stdout.
const server = repl.start({
  prompt: '',
  input: new PassThrough(),
  output: process.stdout,
  terminal: false,
  useGlobal: false,
  ignoreUndefined: true,
  preview: false,
});
// This program's arguments are not the cells'.
process.argv.splice(1, 2);

// The frames of the evaluator itself (vm, repl, domain, timers) after the
// cell's own: a stack reads as the cell's, as a file's would.
function trimmed(stack) {
  const lines = String(stack).split('\n');
  const cut = lines.findIndex((l) => /^\s+at .*\(node:(vm|repl|domain):/.test(l) ||
                                     /^\s+at (ContextifyScript|Script)\.runInContext/.test(l));
  return (cut < 0 ? lines : lines.slice(0, cut)).join('\n');
}

function describe(err) {
  // A TypeScript cell that does not parse: the compiler's own lines.
  if (err && err.tsErrors)
    return err.stack;
  // A cell that does not parse: Node's REPL calls it Recoverable (it would
  // wait for more lines); the SyntaxError inside is what the cell gets.
  if (err instanceof repl.Recoverable && err.err)
    err = err.err;
  if (err instanceof Error || (err && typeof err.stack === 'string')) {
    const text = util.inspect(err);
    const stack = typeof err.stack === 'string' ? err.stack : '';
    return 'Uncaught ' + (stack && text.startsWith(stack) ? trimmed(stack) + text.slice(stack.length)
                                                         : trimmed(text));
  }
  return 'Uncaught ' + util.inspect(err);
}

// The cell being run: its end (error or value) settles it once.
let current = null;
// The TypeScript compiler, loaded on the first TypeScript cell (null: the
// image has none).
let typescript;

// Node's REPL hands an uncaught error, a cell's or a callback's later, to
// its domain; it is the cell's end while a cell runs, else printed.
server._domain.removeAllListeners('error');
server._domain.on('error', (err) => {
  if (current)
    current(err);
  else
    process.stderr.write(describe(err) + '\n');
});

function usage() {
  const u = process.resourceUsage();
  return { cpu: u.userCPUTime + u.systemCPUTime, rss: u.maxRSS };
}

function runCell(req) {
  const before = usage();
  const done = (err, value) => {
    if (current !== done)
      return;
    current = null;
    let exit = 0;
    if (err) {
      process.stderr.write(describe(err) + '\n');
      exit = 1;
    } else if (value !== undefined) {
      process.stdout.write(util.inspect(value) + '\n');
    }
    // What is still queued (a stream that could not block) is written
    // before the reply: the host takes the reply as the cell's end.
    let pending = 2;
    const flushed = () => {
      if (--pending)
        return;
      const after = usage();
      reply({ exit, cpu_us: after.cpu - before.cpu, rss_kb: after.rss });
    };
    process.stdout.write('', flushed);
    process.stderr.write('', flushed);
  };
  let code = String(req.code);
  const name = '<cell ' + Number(req.cell) + '>';
  if (req.ts) {
    // A TypeScript cell is the JavaScript its types stripped leave, run
    // as a JavaScript cell in the same context: the two share the state.
    if (typescript === undefined)
      typescript = loadTypeScript();
    if (!typescript)
      return reply({ refused: TYPESCRIPT_MISSING });
    const out = stripTypes(typescript, code, name + '.ts', false);
    if (out.errors) {
      current = done;
      return done({ stack: out.errors, tsErrors: true });
    }
    code = out.js;
  }
  current = done;
  try {
    server.eval(code, server.context, name, done);
  } catch (err) {
    done(err);
  }
}

const input = new net.Socket({ fd: REQUESTS, readable: true, writable: false });
const lines = readline.createInterface({ input, crlfDelay: Infinity });
lines.on('line', (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    return; // not a request: never answered (only a cell could write one)
  }
  runCell(req);
});
// repl.py is gone, or closed the pipe: end now, whatever a cell left.
lines.on('close', () => process.exit(0));
input.on('error', () => process.exit(0));
reply({ ready: true });
