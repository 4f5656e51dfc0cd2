// Drives a running Hedgerow gateway with the official OpenAI Node SDK (the `openai` package pinned in package.json),
// as a user's code would: every check is made through the SDK. Only the setup and the gateway-side evidence use plain
// fetch: the simulators' scripted faults (/sim/...) and the admin API's health and audit (/admin/...).
// Usage: HEDGEROW_SDK_EXPECT='<json>' node sdk.spec.mjs <baseUrl> <alphaSimRootUrl> <betaSimRootUrl>
// HEDGEROW_SDK_EXPECT holds the prompts and the simulator's deterministic answers to them (OpenAiNodeSdkTest writes
// it). Prints "ok: ..." per passed step, "FAILED: ..." per failed check, and "sdk: all checks passed" when none failed
// (exit code 0; 1 when any failed).
import OpenAI from 'openai';
import { makeParseableResponseFormat } from 'openai/lib/parser';
import assert from 'node:assert/strict';

const [base, alphaSim, betaSim] = process.argv.slice(2);
const E = JSON.parse(process.env.HEDGEROW_SDK_EXPECT || 'null');
if (!base || !alphaSim || !betaSim || !E) {
  console.error("usage: HEDGEROW_SDK_EXPECT='<json>' node sdk.spec.mjs <baseUrl> <alphaSimRootUrl> <betaSimRootUrl>");
  process.exit(2);
}
const ok = msg => console.log('ok: ' + msg);
const user = content => [{ role: 'user', content }];
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'k-acme', maxRetries: 0, timeout: 30_000 });

// ---- setup helpers (not the SDK) ----

async function scriptFaults(sim, model, faults) {
  const r = await fetch(`${sim}/sim/models/${model}/faults`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults),
  });
  if (!r.ok) throw new Error(`scripting faults on ${model} answered ${r.status}`);
}

async function clearFaults(sim, model) {
  const r = await fetch(`${sim}/sim/models/${model}/faults`, { method: 'DELETE' });
  if (!r.ok) throw new Error(`clearing faults on ${model} answered ${r.status}`);
}

async function simStats(sim, model) {
  return (await fetch(`${sim}/sim/stats/${model}`)).json();
}

async function admin(path) {
  const r = await fetch(base + path, { headers: { authorization: 'Bearer a-acme' } });
  if (!r.ok) throw new Error(`${path} answered ${r.status}`);
  return r.json();
}

