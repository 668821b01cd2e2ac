/**
 * The tool definitions in process, against a scripted runtime: schemas, the input validator and
 * its sentences, every runtime error as an answer, what `background` passes to the runtime
 * (context, defaults, rules + locks), and how job_status / job_kill treat their own rules.
 * (Real processes: test/integration/tools.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import {
  HephError,
  InvalidInputError,
  JobLimitError,
  JobNotFoundError,
  RuntimeClosedError,
  SpawnError,
  SupervisorLostError,
  createTools,
  type BackgroundInput,
  type JobReport,
  type ToolRuntime,
} from '../../src/index.js';
import { LockTable, LockTimeoutError, normalizeResources, type NormalizedResource } from '../../src/locks/index.js';
import { normalizeOptions } from '../../src/runtime/options.js';
import { validate } from '../../src/tools/validate.js';
import { describeAccepted } from '../../src/wording/index.js';
import { backgroundSchema, jobStatusSchema } from '../../src/tools/schema.js';

const limits = { maxJobs: 8, outputLines: normalizeOptions({}).outputLines };

interface FakeJob {
  id: number;
  command: string;
  state: JobReport['state'];
  cleanedUp?: boolean;
  held?: NormalizedResource[];
  /** What a `waiting` job waits for. */
  wants?: NormalizedResource[];
}

/** A runtime whose jobs are plain data; records what the tools asked of it. */
function fakeRuntime(jobs: FakeJob[] = [], overrides: Partial<ToolRuntime> = {}) {
  const calls: { background: BackgroundInput[]; status: unknown[][]; kill: number[]; userKill: number[] } = {
    background: [],
    status: [],
    kill: [],
    userKill: [],
  };
  const settings = normalizeOptions({ cwd: '/runtime/cwd', env: { FROM: 'runtime' } });
  const report = (job: FakeJob): JobReport => ({
    id: job.id,
    state: job.state,
    exitCode: null,
    signal: null,
    command: job.command,
    pid: 100 + job.id,
    startedAt: 0,
    endedAt: null,
    elapsedMs: 0,
    cleanedUp: job.cleanedUp ?? false,
    reason: null,
    output: null,
    header: `job ${job.id} ${job.state} 0:00 ${job.command}`,
    text: `report of job ${job.id}`,
  });
  const find = (id: number) => {
    const job = jobs.find((candidate) => candidate.id === id);
    if (!job) throw new JobNotFoundError(id, jobs.map((candidate) => candidate.id));
    return job;
  };
  const runtime: ToolRuntime = {
    settings,
    locks: new LockTable(),
    async background(input) {
      calls.background.push(input);
      return { ...report({ id: jobs.length, command: input.command, state: 'running' }), text: `started ${input.command}` };
    },
    async status(id, options) {
      calls.status.push([id, options]);
      return report(find(id));
    },
    list: () => jobs.map(report),
    async kill(id) {
      calls.kill.push(id);
      return { ...report(find(id)), text: `killed job ${id}` };
    },
    async userKill(id) {
      calls.userKill.push(id);
      return { ...report(find(id)), text: `user killed job ${id}` };
    },
    job: (id) => {
      const job = jobs.find((candidate) => candidate.id === id);
      return job === undefined ? undefined : report(job);
    },
    jobIds: () => jobs.map((job) => job.id),
    running: () => jobs.filter((job) => job.state === 'running'),
    held: (id) => [...(find(id).held ?? [])],
    wanted: (id) => (find(id).state === 'waiting' ? [...(find(id).wants ?? [])] : []),
    ...overrides,
  };
  return { runtime, calls };
}

const once = async () => 'once' as const;

