// Runs @aws/cloudformation-validate (offline, WASM, no AWS credentials) over
// the CloudFormation/SAM templates named on the command line and writes one
// JSON array to stdout: per template its path, the report status, the
// validator's version and every finding of severity WARN or above.
//
// It decides nothing. internal/toolcache embeds it, writes it into the
// validator's install directory (beside node_modules, where its import
// resolves) and reads its output (toolcache.CloudFormationReport); `mcpfn
// template -check` and templatetest judge the findings.
//
//   node cfn-validate.mjs template.yaml [more.yaml ...]
//
// Exit status: 0 when every template was analysed (findings or not), 2 on
// bad usage, 1 when the validator itself failed.

import { RegoEngine, TemplateFile } from "@aws/cloudformation-validate";

const paths = process.argv.slice(2);
if (paths.length === 0) {
    process.stderr.write("usage: cfn-validate.mjs <template> [template ...]\n");
    process.exit(2);
}

const engine = new RegoEngine();
try {
    const reports = paths.map((path) => {
        const report = engine.validateStandard(new TemplateFile(path), { severityLevel: "WARN" });
        return {
            path,
            status: report.status,
            version: report.version,
            diagnostics: report.diagnostics,
        };
    });
    process.stdout.write(JSON.stringify(reports) + "\n");
} catch (err) {
    process.stderr.write(`cfn-validate: ${err && err.stack ? err.stack : err}\n`);
    process.exitCode = 1;
} finally {
    engine.free();
}