async function adminPut(path, body) {
  const r = await fetch(base + path, {
    method: 'PUT', headers: { authorization: 'Bearer a-acme', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${path} answered ${r.status}`);
}

/** An SDK client that retries (up to 3 times) and logs each HTTP exchange it makes: when, and the retry headers. */
function loggingClient(log) {
  return new OpenAI({
    baseURL: base + '/v1', apiKey: 'k-acme', maxRetries: 3,
    fetch: async (url, init) => {
      const entry = { sent: performance.now(), retryCount: new Headers(init.headers).get('x-stainless-retry-count') };
      log.push(entry);
      const r = await fetch(url, init);
      Object.assign(entry, { answered: performance.now(), status: r.status, retryAfter: r.headers.get('retry-after'),
        retryAfterMs: r.headers.get('retry-after-ms'), shouldRetry: r.headers.get('x-should-retry') });
      return r;
    },
  });
}

/** Each retry in `log` came no sooner than the wait the answer before it asked for (retry-after-ms, else seconds). */
function assertRetriesWaitedAsAsked(log) {
  for (let i = 1; i < log.length; i++) {
    const asked = log[i - 1].retryAfterMs != null ? Number(log[i - 1].retryAfterMs)
      : Number(log[i - 1].retryAfter) * 1000;
    assert.ok(asked > 0, `answer ${i} asked for no wait: ${JSON.stringify(log[i - 1])}`);
    const waited = log[i].sent - log[i - 1].answered;
    // the SDK's own backoff would be 0.5 s (less jitter) for a first retry: a wait this long is the header's
    assert.ok(waited >= asked - 25, `retry ${i} came after ${waited.toFixed(0)} ms, asked ${asked} ms`);
    assert.equal(log[i].retryCount, String(i));
  }
}

async function until(what, check, ms = 15_000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error('timed out waiting until ' + what);
    await new Promise(r => setTimeout(r, 50));
  }
}

/** Waits until no member of the alias is cooling down, so a scenario starts from routes that take requests. */
async function noneCooling(alias) {
  await until(`no member of ${alias} cools down`, async () => {
    const g = (await admin('/admin/health?alias=' + alias)).groups.find(x => x.alias === alias);
    return g.members.every(m => !m.cooling_down);
  });
}

/** The SDK error `promise` rejects with; fails unless it is an instance of `cls`. */
async function rejection(promise, cls) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${cls.name}, but the call succeeded`);
  assert.ok(err instanceof cls, `expected ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
  return err;
}

// ---- checks, each through the SDK ----

async function listsTheAliases() {
  const ids = [];
  const types = {};
  for await (const m of client.models.list()) {
    assert.equal(m.object, 'model');
    assert.equal(typeof m.owned_by, 'string');
    ids.push(m.id);
    types[m.id] = m.type;
  }
  for (const a of ['kimi3', 'solo', 'sdk', 'sdk-out', 'vectors']) assert.ok(ids.includes(a), `models.list() lacks ${a}: ${ids}`);
  assert.equal(types.sdk, 'chat');
  assert.equal(types.vectors, 'embeddings', 'the embeddings alias is listed as one');
  assert.ok(!ids.includes('secret'), 'models.list() shows another org\'s alias');
  ok(`models.list() lists the caller's aliases (${ids.length})`);

  const sdk = await client.models.retrieve('sdk');
  assert.equal(sdk.id, 'sdk');
  assert.equal(sdk.object, 'model');
  assert.equal(sdk.owned_by, 'acme');
  const unknown = await rejection(client.models.retrieve('no-such-alias'), OpenAI.NotFoundError);
  assert.equal(unknown.code, 'model_not_found');
  await rejection(client.models.retrieve('secret'), OpenAI.NotFoundError);
  ok('models.retrieve() answers an alias, and NotFoundError for an unknown one or another org\'s');
}

async function nonStreaming() {
  const { data: c, response, request_id } = await client.chat.completions
    .create({ model: 'sdk', messages: user(E.plain.prompt) }).withResponse();
  assert.equal(c.object, 'chat.completion');
  assert.equal(c.choices.length, 1);
  assert.equal(c.choices[0].message.role, 'assistant');
  assert.equal(c.choices[0].message.content, E.plain.text);
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.equal(c.model, 'sdk-a', 'model names the upstream model that served');
  assert.equal(typeof c.id, 'string');
  assert.equal(c.id, response.headers.get('x-hedgerow-request-id'), 'the id is the request id');
  assert.equal(request_id, c.id, 'withResponse().request_id (x-request-id) is the request id');
  assert.equal(c._request_id, c.id, '_request_id (x-request-id) is the request id');
  assert.equal(c.usage.completion_tokens, E.plain.completion_tokens);
  assert.ok(c.usage.prompt_tokens > 0);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  ok(`chat.completions.create: content, usage ${JSON.stringify(c.usage)}, id ${c.id}, model ${c.model}`);
}

async function streamingWithUsage() {
  const { data: stream, response } = await client.chat.completions.create({
    model: 'sdk', stream: true, stream_options: { include_usage: true }, messages: user(E.plain.prompt),
  }).withResponse();
  assert.match(response.headers.get('content-type'), /^text\/event-stream/);
  let text = '';
  let usage = null;
  let chunks = 0;
  let finish = null;
  const ids = new Set();
  let afterUsage = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    ids.add(chunk.id);
    if (usage) afterUsage++;
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      finish = choice.finish_reason ?? finish;
    }
    if (chunk.usage) {
      assert.deepEqual(chunk.choices, [], 'the usage chunk has no choices');
      usage = chunk.usage;
    }
  }
  assert.equal(text, E.plain.text);
  assert.equal(finish, 'stop');
  assert.deepEqual([...ids], [response.headers.get('x-hedgerow-request-id')], 'one id, the request id');
  assert.ok(usage, 'the final usage chunk arrived');
  assert.equal(afterUsage, 0, 'the usage chunk is the last');
  assert.equal(usage.completion_tokens, E.plain.completion_tokens);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  ok(`stream: ${chunks} chunks, text joins to the simulator's, usage chunk last ${JSON.stringify(usage)}`);
}

async function streamHelper() {
  let deltas = '';
  const runner = client.chat.completions.stream({
    model: 'sdk', stream_options: { include_usage: true }, messages: user(E.plain.prompt),
  });
  runner.on('content', d => { deltas += d; });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(final.choices[0].message.content, E.plain.text);
  assert.equal(await runner.finalContent(), E.plain.text);
  assert.equal(deltas, E.plain.text);
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.usage.completion_tokens, E.plain.completion_tokens);
  ok('chat.completions.stream(): finalChatCompletion() accumulates the same text and usage');
}