describe('schemas', () => {
  it('are JSON Schema objects that accept no unknown field, with descriptions for a model', () => {
    const { runtime } = fakeRuntime();
    const tools = createTools(runtime);
    for (const tool of tools.all) {
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      // Short (every request carries them: test/unit/tool-flavors.test.ts measures them), not empty.
      expect(tool.description).toMatch(/^[A-Z].{40,}\.$/);
      expect(JSON.parse(JSON.stringify(tool.inputSchema))).toEqual(tool.inputSchema);
    }
    expect(tools.background.inputSchema).toMatchObject({ required: ['command'] });
    expect(tools.job_kill.inputSchema).toMatchObject({ required: ['id'] });
    expect(tools.background.description).toContain('At most 8 jobs run at once');
    // The bounds are the validator's (the schema a model is shown has none: tool-flavors.test.ts).
    expect(describeAccepted(jobStatusSchema(limits).check)).toBe(
      '{"id"?: whole number from 0 to 9007199254740991, "lines"?: whole number from 0 to 1000000, ' +
        '"since"?: whole number from -1 to 9007199254740991, "filter"?: string, "max_bytes"?: whole number from 1 to 65536, ' +
        '"wait"?: number from 0 to 600, "until"?: string of 1 to 1000 characters, "until_port"?: whole number from 1 to 65535, "notify"?: string of 1 to 1000 characters}',
    );
    expect(tools.all.map((tool) => `${tool.name}:${tool.level}`)).toEqual(['background:2', 'job_status:0', 'job_kill:2', 'job_input:2', 'job_restart:2']);
  });

  it('quote the runtime’s own limits', () => {
    const { runtime } = fakeRuntime([], {});
    Object.assign(runtime, { settings: normalizeOptions({ maxJobs: 3, outputLines: 500 }) });
    const tools = createTools(runtime);
    expect(tools.background.description).toContain('At most 3 jobs run at once');
    expect(tools.job_status.description).toContain('the last 500 are kept');
  });
});

describe('validate', () => {
  const schema = backgroundSchema(limits).check;
  it.each([
    [undefined, 'the input must be a JSON object; received nothing'],
    [[], 'the input must be a JSON object; received an array of 0'],
    ['npm run dev', 'the input must be a JSON object; received the string "npm run dev"'],
    [{}, 'command is required and missing'],
    [{ command: 5 }, 'command must be a string of 1 to 131071 characters; received the number 5'],
    [{ command: '' }, 'command must be a string of 1 to 131071 characters; received the string ""'],
    [{ command: 'x', cwd: '/' }, 'unknown field "cwd" (the accepted fields are "command", "locks", "stdin", "merge", "tty", "timeout", "wait", "until", "until_port", "notify")'],
    [{ command: 'x', locks: 'port:1' }, 'locks must be an array of at most 32 strings of 1 to 1024 characters; received the string "port:1"'],
    [{ command: 'x', locks: ['port:1', 2] }, 'locks[1] must be a string of 1 to 1024 characters; received the number 2'],
    [{ command: 'x', locks: Array(33).fill('port:1') }, 'locks must be an array of at most 32 strings of 1 to 1024 characters; received an array of 33'],
  ])('%j: %s', (input, problem) => {
    expect(validate(schema, input)).toEqual({ ok: false, problem });
  });

  it('accepts what the schema allows', () => {
    expect(validate(schema, { command: 'x', locks: ['port:1'] })).toEqual({ ok: true, value: { command: 'x', locks: ['port:1'] } });
  });
});

