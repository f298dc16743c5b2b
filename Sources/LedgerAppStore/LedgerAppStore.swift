// Module LedgerAppStore.
