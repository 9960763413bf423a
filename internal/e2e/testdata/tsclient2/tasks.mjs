// Drives codexec's MCP Tasks (2025-11-25) through the official TypeScript
// client 2.x, and prints one JSON report on stdout for
// internal/e2e/tasks_test.go to check.
//
//   node tasks.mjs stdio <codexec binary> [args...]  the whole life of tasks over stdio
//   node tasks.mjs create <url> <token>        over HTTP: start a long task, print its id, leave
//   node tasks.mjs read <url> <token> <taskId> over HTTP, a new client: read that task to its end
import { Client, StreamableHTTPClientTransport, specTypeSchemas as S } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [mode, target, arg3, arg4] = process.argv.slice(2);
const report = {};

async function connect() {
    const client = new Client({ name: 'codexec-tasks-e2e', version: '1.0.0' }, { capabilities: { tasks: { list: {}, cancel: {} } } });
    let transport;
    if (mode === 'stdio') {
        transport = new StdioClientTransport({ command: target, args: process.argv.slice(4), env: process.env, stderr: 'inherit' });
    } else {
        transport = new StreamableHTTPClientTransport(new URL(target + '/mcp'), {
            requestInit: { headers: { Authorization: 'Bearer ' + arg3 } }
        });
    }
    await client.connect(transport);
    return client;
}

// attempt returns what a request answered, or its error's code and message.
async function attempt(f) {
    try {
        return { ok: await f() };
    } catch (e) {
        return { code: e.code, message: String(e.message) };
    }
}

const call = (c, name, args, task) =>
    c.request({ method: 'tools/call', params: { name, arguments: args, ...(task ? { task } : {}) } }, S.CreateTaskResult);
const get = (c, taskId) => c.request({ method: 'tasks/get', params: { taskId } }, S.GetTaskResult);
const result = (c, taskId) => c.request({ method: 'tasks/result', params: { taskId } }, S.CallToolResult);

// poll reads tasks/get, as often as pollInterval says, until the task ends.
async function poll(c, taskId) {
    let polls = 0;
    for (;;) {
        const t = await get(c, taskId);
        polls++;
        if (t.status !== 'working' || polls > 200) return { task: t, polls };
        await new Promise(r => setTimeout(r, t.pollInterval ?? 500));
    }
}

async function stdio() {
    const c = await connect();
    report.statuses = [];
    c.setNotificationHandler('notifications/tasks/status', n => report.statuses.push(n.params));
    report.protocolVersion = c.getNegotiatedProtocolVersion?.() ?? null;
    report.capability = c.getServerCapabilities()?.tasks ?? null;
    const tools = await c.listTools();
    report.taskSupport = Object.fromEntries(tools.tools.filter(t => t.execution).map(t => [t.name, t.execution.taskSupport]));

    const created = await call(c, 'execute_code', { language: 'python', code: 'import time\nprint("task says hi")\ntime.sleep(1)' }, { ttl: 60000 });
    report.created = created.task;
    const { task, polls } = await poll(c, created.task.taskId);
    report.ended = task;
    report.polls = polls;
    report.result = await result(c, created.task.taskId);
    const run = await c.callTool({ name: 'get_run', arguments: { execution_id: created.task.taskId } });
    report.getRun = run.structuredContent;

    const long = await call(c, 'execute_command', { command: 'sleep 60' }, {});
    report.longCreated = long.task;
    report.cancel = await attempt(() => c.request({ method: 'tasks/cancel', params: { taskId: long.task.taskId } }, S.CancelTaskResult));
    report.cancelledResult = await attempt(() => result(c, long.task.taskId));
    report.cancelAgain = await attempt(() => c.request({ method: 'tasks/cancel', params: { taskId: long.task.taskId } }, S.CancelTaskResult));
    report.list = (await c.request({ method: 'tasks/list', params: {} }, S.ListTasksResult)).tasks;
    report.unknown = await attempt(() => get(c, 'exec_000000000000'));
    report.forbidden = await attempt(() => call(c, 'list_files', {}, {}));
    report.plain = (await c.callTool({ name: 'execute_code', arguments: { language: 'bash', code: 'echo plain' } })).structuredContent;
    for (let i = 0; i < 50 && report.statuses.length < 2; i++) await new Promise(r => setTimeout(r, 100));
    await c.close();
}

async function create() {
    const c = await connect();
    const created = await call(c, 'execute_code', { language: 'bash', code: 'sleep 2; echo outlived' }, {});
    report.taskId = created.task.taskId;
    report.status = created.task.status;
    await c.close();
}

async function read() {
    const c = await connect();
    report.first = await attempt(() => get(c, arg4));
    if (report.first.ok) {
        report.ended = (await poll(c, arg4)).task;
        report.result = await attempt(() => result(c, arg4));
    }
    report.cancel = await attempt(() => c.request({ method: 'tasks/cancel', params: { taskId: arg4 } }, S.CancelTaskResult));
    report.list = (await c.request({ method: 'tasks/list', params: {} }, S.ListTasksResult)).tasks.map(t => t.taskId);
    await c.close();
}

try {
    await { stdio, create, read }[mode]();
} catch (e) {
    report.error = String(e && e.stack || e);
}
process.stdout.write(JSON.stringify(report) + '\n');
