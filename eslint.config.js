// `npm run lint`: a few rules that catch mistakes cheaply, and the layering
// rule (./scripts/lint/layers.js) that keeps each layer from importing the ones
// above it. ESLint's core rules only.
import { layerRules } from './scripts/lint/layers.js';

/** The globals the code uses (no-undef): Node's, the browser's (the client, the admin page, code a test runs in a page), mocha's. */
const globals = Object.fromEntries(
  [
    ...['process', 'Buffer', 'console', 'performance', 'queueMicrotask', 'setImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'],
    ...['URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'AbortController', 'fetch', 'Response', 'FormData'],
    ...['window', 'document', 'location', 'Node', 'EventSource'],
    ...['describe', 'it', 'before', 'after', 'beforeEach', 'afterEach']
  ].map((name) => [name, 'readonly'])
);

export default [
  { ignores: ['node_modules/**', 'scripts/results/**', 'lib/client/index.d.ts'] },
  {
    files: ['**/*.js'],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'no-undef': 'error',
      'no-unused-vars': ['error', { args: 'after-used', caughtErrors: 'none', ignoreRestSiblings: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-prototype-builtins': 'error',
      'no-var': 'error',
      'prefer-const': ['error', { destructuring: 'all' }],
      'no-duplicate-imports': 'error',
      'no-dupe-keys': 'error',
      'no-dupe-class-members': 'error',
      'no-self-compare': 'error',
      'no-unreachable': 'error',
      'no-useless-catch': 'error',
      'no-unsafe-finally': 'error',
      'no-cond-assign': 'error',
      'no-constant-binary-expression': 'error',
      'no-sparse-arrays': 'error',
      'no-unused-private-class-members': 'error',
      'no-async-promise-executor': 'error',
      'no-self-assign': 'error',
      'no-empty-pattern': 'error',
      'no-shadow-restricted-names': 'error',
      'no-with': 'error'
    }
  },
  { files: ['lib/primary/ip-stub/**/*.js'], languageOptions: { sourceType: 'commonjs', globals: { ...globals, module: 'writable' } } },
  ...layerRules
];
