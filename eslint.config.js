// `npm run lint`: a few rules that catch mistakes cheaply, and the layering
// rule (./lint-layers.js) that keeps each layer from importing the ones
// above it. ESLint's core rules only.
import { layerRules } from './lint-layers.js';

export default [
  { ignores: ['node_modules/**', 'scripts/results/**', 'lib/client/index.d.ts'] },
  {
    files: ['**/*.js'],
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
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
  ...layerRules
];
