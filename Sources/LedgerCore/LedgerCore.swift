// Module LedgerCore.