async function severalChoicesStream() {
  const final = await client.chat.completions.stream({
    model: 'sdk', n: 2, stream_options: { include_usage: true }, messages: user(E.two.prompt),
  }).finalChatCompletion();
  assert.equal(final.choices.length, 2);
  final.choices.forEach((c, i) => {
    assert.equal(c.index, i);
    assert.equal(c.message.content, E.two.texts[i]);
    assert.equal(c.finish_reason, 'stop');
  });
  assert.equal(final.usage.completion_tokens, 2 * E.plain.completion_tokens);
  ok('a stream of n: 2: finalChatCompletion() has both choices whole, the usage counts both');
}

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

async function streamedToolCall() {
  const done = [];
  const runner = client.chat.completions.stream({
    model: 'sdk', tools: [weatherTool], messages: user(E.tools.prompt),
  });
  runner.on('tool_calls.function.arguments.done', e => done.push(e));
  const final = await runner.finalChatCompletion();
  const choice = final.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: E.tools.city });
  assert.equal(done.length, 1);
  assert.equal(done[0].name, 'get_weather');
  assert.equal(done[0].arguments, call.function.arguments);
  ok(`streamed tool call accumulated: ${call.function.name}(${call.function.arguments})`);

  // the SDK's tool runner: it calls the function and sends the conversation back (assistant tool_calls, tool result)
  const seen = [];
  const run = client.chat.completions.runTools({
    model: 'sdk', stream: true, messages: user(E.tools.prompt),
    tools: [{
      type: 'function',
      function: {
        ...weatherTool.function, parse: JSON.parse,
        function: args => { seen.push(args); return 'sunny'; },
      },
    }],
  });
  const content = await run.finalContent();
  assert.deepEqual(seen, [{ city: E.tools.city }]);
  assert.equal(content, E.tools.text, 'after the tool result the model answers in text');
  const roles = run.messages.map(m => m.role);
  assert.deepEqual(roles.slice(-3), ['assistant', 'tool', 'assistant']);
  ok('runTools(): the tool is called with the streamed arguments and the follow-up turn is answered');
}

/**
 * Structured outputs: the SDK's parse() and stream helper parse a json_schema answer into message.parsed (the
 * parseable format zodResponseFormat would build, with JSON.parse as its parser, so no zod is needed).
 */
async function structuredOutputs() {
  const response_format = makeParseableResponseFormat({
    type: 'json_schema',
    json_schema: { name: 'echo', strict: true, schema: {
      type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false,
    } },
  }, JSON.parse);
  const parsed = await client.chat.completions.parse({ model: 'sdk', response_format, messages: user(E.plain.prompt) });
  assert.deepEqual(parsed.choices[0].message.parsed, { text: E.plain.text });
  const streamed = await client.chat.completions.stream({
    model: 'sdk', response_format, messages: user(E.plain.prompt),
  }).finalChatCompletion();
  assert.deepEqual(streamed.choices[0].message.parsed, { text: E.plain.text });
  ok('structured outputs: parse() and the stream helper give message.parsed');
}