describe('tool errors are answers', () => {
  const jobs: FakeJob[] = [{ id: 0, command: 'npm run dev', state: 'running' }];

  it.each([
    ['job_status', { id: -1 }, /^job_status: bad input: id must be a whole number from 0 to 9007199254740991; received the number -1\. Nothing was run\.$/],
    ['job_status', { id: 1.5 }, /id must be a whole number .*received the number 1\.5\./],
    ['job_status', { id: 1e300 }, /id must be a whole number from 0 to 9007199254740991; received the number 1e\+300\./],
    ['job_status', { id: '0.5' }, /id must be a whole number .*received the string "0\.5"\./],
    ['job_status', { id: 0, lines: -5 }, /lines must be a whole number from 0 to 1000000; received the number -5\./],
    ['job_status', { id: 0, lines: 10, follow: true }, /unknown field "follow" \(the accepted fields are "id", "lines", "since", "filter", "max_bytes", "wait", "until", "until_port", "notify"\)/],
    ['job_status', { id: 0, until: '(' }, /^job_status: bad input: until is not a regular expression RE2 can compile \(missing closing \): .*\); wait patterns are matched by RE2[^.]*\. Nothing was run\.$/],
    ['job_status', { lines: 10 }, /^job_status: bad input: "lines" needs an "id".* Use \{"id": 0, "lines": 200\} for one job, or \{\} to list every job\.$/],
    ['job_status', { id: 5 }, /^job_status: there is no job 5\. The jobs are 0\. job_status \{\} lists every job\.$/],
    ['job_kill', {}, /^job_kill: bad input: id is required and missing\. Nothing was run\.$/],
    ['job_kill', { id: 0, signal: 'HUP' }, /signal must be one of "INT", "TERM", "KILL"; received the string "HUP"/],
    ['job_kill', { id: 5 }, /^job_kill: there is no job 5\. The jobs are 0\. job_status \{\} lists every job\.$/],
    ['background', { command: '   ' }, /^background: bad input: command has no text; give the shell command line to run, e\.g\. \{"command": "npm run dev"\}\. Nothing was run\.$/],
    ['background', { command: 'a\0b' }, /^background: bad input: command contains a NUL character/],
    ['background', { command: 'é'.repeat(70_000) }, /^background: bad input: command is 140000 bytes long; at most 131071 bytes are accepted\. Put a long script in a file/],
    ['background', { command: 'x', locks: ['Port:1'] }, /^background: bad lock: bad lock resource "Port:1": the kind "Port" may only contain lowercase letters.* Nothing was started\.$/],
    ['background', { command: 'x', shell: 'bash' }, /^background: bad input: unknown field "shell" \(the accepted fields are "command", "locks", "stdin", "merge", "tty", "timeout", "wait", "until", "until_port", "notify"\)\. Nothing was run\.$/],
    ['background', { command: 'x', timeout: 0 }, /timeout must be a number above 0 and up to 604800; received the number 0/],
  ] as const)('%s %j', async (name, input, answer) => {
    const { runtime, calls } = fakeRuntime(jobs);
    const asked: string[] = [];
    const tools = createTools(runtime, { approve: async (request) => (asked.push(request.pattern), 'once') });
    expect(await tools[name].run(input)).toMatch(answer);
    expect(calls.background).toEqual([]);
    expect(calls.kill).toEqual([]);
    expect(asked).toEqual([]); // nothing is asked about a call that cannot run
  });

  it('maps every runtime error to one sentence, naming what to do', async () => {
    const cases: [unknown, RegExp][] = [
      [new JobLimitError(2, [{ id: 0, command: 'a' }, { id: 1, command: 'b' }]), /^background is refused: 2 of 2 jobs are running, the most allowed at once: job 0 \(a\), job 1 \(b\)\. Stop one with job_kill, or wait for one to end, then try again\. Nothing was started\.$/],
      [new InvalidInputError('env must be an object of strings; received null'), /^background: bad input: env must be an object of strings; received null\. Nothing was started\.$/],
      [new SpawnError('cannot create the cgroup: EACCES'), /^background: the job could not start: cannot create the cgroup: EACCES\. Fix the command/],
      [new SupervisorLostError('the supervisor exited with signal SIGKILL'), /^background: the job supervisor died during this call \(the supervisor exited with signal SIGKILL\)\. .* try again\.$/],
      [new RuntimeClosedError(), /^background: the session's job runtime is closed: no job can be started, read or stopped any more\. Nothing was started\.$/],
      [new LockTimeoutError('gave up on port:5173 after 1000 ms; held by job 2 (vite)'), /^background: gave up waiting for its locks: gave up on port:5173 after 1000 ms; held by job 2 \(vite\)\. Nothing was started\. Try again once the holder has ended\.$/],
      [new HephError('ERR_SOMETHING_NEW', 'a new failure'), /^background failed: a new failure\. \(ERR_SOMETHING_NEW\) Nothing was started\.$/],
      [new RangeError('option lockTimeoutMs must be an integer'), /^background: bad input: option lockTimeoutMs must be an integer\. Nothing was started\.$/],
      [new Error('boom'), /^background failed unexpectedly: boom\. This is a fault in heph-jobs or its host, not in the call\.$/],
    ];
    for (const [error, answer] of cases) {
      const { runtime } = fakeRuntime([], {
        background: async () => {
          throw error;
        },
      });
      expect(await createTools(runtime, { approve: once }).background.run({ command: 'x' })).toMatch(answer);
    }
  });

  it('refuses a ninth job before asking the user, naming the running jobs', async () => {
    const running: FakeJob[] = Array.from({ length: 8 }, (_, id) => ({ id, command: `server ${id}`, state: 'running' }));
    const { runtime, calls } = fakeRuntime([...running, { id: 8, command: 'done', state: 'exited', cleanedUp: true }]);
    const asked: string[] = [];
    const tools = createTools(runtime, { approve: async (request) => (asked.push(request.pattern), 'once') });
    const answer = await tools.background.run({ command: 'one more' });
    expect(answer).toMatch(/^background is refused: 8 of 8 jobs are running, the most allowed at once: job 0 \(server 0\), .*job 7 \(server 7\)\. /);
    expect(asked).toEqual([]);
    expect(calls.background).toEqual([]);
  });
});

