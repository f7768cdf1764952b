// The playground's call as a client would make it: curl, Python,
// TypeScript and E2B's SDK. Built as text; the code is quoted for each.
import { el } from './dom.js';

const origin = () => location.origin;
const py = (s) => JSON.stringify(s); // a JSON string is a valid Python literal here
const pyLimits = (l) => Object.entries(l || {}).map(([k, v]) => `${k}=${v}`).join(', ');

function curl(b, session) {
  const q = (s) => `'${s.replace(/'/g, "'\\''")}'`;
  const run = `curl -sS ${origin()}/v1/${session ? 'sessions/$SID/runs' : 'runs'} \\\n` +
    `  -H "Authorization: Bearer $AGENTJAIL_KEY" -H 'Content-Type: application/json' \\\n` +
    `  -d ${q(JSON.stringify(session ? { code: b.code, language: b.language } : b))}`;
  if (!session) return run;
  const terms = {};
  if (b.limits) terms.limits = b.limits;
  if (b.allow_hosts) terms.allow_hosts = b.allow_hosts;
  return `SID=$(curl -sS ${origin()}/v1/sessions -H "Authorization: Bearer $AGENTJAIL_KEY" \\\n` +
    `  -H 'Content-Type: application/json' -d ${q(JSON.stringify(terms))} | jq -r .id)\n${run}`;
}

function python(b, session) {
  const args = [py(b.code)];
  if (b.language !== 'python') args.push(`language=${py(b.language)}`);
  const lim = pyLimits(b.limits);
  const hosts = b.allow_hosts ? `allow_hosts=${JSON.stringify(b.allow_hosts)}` : '';
  const open = session
    ? `with sb.session(${[lim && `limits=dict(${lim})`, hosts].filter(Boolean).join(', ')}) as s:\n    r = s.run(${args.join(', ')})\n`
    : `r = sb.run(${[...args, lim, hosts].filter(Boolean).join(', ')})\n`;
  return `import agentjail\n\nsb = agentjail.connect(${py(origin())})  # key: $AGENTJAIL_KEY\n${open}print(r.stdout, r.status)`;
}

function typescript(b, session) {
  const opts = { language: b.language };
  if (b.limits?.timeout_sec) opts.timeout = b.limits.timeout_sec;
  const call = `run(${JSON.stringify(b.code)}, ${JSON.stringify(opts)})`;
  return `import { connect } from '@agentjail/client';\n\nconst sb = connect({ url: ${JSON.stringify(origin())} }); // key: $AGENTJAIL_KEY\n` +
    (session ? `const s = await sb.session();\nconst ex = await s.${call};\nawait s.close();\n`
      : `const ex = await sb.${call};\n`) + 'console.log(ex.stdout, ex.status);';
}

function e2b(b) {
  const lang = b.language === 'python' ? '' : `, { language: ${JSON.stringify(b.language === 'bash' ? 'bash' : 'js')} }`;
  return `// E2B_API_URL=${origin()} E2B_SANDBOX_URL=${origin()} E2B_API_KEY=<your agentjail key>\n` +
    `import { Sandbox } from '@e2b/code-interpreter';\n\nconst sbx = await Sandbox.create();\n` +
    `const ex = await sbx.runCode(${JSON.stringify(b.code)}${lang});\nconsole.log(ex.logs.stdout);\nawait sbx.kill();`;
}

export function snippets(b, session) {
  const kinds = { curl: curl(b, session), Python: python(b, session), TypeScript: typescript(b, session), 'E2B SDK': e2b(b) };
  const pre = el('pre', { 'aria-label': 'Snippet' });
  const tabs = el('div', { class: 'tabs', role: 'tablist' });
  for (const [name, textOf] of Object.entries(kinds)) {
    const t = el('button', { type: 'button', role: 'tab', 'aria-selected': 'false', text: name });
    t.addEventListener('click', () => {
      for (const o of tabs.children) o.setAttribute('aria-selected', String(o === t));
      pre.textContent = textOf;
    });
    tabs.append(t);
  }
  tabs.firstChild.click();
  return el('div', {}, tabs, pre);
}
