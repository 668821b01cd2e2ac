/**
 * A scripted model API on 127.0.0.1 for the agent CLIs (test/helpers/agent-clients.mjs) and the
 * README's framework examples: the Anthropic Messages API (Claude Code), the OpenAI Responses API
 * (Codex) and the Gemini API (Gemini CLI), streamed or not as each client asks. A request that
 * offers the MCP server's tools is the agent's turn: the script picks the next call from the tool
 * results the conversation already holds (the API is stateless, so a retried request gets the
 * same answer), and every tool result is recorded exactly as the client handed it over. Any other
 * request (titles, summaries, routing) gets text.
 */
import http from 'node:http';

export const OUR_TOOLS = ['background', 'job_status', 'job_kill', 'job_input', 'job_restart'];

/** Our tool a client-side name stands for: `mcp__heph-jobs__background`, `heph-jobs__background`, `background`. */
export function ourTool(name) {
  if (typeof name !== 'string') return null;
  return OUR_TOOLS.find((tool) => name === tool || name.endsWith(`_${tool}`) || name.endsWith(`/${tool}`)) ?? null;
}

function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The text a tool result's content blocks hold, in order ('\n' between blocks). */
function blocksText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content.map((block) => (typeof block?.text === 'string' ? block.text : JSON.stringify(block))).join('\n');
}