async function errorsMapToTheSdksClasses() {
  const missing = await rejection(client.chat.completions.create({ model: 'no-such-alias', messages: user('x') }),
    OpenAI.NotFoundError);
  assert.equal(missing.status, 404);
  assert.equal(missing.code, 'model_not_found');
  assert.equal(missing.param, 'model');
  assert.equal(missing.type, 'invalid_request_error');
  assert.match(missing.requestID ?? '', /^chatcmpl-/, 'the error names the request id (x-request-id)');
  ok(`unknown model: NotFoundError 404 ${missing.code}, requestID ${missing.requestID}`);

  const bad = await rejection(client.chat.completions.create({ model: 'sdk', temperature: 5, messages: user('x') }),
    OpenAI.BadRequestError);
  assert.equal(bad.status, 400);
  assert.equal(bad.param, 'temperature');
  assert.equal(bad.type, 'invalid_request_error');
  assert.match(bad.message, /temperature/);
  ok(`bad parameter: BadRequestError 400, param ${bad.param}: ${bad.message}`);

  const badStream = await rejection(client.chat.completions.create({
    model: 'sdk', stream: true, n: 0, messages: user('x'),
  }), OpenAI.BadRequestError);
  assert.equal(badStream.param, 'n');
  ok('bad parameter on a stream: BadRequestError before any chunk, param n');

  const stranger = new OpenAI({ baseURL: base + '/v1', apiKey: 'k-nobody', maxRetries: 0 });
  const auth = await rejection(stranger.chat.completions.create({ model: 'sdk', messages: user('x') }),
    OpenAI.AuthenticationError);
  assert.equal(auth.status, 401);
  assert.equal(auth.type, 'invalid_request_error');
  assert.equal(auth.code, 'invalid_api_key');
  await rejection(stranger.models.list(), OpenAI.AuthenticationError);
  ok(`bad key: AuthenticationError 401 (${auth.code})`);
}

/** Every route of sdk-out fails once with a 503: the gateway answers 503 with Retry-After, as the SDK reads it. */
async function allRoutesOut() {
  await noneCooling('sdk-out');
  await scriptFaults(alphaSim, 'sdk-a', [{ kind: 'http_error', status: 503, type: 'service_unavailable', message: 'down' }]);
  await scriptFaults(betaSim, 'sdk-b', [{ kind: 'http_error', status: 503, type: 'service_unavailable', message: 'down' }]);
  const out = await rejection(client.chat.completions.create({ model: 'sdk-out', messages: user(E.out.prompt) }),
    OpenAI.InternalServerError);
  assert.equal(out.status, 503);
  assert.equal(out.code, 'no_healthy_provider');
  assert.equal(out.headers.get('retry-after'), '1', 'Retry-After is the group\'s 1 s cooldown');
  assert.ok(out.headers.get('x-hedgerow-request-id'));
  ok(`all routes out: InternalServerError ${out.status} ${out.code}, retry-after ${out.headers.get('retry-after')}`);

  await noneCooling('sdk-out');
  await scriptFaults(alphaSim, 'sdk-a', [{ kind: 'http_error', status: 503, type: 'service_unavailable', message: 'down' }]);
  await scriptFaults(betaSim, 'sdk-b', [{ kind: 'http_error', status: 503, type: 'service_unavailable', message: 'down' }]);
  const outStream = await rejection(client.chat.completions.create({
    model: 'sdk-out', stream: true, messages: user(E.out.prompt),
  }), OpenAI.InternalServerError);
  assert.equal(outStream.status, 503);
  assert.equal(outStream.headers.get('retry-after'), '1');
  ok('all routes out on a stream: the same InternalServerError 503 before any chunk (the head waits for content)');

  // the SDK's own retries: each one waits what the previous answer's Retry-After asked, then succeeds
  await noneCooling('sdk-out');
  await scriptFaults(alphaSim, 'sdk-a', [{ kind: 'http_error', status: 503, type: 'service_unavailable', message: 'down' }]);
  await scriptFaults(betaSim, 'sdk-b', [{ kind: 'http_error', status: 503, type: 'service_unavailable', message: 'down' }]);
  const log = [];
  const c = await loggingClient(log).chat.completions.create({ model: 'sdk-out', messages: user(E.out.prompt) });
  assert.equal(c.choices[0].message.content, E.out.text);
  assert.ok(log.length >= 2, 'the SDK retried');
  assert.equal(log[0].status, 503);
  // the rest of the 1 s cooldown the failures opened, in milliseconds, beside Retry-After: 1
  assert.ok(Number(log[0].retryAfterMs) > 0 && Number(log[0].retryAfterMs) <= 1000, `retry-after-ms ${log[0].retryAfterMs}`);
  assert.equal(log[0].retryAfter, '1');
  assert.equal(log[0].shouldRetry, null);
  assert.equal(log.at(-1).status, 200);
  assertRetriesWaitedAsAsked(log);
  ok(`SDK retries honour Retry-After: ${log.map(e => `${e.status}${e.retryAfter ? ' retry-after ' + e.retryAfter : ''}`)
    .join(' -> ')}, waits ${log.slice(1).map((e, i) => (e.sent - log[i].answered).toFixed(0) + ' ms').join(', ')}`);
}

