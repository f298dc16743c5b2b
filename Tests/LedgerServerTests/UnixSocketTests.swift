import LedgerClient
import LedgerErrors
import Testing

@Suite struct UnixSocketTests {
    @Test func connectingNamesWhatFailed() {
        #expect(throws: CodedError(.connect, "")) { try UnixSocket.connect("/nonexistent-directory/ledger.sock") }
        #expect(!UnixSocket.isLive("/nonexistent-directory/ledger.sock"))
        let long = "/" + String(repeating: "x", count: UnixSocket.maxPathLength)
        #expect(throws: CodedError(.pathTooLong, "")) { try UnixSocket.connect(long) }
        #expect(UnixSocket.maxPathLength == 107)
    }
}
