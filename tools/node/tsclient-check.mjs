// A third-party client against an mcpfn gateway: the official MCP TypeScript
// SDK v2 client (@modelcontextprotocol/client) and its Tasks-extension
// package (@modelcontextprotocol/ext-tasks), in both protocol eras.
// localtest/conformance's TestTypeScriptSDKClient runs it against the local
// stack's JWT gateway and fails on every failed check (docs/conformance.md).
//
//   node tsclient-check.mjs '<config JSON>'
//
// config: {url, token, createTool, progressTool, slowTool, labels: {...}},
// labels being the slow tool's labels for the task and cancel checks.
// Prints one JSON object on stdout:
//   {checks: [{era, name, ok, detail}], cancels: [{era, how, label, seconds}]}
// and exits 1 when a check failed. A cancel is checked by the Go test: the
// slow tool logs when a cancel stopped its handler.

import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  DispatchError,
  JsonRpcResponseError,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";

const cfg = JSON.parse(process.argv[2]);
const MODERN = "2026-07-28";
const clientInfo = { name: "mcpfn-tsclient-check", version: "1.0.0" };
const TASKS = "io.modelcontextprotocol/tasks";

const checks = [];
const cancels = [];

// check runs one named check; fn throws (or returns a string) to fail it.
async function check(era, name, fn) {
  try {
    const detail = await fn();
    checks.push({ era, name, ok: true, detail: detail ?? "" });
  } catch (e) {
    checks.push({ era, name, ok: false, detail: describe(e) });
  }
}

function describe(e) {
  if (e instanceof Error) {
    const code = e.code === undefined ? "" : ` (code ${e.code})`;
    return `${e.constructor.name}${code}: ${e.message}`;
  }
  return String(e);
}

// anyResult is a Standard Schema that takes any result: the SDK client
// types only its spec methods' results.
const anyResult = { "~standard": { version: 1, vendor: "mcpfn-tsclient-check", validate: (value) => ({ value }) } };

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function text(result) {
  return (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// withTimeout bounds a step: a hung step fails its check instead of the run.
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function connect(era) {
  const client = new Client(clientInfo, era === "modern" ? { versionNegotiation: { mode: { pin: MODERN } } } : {});
  const transport = new StreamableHTTPClientTransport(new URL(cfg.url), {
    requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } },
    fetch: tracedFetch(era),
  });
  await withTimeout(client.connect(transport), 30_000, "connect");
  return client;
}

// tracedFetch records every POST the SDK client makes (era, JSON-RPC method
// and id, HTTP status): the report's trace, for a failed check's reader.
const trace = [];
// notificationsSent are the notification POSTs under way: the client sends
// them without waiting, and closing it would abort them.
const notificationsSent = new Set();
function tracedFetch(era) {
  return (url, init) => {
    let msg = {};
    try {
      msg = JSON.parse(init?.body ?? "{}");
    } catch {
      // not JSON
    }
    const entry = { era, method: msg.method ?? (msg.id !== undefined ? "response" : "?"), id: msg.id, requestId: msg.params?.requestId };
    trace.push(entry);
    const res = fetch(url, init).then((r) => {
      entry.status = r.status;
      return r;
    });
    if (entry.method.startsWith("notifications/") && entry.id === undefined) {
      notificationsSent.add(res);
      res.catch(() => {}).finally(() => notificationsSent.delete(res));
    }
    return res;
  };
}