describe('background passes the call to the runtime', () => {
  it('with the context, else the defaults, else the runtime’s; rules expanded and the call’s locks added', async () => {
    const { runtime, calls } = fakeRuntime();
    const tools = createTools(runtime, {
      approve: once,
      rules: { background: ['worktree:{ref}', { resource: 'path:{worktree}/node_modules', mode: 'shared' }] },
      defaults: { cwd: '/repo/main', ref: 'main' },
    });
    expect(await tools.background.run({ command: 'npm run dev', locks: ['port:5173', 'worktree:main'] })).toBe('started npm run dev');
    expect(await tools.background.run({ command: 'make' }, { cwd: '/repo/wt/x', ref: 'x', env: { A: '1' } })).toBe('started make');
    expect(calls.background[0]).toEqual({
      command: 'npm run dev',
      cwd: '/repo/main',
      env: { FROM: 'runtime' },
      ref: 'main',
      locks: [
        { resource: 'path:/repo/main/node_modules', mode: 'shared' },
        { resource: 'worktree:main', mode: 'exclusive' },
        { resource: 'port:5173', mode: 'exclusive' },
        { resource: 'worktree:main', mode: 'exclusive' },
      ],
      // A locked call answers within its wait (the default when it gives none), job waiting or not.
      answerWithinMs: 30_000,
    });
    expect(calls.background[1]).toMatchObject({ command: 'make', cwd: '/repo/wt/x', env: { A: '1' }, ref: 'x' });
    expect(normalizeResources(calls.background[1]!.locks!).map((res) => res.resource)).toEqual(['path:/repo/wt/x/node_modules', 'worktree:x']);
    const plain = createTools(runtime, { approve: once });
    await plain.background.run({ command: 'true' });
    expect(calls.background[2]).toEqual({ command: 'true', cwd: '/runtime/cwd', env: { FROM: 'runtime' } });
  });

  it('a rule that needs a variable the call lacks is a host problem, said as such', async () => {
    const { runtime, calls } = fakeRuntime();
    const tools = createTools(runtime, { approve: once, rules: { background: ['worktree:{ref}'] } });
    expect(await tools.background.run({ command: 'true' })).toMatch(
      /^background cannot run: the host's lock rules are misconfigured: lock rule template "worktree:\{ref\}" for "background" needs \{ref\}.* tell the user\.$/,
    );
    expect(calls.background).toEqual([]);
  });

  it('malformed configuration fails at createTools, not at the first call', () => {
    const { runtime } = fakeRuntime();
    expect(() => createTools(runtime, { rules: { background: 'worktree:{ref}' } as never })).toThrow(/lock rules for "background" must be an array/);
    expect(() => createTools(runtime, { approve: 'yes' as never })).toThrow(/approve must be a function/);
    expect(() => createTools(runtime, { defaults: { cwd: 5 } as never })).toThrow(/defaults\.cwd must be a string/);
  });
});