/**
 * Both routes of sdk-out answer 429 with their own Retry-After: 3 (past the group's 1 s cooldown). The exhausted
 * request is told to wait for the hold, not the cooldown; a retrying SDK sent at once meets the router's 503 for the
 * hold, waits its retry-after-ms and is served.
 */
async function retriesWaitForTheHoldTheRouterNames() {
  await noneCooling('sdk-out');
  const limited = { kind: 'http_error', status: 429, type: 'rate_limit_exceeded', message: 'slow down',
    retry_after_seconds: 3 };
  await scriptFaults(alphaSim, 'sdk-a', [limited]);
  await scriptFaults(betaSim, 'sdk-b', [limited]);
  const out = await rejection(client.chat.completions.create({ model: 'sdk-out', messages: user(E.out.prompt) }),
    OpenAI.InternalServerError);
  assert.equal(out.status, 503);
  assert.equal(out.headers.get('retry-after'), '3', 'the providers\' hold, not the 1 s cooldown');
  const heldMs = Number(out.headers.get('retry-after-ms'));
  assert.ok(heldMs > 0 && heldMs <= 3000, `retry-after-ms ${out.headers.get('retry-after-ms')}`);

  const log = [];
  const c = await loggingClient(log).chat.completions.create({ model: 'sdk-out', messages: user(E.out.prompt) });
  assert.equal(c.choices[0].message.content, E.out.text);
  assert.equal(log.length, 2, `one retry: ${JSON.stringify(log)}`);
  assert.equal(log[0].status, 503);
  const asked = Number(log[0].retryAfterMs);
  assert.ok(asked > 0 && asked <= heldMs, `the router's 503 asks for the rest of the hold: ${log[0].retryAfterMs}`);
  assert.equal(log[0].retryAfter, String(Math.ceil(asked / 1000)));
  assert.equal(log[1].status, 200);
  assertRetriesWaitedAsAsked(log);
  ok(`a held route: exhaustion says retry-after 3 (${heldMs} ms); the SDK's retry met the router's 503 asking `
    + `${asked} ms, waited ${(log[1].sent - log[0].answered).toFixed(0)} ms and was served`);
}

/** Every route of sdk-out held out by its standing: the 503 says x-should-retry: false, and the SDK does not retry. */
async function noRetryWhenOnlyAnOperatorCanHelp() {
  await noneCooling('sdk-out');
  const routes = ['sdk-out-alpha', 'sdk-out-beta'];
  try {
    for (const route of routes) await adminPut('/admin/routes/standing', { route, standing: 'suspended' });
    const log = [];
    const err = await rejection(loggingClient(log).chat.completions.create({
      model: 'sdk-out', messages: user(E.out.prompt),
    }), OpenAI.InternalServerError);
    assert.equal(err.status, 503);
    assert.equal(err.code, 'no_healthy_provider');
    assert.equal(err.headers.get('x-should-retry'), 'false');
    assert.equal(err.headers.get('retry-after'), null);
    assert.equal(log.length, 1, `the SDK sent it once, maxRetries 3 notwithstanding: ${JSON.stringify(log)}`);
    ok(`only suspended routes: 503 with x-should-retry: false, sent once (${err.message})`);
  } finally {
    for (const route of routes) await adminPut('/admin/routes/standing', { route, standing: 'good' });
  }
}

