// The dependency rules of docs/architecture/data-flow.md, checked by `npm run lint`
// (dependency-cruiser). Known violations in files being reworked are listed in
// .dependency-cruiser-known-violations.json: they are reported as ignored, and any new one fails.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'Modules import each other in one direction only (type-only imports count too).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-not-outward',
      comment: 'The domain knows nothing of the HTTP edge, the WebSocket gateway or access control.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/(http|ws|auth)/' },
    },
    {
      name: 'db-not-domain-services',
      comment: 'Storage (entities, migrations, statements) depends on no domain service.',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/(domain|auth|http|ws|events)/' },
    },
    {
      name: 'auth-not-edge',
      comment: 'Access control is a service the edge calls: it builds no HTTP handlers or WebSocket parts.',
      severity: 'error',
      from: { path: '^src/auth/' },
      to: { path: '^src/(http|ws)/' },
    },
    {
      name: 'events-not-edge',
      comment: 'The outbox, relay and commit bus know nothing of the HTTP edge or the WebSocket gateway.',
      severity: 'error',
      from: { path: '^src/events/' },
      to: { path: '^src/(http|ws)/' },
    },
    {
      name: 'contract-is-a-leaf',
      comment: 'The operation index reads the bundled contract and depends on no other part of the service.',
      severity: 'error',
      from: { path: '^src/contract/' },
      to: { path: '^src/', pathNot: '^src/contract/' },
    },
    {
      name: 'http-not-ws',
      comment: 'The HTTP edge and the WebSocket gateway are siblings; src/app.ts wires them.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/ws/' },
    },
    {
      name: 'ws-not-http',
      comment: 'The HTTP edge and the WebSocket gateway are siblings; src/app.ts wires them.',
      severity: 'error',
      from: { path: '^src/ws/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'src-not-outside',
      comment:
        'The service, its operator commands (src/cli/) included, imports nothing from scripts/, test/ or explorer/.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(scripts|test|explorer)/' },
    },
    {
      name: 'test-not-scripts-internals',
      comment:
        'A test imports from scripts/ only the shared harness (scripts/lib/: the service as a child ' +
        'process, the API client, databases, contract checks) and the library of a tool it runs ' +
        '(scripts/<tool>/lib/), never a script itself.',
      severity: 'error',
      from: { path: '^test/' },
      to: { path: '^scripts/', pathNot: ['^scripts/lib/', '^scripts/[^/]+/lib/'] },
    },
    {
      name: 'scripts-not-test',
      comment:
        'Build steps and tools import nothing from test/: what both need is in scripts/lib/ (the tools ' +
        'that drive the in-process app, contract fuzzing and the Prism proxy, live in test/).',
      severity: 'error',
      from: { path: '^scripts/' },
      to: { path: '^test/' },
    },
    {
      name: 'database-kind-in-db-only',
      comment:
        'Only storage (src/db/) and the store adapters ask which database runs: everything else asks ' +
        'src/db/dialect.ts (the SQL and behaviour that differ) and src/db/transactions.ts (transactions, ' +
        'retries, row locks).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(db|domain/ledger/store|domain/ledger/reads|webhooks/store)/' },
      to: { path: '^src/db/platform\\.ts$' },
    },
    {
      name: 'reads-adapters-private',
      comment:
        'The hot reads are one port (src/domain/ledger/reads/port.ts, built by reads/index.ts): the ' +
        "adapters' internals (the SQLite adapter's listings thread and worker, the PostgreSQL adapter) " +
        'are imported by the reads themselves and by tests of those internals only.',
      severity: 'error',
      from: { pathNot: '^(src/domain/ledger/reads/|test/)' },
      to: { path: '^src/domain/ledger/reads/(sqlite/|postgres\\.ts$)' },
    },
    {
      name: 'edge-reads-through-port',
      comment:
        'The HTTP edge (handlers, read cache) reads the ledger through the Reads port: never the ' +
        "reads' shared queries or the read statements beneath them.",
      severity: 'error',
      from: { path: '^src/http/' },
      to: {
        path: ['^src/domain/ledger/reads/', '^src/db/(sqlite-)?read-statements\\.ts$'],
        pathNot: '^src/domain/ledger/reads/(index|port)\\.ts$',
      },
    },
    {
      name: 'one-sqlite-library',
      comment:
        "SQLite is better-sqlite3, the ORM's driver, everywhere (src/db/sqlite-read-statements.ts says " +
        "why): a second SQLite library in the process does not see the first one's locks, and a read " +
        'on one saw parts of different commits written through the other.',
      severity: 'error',
      from: {},
      to: { dependencyTypes: ['core'], path: '^(node:)?sqlite$' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves (a typo or a package missing from package.json).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|generated/docs|explorer/dist)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