describe('job_status and job_kill with lock rules', () => {
  const worktree = normalizeResources(['worktree:main']);
  const rules = { job_status: ['worktree:{ref}'], job_kill: ['worktree:{ref}'] };

  it('fail at once when their rules overlap what the target holds, naming it and /job-kill; nothing is asked or taken', async () => {
    const { runtime, calls } = fakeRuntime([
      { id: 0, command: 'other', state: 'running' },
      { id: 1, command: 'npm run dev', state: 'running', held: [...worktree, ...normalizeResources(['port:5173'])] },
    ]);
    const asked: string[] = [];
    const tools = createTools(runtime, { rules, defaults: { ref: 'main' }, approve: async (request) => (asked.push(request.pattern), 'once') });
    const expected = (tool: string, verb: string) =>
      `${tool} cannot run: its lock rules need worktree:main, and job 1 (npm run dev) holds worktree:main until it has ended, ` +
      `so this call would wait on its own target. Nothing was ${verb}. Ask the user to run /job-kill 1, which stops the job without waiting for any lock.`;
    expect(await tools.job_status.run({ id: 1 })).toBe(expected('job_status', 'read'));
    expect(await tools.job_kill.run({ id: 1 })).toBe(expected('job_kill', 'stopped'));
    expect(await tools.job_status.run({})).toBe(expected('job_status', 'read'));
    expect(asked).toEqual([]);
    expect(calls.kill).toEqual([]);
    expect(calls.status).toEqual([]);
    expect(runtime.locks.holding).toBe(0);
    // Another target that holds nothing is read, and /job-kill ignores rules altogether.
    expect(await tools.job_status.run({ id: 0 })).toBe('report of job 0');
    expect(await tools.userKill(1)).toBe('user killed job 1');
    expect(await tools.userKill(' 1 ')).toBe('user killed job 1');
  });

  it('fail at once as well when the target still waits for what their rules need; a shared want beside a shared rule is no conflict', async () => {
    const { runtime, calls } = fakeRuntime([
      { id: 0, command: 'npm run build', state: 'waiting', wants: worktree },
      { id: 1, command: 'npm run lint', state: 'waiting', wants: normalizeResources([{ resource: 'worktree:main', mode: 'shared' }]) },
    ]);
    const tools = createTools(runtime, { rules, defaults: { ref: 'main' }, approve: once });
    expect(await tools.job_kill.run({ id: 0 })).toBe(
      'job_kill cannot run: its lock rules need worktree:main, and job 0 (npm run build) is waiting for worktree:main and will ' +
        'hold it until it has ended, so this call would wait on its own target. Nothing was stopped. Ask the user to run ' +
        '/job-kill 0, which stops the job without waiting for any lock.',
    );
    expect(calls.kill).toEqual([]);
    expect(runtime.locks.holding).toBe(0);
    const shared = createTools(runtime, { rules: { job_status: [{ resource: 'worktree:{ref}', mode: 'shared' }] }, defaults: { ref: 'main' } });
    expect(await shared.job_status.run({ id: 1 })).toBe('report of job 1');
  });

  it('otherwise hold their own rules for the call and release them after, even when the call fails', async () => {
    const { runtime } = fakeRuntime([{ id: 0, command: 'vite', state: 'running', held: normalizeResources(['port:5173']) }]);
    const seen: string[][] = [];
    const statusOf = runtime.status.bind(runtime);
    runtime.status = async (id, options) => {
      seen.push(runtime.locks.snapshot().holders.flatMap((holder) => holder.resources.map((res) => `${holder.owner.label} ${res.resource}`)));
      return statusOf(id, options);
    };
    const tools = createTools(runtime, { rules, defaults: { ref: 'main' }, approve: once });
    expect(await tools.job_status.run({ id: 0, lines: 3 })).toBe('report of job 0');
    expect(seen).toEqual([['job_status {"id": 0} worktree:main']]);
    expect(runtime.locks.holding).toBe(0);
    runtime.kill = async () => {
      throw new SupervisorLostError('gone');
    };
    expect(await tools.job_kill.run({ id: 0 })).toMatch(/^job_kill: the job supervisor died during this call/);
    expect(runtime.locks.holding).toBe(0);
  });

  it('job_kill asks before it takes its locks, so none is held while the user decides', async () => {
    const { runtime } = fakeRuntime([{ id: 0, command: 'vite', state: 'running' }]);
    let heldWhileAsking = -1;
    const tools = createTools(runtime, {
      rules,
      defaults: { ref: 'main' },
      approve: async () => {
        heldWhileAsking = runtime.locks.holding;
        return 'once';
      },
    });
    expect(await tools.job_kill.run({ id: 0 })).toBe('killed job 0');
    expect(heldWhileAsking).toBe(0);
  });
});

