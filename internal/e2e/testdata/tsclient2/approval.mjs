// Answers codexec's approval questions through the official TypeScript
// client 2.x (form elicitation during the call, the 2025-11-25 way), and
// prints one JSON report on stdout for internal/e2e/approval_ts_test.go.
//
//   node approval.mjs <accept|decline> <working dir> <codexec binary> [args...]
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [answer, dir, command, ...args] = process.argv.slice(2);
const report = { questions: [] };

try {
    const c = new Client({ name: 'codexec-approval-e2e', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    c.setRequestHandler('elicitation/create', async req => {
        report.questions.push({ message: req.params.message, fields: Object.keys(req.params.requestedSchema?.properties ?? {}) });
        return answer === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
    });
    await c.connect(new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' }));
    report.protocolVersion = c.getNegotiatedProtocolVersion?.() ?? null;
    const code = "with open('ran.txt', 'a') as f:\n    f.write('ran\\n')\nprint('wrote')\n";
    const res = await c.callTool({ name: 'execute_code', arguments: { language: 'python', code, working_dir: dir } });
    report.isError = res.isError ?? false;
    report.text = res.content?.map(x => x.text ?? '').join('') ?? '';
    report.structured = res.structuredContent ?? null;
    await c.close();
} catch (e) {
    report.error = String(e?.stack ?? e);
}
process.stdout.write(JSON.stringify(report) + '\n');
