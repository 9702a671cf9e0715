/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/machines', '<rootDir>/runtime', '<rootDir>/stores', '<rootDir>/transport', '<rootDir>/inspect', '<rootDir>/client', '<rootDir>/spec-tests', '<rootDir>/tools'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  setupFiles: ['<rootDir>/jest.setup.js'],
  testTimeout: 30000,
  maxWorkers: 2,
  // A worker leaves by itself once its event loop is empty; jest force-exits it (and warns "failed to exit gracefully")
  // after 500 ms by default, which a worker with a large heap on a loaded 2-core machine often overran: no test file
  // leaves a ref'ed handle or request behind (listed after each file's teardown), and with this allowance no worker
  // needed it (two full runs). A real leak is still reported, 5 s later.
  workerGracefulExitTimeout: 5000,
};