// The Tasks package's V2 request path (its rawDispatch): the SDK client
// cannot carry a CreateTaskResult, so the host posts the package's framed
// requests itself, with the 2026-07-28 routing headers (Mcp-Name is the
// tool for tools/call, the task id for tasks/*, SEP-2663).
const httpStatuses = [];
let rawID = 1_000_000;
async function rawDispatch(request, options = {}) {
  const id = rawID++;
  const params = request.params ?? {};
  const name = request.method === "tools/call" ? params.name : params.taskId;
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${cfg.token}`,
    "Mcp-Protocol-Version": MODERN,
    "Mcp-Method": request.method,
    ...(typeof name === "string" ? { "Mcp-Name": name } : {}),
    ...(options.context?.headers ?? {}),
  };
  let res;
  try {
    res = await fetch(cfg.url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id, ...request }), signal: options.signal });
  } catch (e) {
    throw new DispatchError(`POST ${request.method}: ${describe(e)}`, true, { cause: e });
  }
  const body = await res.text();
  const answer = answerIn(res.headers.get("content-type") ?? "", body, id);
  httpStatuses.push({ method: request.method, status: res.status, code: answer?.error?.code });
  if (answer === undefined) {
    throw new DispatchError(`${request.method}: HTTP ${res.status} without a JSON-RPC answer: ${body.slice(0, 300)}`, res.status >= 500);
  }
  return answer.error ? { kind: "error", error: answer.error } : { kind: "result", result: answer.result };
}

// answerIn is the JSON-RPC response with id in a JSON or SSE body.
function answerIn(contentType, body, id) {
  const candidates = contentType.startsWith("text/event-stream")
    ? body.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim())
    : [body];
  for (const c of candidates) {
    try {
      const m = JSON.parse(c);
      if (m && m.id === id && ("result" in m || "error" in m)) return m;
    } catch {
      // not JSON: keep looking
    }
  }
  return undefined;
}

// settleWithin waits for an execution's outcome, giving up after ms.
async function settleWithin(execution, ms, onEvent) {
  const { outcome } = await execution.settle({ signal: AbortSignal.timeout(ms), onEvent });
  return outcome;
}

// cancelAtFirstProgress calls the slow tool and aborts the call as soon as
// its handler reports progress (so it is running); the client then cancels
// as its era says: notifications/cancelled (2025-11-25) or closing the
// request's stream (2026-07-28).
async function cancelAtFirstProgress(client, label, seconds) {
  const abort = new AbortController();
  let progressed = false;
  const call = client.callTool(
    { name: cfg.slowTool, arguments: { seconds, label } },
    {
      signal: abort.signal,
      onprogress: () => {
        progressed = true;
        abort.abort(new Error("cancelled by the check"));
      },
    },
  );
  try {
    const res = await withTimeout(call, (seconds + 20) * 1000, "the cancelled call");
    throw new Error(`the call was not cancelled: it answered ${JSON.stringify(res).slice(0, 300)}`);
  } catch (e) {
    assert(progressed, `the call failed before any progress: ${describe(e)}`);
    assert(!(e instanceof ProtocolError), `the cancelled call got a JSON-RPC error: ${describe(e)}`);
  }
}

async function commonChecks(era, client) {
  await check(era, "protocol era and tools capability", () => {
    assert(client.getProtocolEra() === era, `protocol era ${client.getProtocolEra()}`);
    assert(client.getServerCapabilities()?.tools !== undefined, "no tools capability");
  });
  await check(era, "tools/list", async () => {
    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    const missing = [cfg.createTool, cfg.progressTool, cfg.slowTool].filter((n) => !names.has(n));
    assert(missing.length === 0, `tools/list lacks ${missing.join(", ")}`);
    return `${tools.length} tools`;
  });
  await check(era, "tools/call", async () => {
    const res = await client.callTool({ name: cfg.createTool, arguments: { channel: "ts-sdk", text: `hello from the TypeScript SDK (${era})` } });
    assert(!res.isError && typeof res.structuredContent?.id === "string", `result ${JSON.stringify(res)}`);
    return `created ${res.structuredContent.id}`;
  });
  await check(era, "progress notifications during a call", async () => {
    // The fixture reports 0, 50 and 100. The client may hand a notification
    // to onprogress after it resolved the call: wait for the third.
    const seen = [];
    let third;
    const allThree = new Promise((resolve) => (third = resolve));
    const res = await client.callTool(
      { name: cfg.progressTool },
      {
        onprogress: (p) => {
          seen.push(p.progress);
          if (seen.length === 3) third();
        },
      },
    );
    assert(!res.isError && text(res).includes("progress done"), `result ${JSON.stringify(res)}`);
    await withTimeout(allThree, 5_000, `progress ${JSON.stringify(seen)} so far`);
    assert(JSON.stringify(seen) === "[0,50,100]", `progress ${JSON.stringify(seen)}, want [0,50,100]`);
  });
  await check(era, "an unknown tool is a JSON-RPC error (-32602), not a transport failure", async () => {
    try {
      const res = await client.callTool({ name: "no_such_tool" });
      throw new Error(`answered ${JSON.stringify(res)}`);
    } catch (e) {
      assert(e instanceof ProtocolError && e.code === -32602, `got ${describe(e)}`);
    }
  });
}

async function legacy() {
  const era = "legacy";
  let client;
  await check(era, "connect (initialize)", async () => {
    client = await connect(era);
  });
  if (!client) return;
  await commonChecks(era, client);
  await check(era, "tasks/get of an unknown task is a JSON-RPC error (-32602), not a transport failure", async () => {
    try {
      await client.request({
        method: "tasks/get",
        params: { taskId: "AAAAAAAAAAAAAAAAAAAAAA", _meta: { "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } } } },
      }, anyResult);
      throw new Error("answered a result");
    } catch (e) {
      assert(e instanceof ProtocolError && e.code === -32602, `got ${describe(e)}`);
    }
  });
  // The gateway serves Tasks v2 only, an extension of 2026-07-28: in this
  // era the package sees no Tasks server and runs the call as it is.
  await check(era, "the Tasks package runs a call without Tasks (immediate)", async () => {
    const session = createTaskSessionFromClient(client, { endpointId: "mcpfn-local-legacy" });
    try {
      const exec = await session.callTool(cfg.slowTool, { seconds: 0, label: cfg.labels.legacyImmediate });
      assert(exec.kind === "immediate", `execution kind ${exec.kind}`);
      const outcome = await settleWithin(exec, 30_000);
      assert(outcome.status === "completed", `outcome ${outcome.status}`);
      assert(text(resultFromTaskOutcome(outcome)).includes(cfg.labels.legacyImmediate), `result ${JSON.stringify(outcome.result)}`);
    } finally {
      await session.close();
    }
  });
  await check(era, "a cancelled call (notifications/cancelled)", async () => {
    await cancelAtFirstProgress(client, cfg.labels.legacyCancel, cfg.cancelSeconds);
    await withTimeout(Promise.allSettled([...notificationsSent]), 10_000, "notifications/cancelled");
    const sent = trace.findLast((e) => e.era === era && e.method === "notifications/cancelled");
    assert(sent !== undefined, "the client sent no notifications/cancelled");
    assert(sent.status === 202, `notifications/cancelled answered HTTP ${sent.status}, want 202`);
    cancels.push({ era, how: "notifications/cancelled", label: cfg.labels.legacyCancel, seconds: cfg.cancelSeconds });
  });
  await client.close();
}

async function modern() {
  const era = "modern";
  let client;
  await check(era, "connect (server/discover, 2026-07-28)", async () => {
    client = await connect(era);
    const ext = client.getServerCapabilities()?.extensions?.[TASKS];
    assert(ext !== undefined, `no ${TASKS} extension in ${JSON.stringify(client.getServerCapabilities())}`);
  });
  if (!client) return;
  await commonChecks(era, client);

  let session;
  await check(era, "the Tasks package opens a V2 session", () => {
    session = createTaskSessionFromClient(client, {
      endpointId: "mcpfn-local-modern",
      rawDispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo, clientCapabilities: {} },
    });
  });
  if (session) {
    await check(era, "a task to completion through the Tasks package", async () => {
      const label = cfg.labels.modernTask;
      const exec = await session.callTool(cfg.slowTool, { seconds: 2, label });
      assert(exec.kind === "task", `execution kind ${exec.kind}: the gateway answered the call without a task`);
      const seen = [];
      const outcome = await settleWithin(exec, 60_000, (ev) => {
        if (ev.type === "task") seen.push(ev.task.status);
      });
      if (outcome.status === "failed") throw outcome.error;
      assert(outcome.status === "completed", `outcome ${outcome.status}`);
      const result = resultFromTaskOutcome(outcome);
      assert(text(result).includes(label) && result.resultType === "complete", `result ${JSON.stringify(result)}`);
      return `task ${exec.handle.taskId}: ${seen.join(" → ")} → completed`;
    });
    await check(era, "tasks/get of an unknown task is a JSON-RPC error (-32602) on HTTP 200", async () => {
      try {
        await session.task("AAAAAAAAAAAAAAAAAAAAAA").snapshot(AbortSignal.timeout(30_000));
        throw new Error("answered a task");
      } catch (e) {
        assert(e instanceof JsonRpcResponseError && e.code === -32602, `got ${describe(e)}`);
      }
      const last = httpStatuses.findLast((s) => s.method === "tasks/get");
      assert(last?.status === 200, `HTTP ${last?.status} for ${JSON.stringify(last)}`);
    });
    await check(era, "a task cancelled through the Tasks package", async () => {
      const label = cfg.labels.modernTaskCancel;
      const exec = await session.callTool(cfg.slowTool, { seconds: cfg.cancelSeconds, label });
      assert(exec.kind === "task", `execution kind ${exec.kind}`);
      // Cancel once the handler runs: its first progress is the task's
      // statusMessage.
      let cancelling;
      const outcome = await settleWithin(exec, 60_000, (ev) => {
        if (ev.type === "task" && ev.task.statusMessage && !cancelling) cancelling = exec.cancel(AbortSignal.timeout(30_000));
      });
      assert(cancelling !== undefined, `the task ended ${outcome.status} before it reported progress`);
      await cancelling;
      assert(outcome.status === "cancelled", `outcome ${outcome.status}`);
      cancels.push({ era, how: "tasks/cancel", label, seconds: cfg.cancelSeconds });
    });
    await session.close();
  }
  // Last: a handler this cancel does not stop holds the tool's function.
  await check(era, "a cancelled call (the client closes the request's stream)", async () => {
    await cancelAtFirstProgress(client, cfg.labels.modernCancel, cfg.cancelSeconds);
    cancels.push({ era, how: "closed stream", label: cfg.labels.modernCancel, seconds: cfg.cancelSeconds });
  });
  await client.close();
}

await legacy();
await modern();
process.stdout.write(JSON.stringify({ checks, cancels, trace }) + "\n");
process.exit(checks.every((c) => c.ok) ? 0 : 1);
