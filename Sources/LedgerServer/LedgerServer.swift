// Module LedgerServer.
