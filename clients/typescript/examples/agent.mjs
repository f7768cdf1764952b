// An agent loop over OpenAI-style chat completions with the run_python tool,
// against an agentjail serve ($AGENTJAIL_URL, $AGENTJAIL_KEY). The model is
// whatever `complete(messages, tools)` calls; here, with TRANSCRIPT=file, a
// recorded conversation is replayed turn by turn, so the loop runs offline
// and the same way every time:
//
//   AGENTJAIL_URL=http://127.0.0.1:8910 AGENTJAIL_KEY=... \
//   TRANSCRIPT=transcript.json node agent.mjs
//
// With a real model, complete() is e.g.:
//   (await openai.chat.completions.create({ model, messages, tools })).choices[0].message
import { readFileSync } from 'node:fs';
import { connect } from '@agentjail/client';

const recorded = JSON.parse(readFileSync(process.env.TRANSCRIPT, 'utf8'));
let turn = 0;
async function complete(messages, tools) {
  if (!tools.some((t) => t.function.name === 'run_python')) throw new Error('no tool offered');
  return recorded.assistant[turn++];
}

const sandbox = connect();
const tool = await sandbox.tool({ session: true }); // state kept across the calls
const messages = [{ role: 'system', content: 'Answer with the help of run_python.' },
  { role: 'user', content: recorded.question }];
try {
  for (;;) {
    const reply = await complete(messages, [tool.openai()]);
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    messages.push(...await tool.handleOpenAICalls(reply.tool_calls));
  }
} finally {
  await tool.close();
}
for (const m of messages.filter((m) => m.role === 'tool')) {
  const out = m.content.split('--- stdout ---\n')[1]?.split('\n')[0];
  console.log(`tool ${m.tool_call_id}: ${m.content.split('\n')[0]}${out ? ` | ${out}` : ''}`);
}
console.log(`answer: ${messages.at(-1).content}`);
