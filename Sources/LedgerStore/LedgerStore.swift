// Module LedgerStore.
