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
};