/** The first route's stream is cut in the middle of a multi-byte character: the SDK sees one seamless stream. */
async function invisibleResume() {
  await noneCooling('sdk');
  await scriptFaults(alphaSim, 'sdk-a', [{ kind: 'drop', after_tokens: E.resume.after_tokens, mid_code_point: true }]);
  const before = (await simStats(betaSim, 'sdk-b')).received;
  const ids = new Set();
  const providers = [];
  const runner = client.chat.completions.stream({
    model: 'sdk', stream_options: { include_usage: true }, messages: user(E.resume.prompt),
  });
  runner.on('chunk', chunk => {
    ids.add(chunk.id);
    if (chunk.choices.length) providers.push(chunk.provider);
  });
  let text = '';
  runner.on('content', d => { text += d; });
  const final = await runner.finalChatCompletion();
  assert.equal(text, E.resume.text, 'the streamed text is byte-exact');
  assert.equal(final.choices[0].message.content, E.resume.text);
  assert.equal(final.choices[0].finish_reason, 'stop');
  // after a resume the gateway counts the delivered text with its tokenizer (the simulator counts words)
  assert.ok(final.usage?.completion_tokens > 0, 'the usage chunk came');
  assert.equal(final.usage.total_tokens, final.usage.prompt_tokens + final.usage.completion_tokens);
  assert.equal(ids.size, 1, 'one id');
  assert.equal(providers[0], 'alpha');
  assert.equal(providers.at(-1), 'beta', 'the stream was finished by the second route');
  assert.equal((await simStats(betaSim, 'sdk-b')).received, before + 1);
  ok(`mid-stream resume invisible to the SDK: one stream, id ${[...ids][0]}, started on alpha, finished on beta`);
}

/** The first route's stream breaks inside the tool call's arguments: the SDK still accumulates one whole call. */
async function toolCallBrokenMidArguments() {
  await noneCooling('sdk');
  const clean = await client.chat.completions.stream({
    model: 'sdk', tools: [weatherTool], messages: user(E.tools.prompt),
  }).finalChatCompletion();
  // the call's head and one piece of its arguments, then the connection is reset
  await scriptFaults(alphaSim, 'sdk-a', [{ kind: 'drop', after_tokens: 2, mid_code_point: false }]);
  const ids = new Set();
  const runner = client.chat.completions.stream({
    model: 'sdk', tools: [weatherTool], messages: user(E.tools.prompt),
  });
  runner.on('chunk', chunk => ids.add(chunk.id));
  const broken = await runner.finalChatCompletion();
  assert.equal(ids.size, 1, 'one id');
  assert.equal(broken.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(broken.choices[0].message.tool_calls, clean.choices[0].message.tool_calls);
  assert.equal(broken.provider, 'beta', 'the other route answered');
  ok('a stream broken inside a tool call\'s arguments: the SDK accumulates the same whole call as an unbroken one');
}

/** With resume_mid_stream off, a cut stream ends with an error event: the SDK raises it after the text delivered. */
async function cutWithoutResume() {
  await noneCooling('sdk-out');
  await scriptFaults(alphaSim, 'sdk-a', [{ kind: 'drop', after_tokens: 3, mid_code_point: false }]);
  const stream = await client.chat.completions.create({ model: 'sdk-out', stream: true, messages: user(E.cut.prompt) });
  let text = '';
  let err;
  try {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof OpenAI.APIError, `expected an APIError, got ${err}`);
  assert.equal(err.code, 'stream_interrupted');
  assert.equal(err.type, 'server_error');
  assert.equal(text, E.cut.text, 'the text delivered before the cut');
  ok(`resume off, stream cut: the SDK raises APIError ${err.code} after ${JSON.stringify(text)}: ${err.message}`);
}

/** An AbortController cancels a stream mid-way: the SDK stops quietly and the gateway logs the request as 499. */
async function abortMidStream() {
  await noneCooling('sdk');
  // the served route stalls after 3 tokens, so the abort surely comes while the answer is still being written
  for (const [sim, model] of [[alphaSim, 'sdk-a'], [betaSim, 'sdk-b']]) {
    await scriptFaults(sim, model, [{ kind: 'stall', after_tokens: 3, ms: 60_000 }]);
  }
  const ac = new AbortController();
  const { data: stream, response } = await client.chat.completions.create({
    model: 'sdk', stream: true, messages: user(E.abort.prompt),
  }, { signal: ac.signal }).withResponse();
  const requestId = response.headers.get('x-hedgerow-request-id');
  let contentChunks = 0;
  let text = '';
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta?.content;
    if (delta) {
      contentChunks++;
      text += delta;
      if (contentChunks === 2) ac.abort();
    }
  }
  // events already read when the abort came are still yielded; the stall after 3 tokens bounds them
  assert.ok(contentChunks >= 2 && contentChunks <= 3, `${contentChunks} content chunks`);
  assert.ok(E.abort.text.startsWith(text));
  await until(`the audit logs ${requestId} as 499`, async () => {
    const audit = await admin('/admin/audit?type=request&alias=sdk&limit=20');
    return audit.events.some(e => e.request_id === requestId && e.status === '499');
  });
  await until('the upstream stream was closed', async () =>
    (await simStats(alphaSim, 'sdk-a')).in_flight === 0 && (await simStats(betaSim, 'sdk-b')).in_flight === 0);
  const h = (await admin('/admin/health?alias=sdk')).groups.find(x => x.alias === 'sdk');
  assert.ok(h.members.every(m => !m.cooling_down), 'a hang-up cools nothing down');
  ok(`abort mid-stream: the SDK stopped after ${contentChunks} chunks without an error; audit has ${requestId} as 499`);
}

