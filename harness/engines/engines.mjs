// The independent engines, in one Node process: reads a job (JSON file, argv[2]), writes the verdicts as JSON
// to stdout. job.iam: iam-simulate simulations ({id, simulation}); job.asl: {definition, input, paths: [{outcomes}]}.
// Each path runs on aws-local-stepfunctions with every Task stubbed by its state name and retry waits at 0.
import { readFileSync } from 'node:fs';

// aws-local-stepfunctions 3.0 uses Promise.withResolvers (Node 22); Node 20 lacks it: the standard's own shape.
if (!Promise.withResolvers) {
  Promise.withResolvers = function withResolvers() {
    let resolve, reject;
    const promise = new this((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}
const { runSimulation } = await import('@cloud-copilot/iam-simulate');
const { StateMachine } = await import('aws-local-stepfunctions');

async function simulate({ id, simulation }) {
  try {
    const out = await runSimulation(simulation, {});
    if (out.errors) return { id, result: null, error: JSON.stringify(out.errors).slice(0, 400) };
    return { id, result: out.result?.analysis?.result ?? null };
  } catch (e) {
    return { id, result: null, error: String(e).slice(0, 400) };
  }
}

function stubs(definition, outcomes, result) {
  const handlers = {};
  const intervals = {};
  for (const [name, state] of Object.entries(definition.States)) {
    if (state.Type !== 'Task') continue;
    intervals[name] = 0;
    handlers[name] = async () => {
      const error = outcomes[name];
      if (!error) return result;
      const e = new Error('stubbed failure');
      e.name = error;
      throw e;
    };
  }
  return { taskResourceLocalHandlers: handlers, retryIntervalOverrides: intervals };
}

async function runPath(machine, asl, path, index) {
  const input = { ...asl.input, order_id: `engines-path-${String(index).padStart(3, '0')}` };
  // The engine fills no $$.State (AWS's context object has State.EnteredTime, Name, RetryCount): given once here,
  // fixed for the run (docs/engines.md, the differences).
  const context = {
    Execution: { Name: input.order_id, Id: input.order_id, Input: input, StartTime: asl.startTime },
    State: { EnteredTime: asl.startTime },
  };
  const overrides = stubs(asl.definition, path.outcomes, asl.result);
  const execution = machine.run(input, { overrides, context });
  const entered = [];
  const retries = {};
  let status = 'FAILED';
  let error = null;
  const logs = (async () => {
    for await (const event of execution.eventLogs) {
      if (event.type === 'StateEntered') entered.push(event.state.name);
      if (event.type === 'StateRetried') retries[event.state.name] = (retries[event.state.name] ?? 0) + 1;
      if (event.type === 'ExecutionSucceeded') status = 'SUCCEEDED';
      if (event.type === 'ExecutionFailed') error = event.Error ?? null;
    }
  })();
  try {
    await execution.result;
  } catch (e) {
    error = error ?? e.cause?.name ?? e.name;
  }
  await logs;
  return { entered, retries, status, error };
}

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const iam = [];
for (const check of job.iam ?? []) iam.push(await simulate(check));
const asl = [];
if (job.asl) {
  const machine = new StateMachine(job.asl.definition, { validationOptions: { checkArn: false } });
  for (const [i, path] of job.asl.paths.entries()) asl.push(await runPath(machine, job.asl, path, i));
}
process.stdout.write(JSON.stringify({ iam, asl }));
