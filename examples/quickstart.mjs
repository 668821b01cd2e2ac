// The README's example, kept runnable: `npm run build && node examples/quickstart.mjs`.
import { JobRuntime, createTools } from 'heph-jobs';

const runtime = await JobRuntime.start();
// Start a dev server and answer once it says it is ready (or after 10 s), holding port:8765.
const server = await runtime.background({
  command: 'python3 -u -m http.server 8765',
  locks: ['port:8765'],
  waitMs: 10_000,
  until: 'Serving HTTP',
});
console.log(server.text);

// The same, as a model sees it: tools with approvals and exact permission patterns.
const tools = createTools(runtime, { approve: async ({ pattern }) => (pattern.startsWith('job_kill(') ? 'once' : 'deny') });
console.log(await tools.job_status.run({ id: server.id, lines: 5 }));
console.log(await tools.job_kill.run({ id: server.id })); // TERM, 2 s grace, KILL; returns when all is gone
await runtime.close(); // ends every job, then the supervisor