describe('call: the answer as data', () => {
  it('a report carries the job (or the list) it was made from; a refusal is isError with no report', async () => {
    const { runtime } = fakeRuntime([{ id: 0, command: 'vite', state: 'running' }]);
    const tools = createTools(runtime, { approve: once });
    const started = await tools.background.call({ command: 'make' });
    expect(started).toMatchObject({ text: 'started make', isError: false, job: { id: 1, command: 'make', text: 'started make' } });
    const list = await tools.job_status.call({});
    expect(list).toMatchObject({ isError: false, list: { running: 1, maxJobs: 8, jobs: [{ id: 0 }] } });
    expect(list.text).toBe(list.list!.text);
    expect(await tools.job_status.call({ id: 0 })).toMatchObject({ text: 'report of job 0', isError: false, job: { id: 0 } });
    const bad = await tools.job_status.call({ id: -1 });
    expect(bad).toMatchObject({ isError: true });
    expect(bad.job).toBeUndefined();
    expect(bad.text).toBe(await tools.job_status.run({ id: -1 }));
    expect(await tools.job_kill.call({ id: 9 })).toMatchObject({ isError: true, text: expect.stringMatching(/^job_kill: there is no job 9\./) });
    const denied = await createTools(runtime, { approve: async () => 'deny' }).background.call({ command: 'make' });
    expect(denied).toMatchObject({ isError: true, text: expect.stringMatching(/^The user denied background\(make\)/) });
    expect(await tools.userKillCall('0')).toMatchObject({ isError: false, text: 'user killed job 0', job: { id: 0 } });
    expect(await tools.userKillCall('zero')).toMatchObject({ isError: true, text: expect.stringMatching(/^\/job-kill: "zero" is not a job number/) });
  });
});

describe('a call in strict form (OpenAI strict: every field sent, null for one left out)', () => {
  it('runs: null is read as the field left out, in every tool', async () => {
    const { runtime, calls } = fakeRuntime([{ id: 0, command: 'npm run dev', state: 'running' }]);
    const tools = createTools(runtime, { approve: once });
    const started = await tools.background.call({ command: 'npm run dev', locks: null, stdin: null, merge: null, timeout: null, wait: null, until: null });
    expect(started).toMatchObject({ isError: false, text: 'started npm run dev' });
    expect(calls.background).toHaveLength(1);
    expect(Object.keys(calls.background[0]!).sort()).toEqual(['command', 'cwd', 'env']);
    expect(await tools.job_status.run({ id: 0, lines: null, since: null, max_bytes: null, wait: null, until: null })).toBe('report of job 0');
    expect(calls.status).toEqual([[0, {}]]);
    expect(await tools.job_status.run({ id: null, lines: null, since: null, max_bytes: null, wait: null, until: null })).toBe(await tools.job_status.run({}));
    expect(await tools.job_kill.run({ id: 0, signal: null, grace: null })).toBe('killed job 0');
    expect(calls.kill).toEqual([0]);
  });

  it('a required field sent as null is missing, said as such', async () => {
    const tools = createTools(fakeRuntime().runtime, { approve: once });
    expect(await tools.job_kill.run({ id: null, signal: null, grace: null })).toMatch(/^job_kill: bad input: id is required and missing\./);
    expect(await tools.background.run({ command: null })).toMatch(/^background: bad input: command is required and missing\./);
  });
});
