// Hosts created by tests log through the default console logger: keep its startup / peer / relocation info lines
// out of the test output (warnings and errors still show). ZLINK_LOG_LEVEL=info npx jest … shows them.
process.env.ZLINK_LOG_LEVEL ??= 'warn';
