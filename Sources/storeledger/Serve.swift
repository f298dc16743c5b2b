import ArgumentParser

/// `storeledger serve` (the socket server is being wired in; this placeholder is replaced by the server change).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the socket API.")
    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Socket path (default DIR/ledger.sock).") var socket: String?
    func run() async throws {
        throw CommandFailure(code: "not_available", message: "the socket server is not built into this version yet", json: false)
    }
}
