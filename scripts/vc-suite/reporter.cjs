// A mocha reporter for scripts/vc-suite/run.ts: writes every test's outcome (and every failed hook)
// as JSON to $VC_SUITE_REPORT, with whether its code calls an issuer (this service is run as a
// verifier only), so the runner can count verifier-side tests.
const { writeFileSync } = require('node:fs');
// mocha is the suite's own (the runner starts it in the suite's folder).
const Mocha = require(require.resolve('mocha', { paths: [process.cwd()] }));

const { EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING, EVENT_RUN_END } = Mocha.Runner.constants;

/**
 * Code that needs an issuer endpoint: the suite's issue call, its helpers that issue
 * (tests/assertions.js: shouldRejectEitherIssueOrVerify, testTemporality, injectOrReject), or a VC
 * issued in a hook.
 */
const ISSUER_CALL =
  /endpoints\.issue\(|issuedVc|secureCredential\(|shouldRejectEitherIssueOrVerify\(|testTemporality\(|injectOrReject\(/;

function entry(test, state, error) {
  const titles = test.titlePath();
  return {
    suite: titles[0],
    title: test.title,
    state,
    hook: test.type === 'hook',
    usesIssuer: ISSUER_CALL.test(test.body || ''),
    file: test.file ? require('node:path').basename(test.file) : null,
    error: error ? String(error.message).slice(0, 300) : null,
  };
}

module.exports = function VcSuiteReporter(runner) {
  const results = [];
  runner.on(EVENT_TEST_PASS, (test) => results.push(entry(test, 'passed')));
  runner.on(EVENT_TEST_FAIL, (test, error) => results.push(entry(test, 'failed', error)));
  runner.on(EVENT_TEST_PENDING, (test) => results.push(entry(test, 'pending')));
  runner.once(EVENT_RUN_END, () =>
    writeFileSync(process.env.VC_SUITE_REPORT, JSON.stringify(results, null, 2)),
  );
};
