// TypeScript to JavaScript in a sandbox's node, for a session's TypeScript
// cell (src/core/repl.js, after which the build puts this file) and a
// one-shot TypeScript run (src/core/js_run.py runs it before the program).
// It strips the types, as node 22's --experimental-strip-types does: the
// image's TypeScript compiler (Debian's node-typescript) transpiles one
// file at a time (transpileModule), which reports syntax errors only: a
// type error is not checked, and the code runs as the JavaScript it is.
//
// Not a protection: it runs inside the sandbox, under its limits.
'use strict';

const TYPESCRIPT_MISSING = "typescript: this sandbox's image has no TypeScript compiler " +
  '(Debian package node-typescript)';

// The image's TypeScript module, or null. Where node looks first, then
// Debian's own path for it (/usr/share/nodejs, which Debian's node searches
// and a node from elsewhere, as NodeSource's, does not).
function loadTypeScript() {
  for (const name of ['typescript', '/usr/share/nodejs/typescript', '/usr/lib/nodejs/typescript']) {
    try {
      return require(name);
    } catch (e) {
      if (e.code !== 'MODULE_NOT_FOUND')
        throw e;
    }
  }
  return null;
}

// code's JavaScript as {js} or, when it does not parse, {errors}: one line
// a syntax error, "FILE:LINE:COL - error TSn: text" (as tsc --pretty words
// it). ES2022 keeps let, const, class and await as written (a session's
// cell keeps its top-level declarations and await); CommonJS makes an
// import a require. sourceMap: a one-shot run's stack names the .ts lines.
function stripTypes(ts, code, fileName, sourceMap) {
  const out = ts.transpileModule(code, {
    fileName,
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      esModuleInterop: true,
      inlineSourceMap: Boolean(sourceMap),
      inlineSources: Boolean(sourceMap),
    },
  });
  const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (!errors.length)
    return { js: out.outputText };
  return {
    errors: errors.map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      if (!d.file || d.start === undefined)
        return `${fileName} - error TS${d.code}: ${text}`;
      const at = d.file.getLineAndCharacterOfPosition(d.start);
      return `${fileName}:${at.line + 1}:${at.character + 1} - error TS${d.code}: ${text}`;
    }).join('\n'),
  };
}

// A one-shot run's step before node runs the program: the TypeScript in
// file src to JavaScript in file dst. Exit 0, or 1 with the syntax errors
// on stderr, or 127 with the words for an image without TypeScript.
function stripFile(src, dst, name) {
  const fs = require('fs');
  const ts = loadTypeScript();
  if (!ts) {
    process.stderr.write(TYPESCRIPT_MISSING + '\n');
    process.exit(127);
  }
  const out = stripTypes(ts, fs.readFileSync(src, 'utf8'), name, true);
  if (out.errors) {
    process.stderr.write(out.errors + '\n');
    process.exit(1);
  }
  fs.writeFileSync(dst, out.js, { mode: 0o600 });
}
