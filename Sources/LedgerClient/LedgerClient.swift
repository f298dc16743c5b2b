// Module LedgerClient.