const anthropic = {
  /** Calls and results of a Messages request, in conversation order. */
  conversation(body) {
    const calls = new Map();
    const results = [];
    for (const message of body.messages ?? []) {
      if (!Array.isArray(message.content)) continue;
      for (const block of message.content) {
        if (block.type === 'tool_use') calls.set(block.id, { name: block.name, args: block.input });
        if (block.type === 'tool_result') {
          const call = calls.get(block.tool_use_id);
          results.push({ name: call?.name, args: call?.args, read: blocksText(block.content), raw: block, isError: block.is_error === true });
        }
      }
    }
    return { tools: (body.tools ?? []).map((tool) => tool.name), results };
  },
  answer(res, body, action, turn) {
    const id = `msg_${turn}`;
    const block = action.call
      ? { type: 'tool_use', id: `toolu_${turn}`, name: action.call.name, input: action.call.args }
      : { type: 'text', text: action.text };
    const stop = action.call ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: 10, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    const model = body.model ?? 'claude-fake';
    if (!body.stream) {
      json(res, 200, { id, type: 'message', role: 'assistant', model, content: [block], stop_reason: stop, stop_sequence: null, usage });
      return;
    }
    const start = action.call ? { ...block, input: {} } : { type: 'text', text: '' };
    const delta = action.call ? { type: 'input_json_delta', partial_json: JSON.stringify(action.call.args) } : { type: 'text_delta', text: action.text };
    sse(res, [
      ['message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: start }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } }],
      ['message_stop', { type: 'message_stop' }],
    ]);
  },
};

const responses = {
  conversation(body) {
    const calls = new Map();
    const results = [];
    for (const item of Array.isArray(body.input) ? body.input : []) {
      if (item.type === 'function_call') calls.set(item.call_id, { name: item.namespace ? `${item.namespace}/${item.name}` : item.name, args: safeParse(item.arguments) });
      if (item.type === 'function_call_output') {
        const call = calls.get(item.call_id);
        results.push({ name: call?.name, args: call?.args, read: blocksText(item.output), raw: item, isError: false });
      }
    }
    // Codex offers an MCP server's tools as a namespace (`mcp__heph_jobs`) holding functions, up
    // front or (for a model it knows to search) in the output of its client-side tool_search.
    const tools = [];
    const add = (tool) => {
      if (tool.type === 'namespace') for (const inner of tool.tools ?? []) tools.push(`${tool.name}/${inner.name}`);
      else if (tool.type === 'tool_search') tools.push('tool_search');
      else if (tool.name) tools.push(tool.name);
    };
    for (const tool of body.tools ?? []) add(tool);
    let searched = 0;
    for (const item of Array.isArray(body.input) ? body.input : []) {
      if (item.type === 'tool_search_call') searched += 1;
      if (item.type === 'tool_search_output') for (const tool of item.tools ?? []) add(tool);
    }
    return { tools, results, searched };
  },
  answer(res, body, action, turn) {
    const [namespace, name] = action.call?.name.includes('/') ? action.call.name.split('/') : [undefined, action.call?.name];
    const item = action.search
      ? { type: 'tool_search_call', id: `ts_${turn}`, call_id: `call_${turn}`, execution: 'client', status: 'completed', arguments: { query: action.search, limit: 20 } }
      : action.call
      ? { type: 'function_call', id: `fc_${turn}`, call_id: `call_${turn}`, ...(namespace ? { namespace } : {}), name, arguments: JSON.stringify(action.call.args), status: 'completed' }
      : { type: 'message', id: `msg_${turn}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: action.text, annotations: [] }] };
    const response = { id: `resp_${turn}`, object: 'response', status: 'completed', model: body.model, output: [item] };
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 20 };
    if (!body.stream) return json(res, 200, { ...response, usage });
    sse(res, [
      ['response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }],
      ['response.output_item.added', { type: 'response.output_item.added', output_index: 0, item }],
      ['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }],
      ['response.completed', { type: 'response.completed', response: { ...response, usage } }],
    ]);
  },
};

const gemini = {
  conversation(body) {
    const results = [];
    const calls = [];
    for (const content of body.contents ?? []) {
      for (const part of content.parts ?? []) {
        if (part.functionCall) calls.push({ name: part.functionCall.name, args: part.functionCall.args, id: part.functionCall.id });
        if (part.functionResponse) {
          const response = part.functionResponse.response;
          const call = calls.find((c) => (part.functionResponse.id ? c.id === part.functionResponse.id : c.name === part.functionResponse.name)) ?? { name: part.functionResponse.name };
          const read = response && typeof response.output === 'string' && Object.keys(response).length === 1 ? response.output : JSON.stringify(response);
          results.push({ name: call.name, args: call.args, read, raw: part.functionResponse, isError: response != null && 'error' in response });
        }
      }
    }
    const tools = [];
    for (const group of body.tools ?? []) for (const declaration of group.functionDeclarations ?? []) tools.push(declaration.name);
    return { tools, results };
  },
  answer(res, body, action, turn, stream) {
    const part = action.call ? { functionCall: { name: action.call.name, args: action.call.args } } : { text: action.text };
    const chunk = {
      candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 10, totalTokenCount: 20 },
      modelVersion: 'gemini-fake',
      responseId: `resp_${turn}`,
    };
    if (stream) sse(res, [[null, chunk]]);
    else json(res, 200, chunk);
  },
};

const CODEX_SEARCHES = ['heph_jobs background job_status job_kill job_input job_restart', 'mcp__heph_jobs heph_jobs', 'background job_status job_kill'];

/** Names of our tools a Messages request lists as deferred (known by name only) while it offers ToolSearch. */
function deferredTools(body, tools) {
  if (!tools.includes('ToolSearch')) return [];
  const names = new Set(JSON.stringify(body.messages ?? []).match(/mcp__[A-Za-z0-9_-]+?__[a-z_]+/g) ?? []);
  return [...names].filter((name) => ourTool(name));
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What a side request (no tools of ours) gets: text, or JSON where the client asked for JSON. */
function sideText(body) {
  const config = body.generationConfig ?? body.config ?? {};
  if (config.responseMimeType === 'application/json' || config.responseJsonSchema || config.responseSchema) {
    return JSON.stringify({ reasoning: 'the task is done', next_speaker: 'user', model_choice: 'flash', complexity_reasoning: 'simple', complexity_score: 1 });
  }
  return 'ok';
}

/**
 * Starts the fake API. `script({ tools, results })` returns `{ call: { name, args } }` (name: our
 * tool's name; it is sent under the client's name for it) or `{ text }` to end the turn.
 * Resolves with `{ url, port, requests, turns, close() }`: every request as received, and for each
 * agent turn the tool results its conversation held.
 */
export async function startFakeModel(protocol, script) {
  const api = { anthropic, responses, gemini }[protocol];
  if (!api) throw new TypeError(`protocol must be anthropic, responses or gemini; got ${JSON.stringify(protocol)}`);
  const requests = [];
  const turns = [];
  const waiters = new Set();
  const changed = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const server = http.createServer((req, res) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (data += chunk));
    req.on('end', () => {
      const body = safeParse(data || '{}');
      const record = { method: req.method, url: req.url, at: Date.now(), headers: req.headers, body };
      requests.push(record);
      try {
        handle(req, res, body);
      } catch (error) {
        json(res, 500, { error: { message: String(error?.stack ?? error) } });
      }
      changed();
    });
  });
  function handle(req, res, body) {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method !== 'POST') return json(res, 404, { error: { message: `no ${req.method} ${url.pathname} here` } });
    const stream = protocol === 'gemini' ? url.pathname.endsWith(':streamGenerateContent') : true;
    if (protocol === 'gemini' && url.pathname.endsWith(':countTokens')) return json(res, 200, { totalTokens: 10 });
    if (protocol === 'anthropic' && url.pathname.endsWith('/count_tokens')) return json(res, 200, { input_tokens: 10 });
    if (body === null || typeof body !== 'object') return json(res, 400, { error: { message: 'the body is not JSON' } });
    const { tools, results, searched } = api.conversation(body);
    const offered = new Map(tools.map((name) => [ourTool(name), name]).filter(([tool]) => tool));
    let action;
    const deferred = protocol === 'anthropic' && offered.size === 0 ? deferredTools(body, tools) : [];
    if (deferred.length > 0) {
      // Claude Code defers MCP tools behind its tool search: the model sees their names (and the
      // server's instructions) and loads their schemas first, as its prompt tells it to.
      turns.push({ tools, results: [], deferred, at: Date.now() });
      action = { call: { name: 'ToolSearch', args: { query: `select:${deferred.join(',')}` } } };
    } else if (protocol === 'responses' && offered.size === 0 && tools.includes('tool_search') && searched < CODEX_SEARCHES.length) {
      // Codex defers MCP tools behind its client-side tool_search (BM25 over every deferred tool)
      // for the models it knows; a search that ranked other tools first is followed by another.
      turns.push({ tools, results: [], deferred: ['tool_search'], at: Date.now() });
      action = { search: CODEX_SEARCHES[searched] };
    } else if (offered.size === 0) action = { text: sideText(body) };
    else {
      const mapped = results.map((result) => ({ ...result, tool: ourTool(result.name) })).filter((result) => result.tool);
      turns.push({ tools, results: mapped, at: Date.now() });
      action = script({ tools, offered, results: mapped });
      if (action.call) {
        const name = offered.get(action.call.name);
        if (!name) throw new Error(`the client offers no tool ${action.call.name}; it offers ${tools.join(', ')}`);
        action = { call: { name, args: action.call.args } };
      }
    }
    if (action.call && !tools.includes(action.call.name)) throw new Error(`the client offers no tool ${action.call.name}; it offers ${tools.join(', ')}`);
    api.answer(res, body, action, requests.length, stream);
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    turns,
    /** Resolves once `check()` holds (re-checked on every request); rejects after `ms`. */
    until(check, what, ms) {
      return new Promise((resolve, reject) => {
        const test = () => {
          if (!check()) return;
          clearTimeout(timer);
          waiters.delete(test);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(test);
          reject(new Error(`timed out after ${ms} ms waiting for ${what}; requests: ${requests.map((r) => `${r.method} ${r.url}`).join(', ')}`));
        }, ms);
        waiters.add(test);
        test();
      });
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