async function embeddings() {
  // the SDK asks for base64 unless told otherwise, and decodes it into float32 values itself
  const { data: e, response } = await client.embeddings.create({ model: 'vectors', input: E.embed.inputs })
    .withResponse();
  assert.equal(e.object, 'list');
  assert.equal(e.data.length, E.embed.inputs.length);
  assert.equal(e.model, 'embed-a', 'model names the upstream model that served');
  assert.equal(e.provider, 'alpha', 'provider names its provider');
  assert.equal(response.headers.get('x-hedgerow-route'), 'vectors-alpha');
  assert.ok(response.headers.get('x-hedgerow-attempts'));
  assert.ok(e.usage.prompt_tokens > 0);
  assert.equal(e.usage.total_tokens, e.usage.prompt_tokens);
  E.embed.vectors.forEach((v, i) => {
    assert.equal(e.data[i].index, i);
    assert.ok(Array.isArray(e.data[i].embedding), 'the SDK decoded the base64 answer into an array');
    assert.deepEqual(e.data[i].embedding, v.map(Math.fround), `vector ${i} after the SDK's base64 decoding`);
  });
  ok(`embeddings.create (base64, decoded by the SDK): ${e.data.length} vectors of ${e.data[0].embedding.length}`);

  const f = await client.embeddings.create({ model: 'vectors', input: E.embed.inputs[0], encoding_format: 'float',
    dimensions: 8 });
  assert.equal(f.data.length, 1);
  assert.equal(f.data[0].embedding.length, 8);
  assert.deepEqual(f.data[0].embedding.map(Math.fround), E.embed.eight.map(Math.fround));
  ok('embeddings.create (float, dimensions 8): the floats as the provider sent them');

  const chat = await rejection(client.embeddings.create({ model: 'kimi3', input: 'x' }), OpenAI.NotFoundError);
  assert.equal(chat.code, 'not_an_embeddings_model');
  const empty = await rejection(client.embeddings.create({ model: 'vectors', input: '' }), OpenAI.BadRequestError);
  assert.equal(empty.param, 'input');
  ok('embeddings.create: NotFoundError for a chat alias, BadRequestError naming input for an empty one');
}

// Each check runs even when one before it failed (each starts from cleared fault queues), so one run shows every
// failure; the exit code is 1 when any failed.
const checks = [listsTheAliases, nonStreaming, streamingWithUsage, streamHelper, severalChoicesStream, streamedToolCall, structuredOutputs,
  errorsMapToTheSdksClasses, allRoutesOut, retriesWaitForTheHoldTheRouterNames, noRetryWhenOnlyAnOperatorCanHelp,
  invisibleResume, toolCallBrokenMidArguments, cutWithoutResume,
  abortMidStream, embeddings];
let failed = 0;
for (const check of checks) {
  try {
    await clearFaults(alphaSim, 'sdk-a');
    await clearFaults(betaSim, 'sdk-b');
    await check();
  } catch (e) {
    failed++;
    console.error(`FAILED: ${check.name}: ${e?.stack || e}`);
  }
}
await clearFaults(alphaSim, 'sdk-a');
await clearFaults(betaSim, 'sdk-b');
if (failed) {
  console.error(`sdk: ${failed} of ${checks.length} checks failed`);
  process.exit(1);
}
console.log('sdk: all checks passed');
