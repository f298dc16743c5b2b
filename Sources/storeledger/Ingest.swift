import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppStore
import LedgerClient
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// `storeledger ingest`: appends inputs from files or stdin, directly or through a running server.
struct Ingest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Append inputs (a JSON document, an envelope, or NDJSON of envelopes) from files or stdin.")

    @OptionGroup var ledger: LedgerOptions

    @Option(
        name: .long,
        help: "Force the input type: receipt, notification, transaction, renewal, binding or grant (the operator's).")
    var type: String?

    @Option(name: .customLong("app-user-id"), help: "The app user every input is claimed by.")
    var appUserId: String?

    @Option(name: .customLong("received-at"), help: "Receipt instant (ms since epoch or ISO-8601; default now).")
    var receivedAt: String?

    @Option(name: .long, help: "Send to the server listening on this Unix socket instead of opening the ledger.")
    var socket: String?

    @Flag(name: .long, help: "Print one JSON result per input.")
    var json = false

    @Flag(name: .long, help: "Print only the summary line and errors, not a line per input.")
    var quiet = false

    @Argument(help: "Files to read ('-' or none: stdin).")
    var files: [String] = []

    func validate() throws {
        if quiet && json {
            throw ValidationError("--quiet and --json do not go together (--json prints one result per input)")
        }
    }

    func run() async throws {
        let forced: InputType?
        if let type {
            guard let t = InputType(rawValue: type) else {
                throw ValidationError("--type must be one of \(InputType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            forced = t
        } else {
            forced = nil
        }
        var received: UnixMillis?
        if let receivedAt {
            guard let ms = Instant.parse(receivedAt) else { throw ValidationError("--received-at '\(receivedAt)' is not an instant") }
            received = ms
        }
        let options = IngestPipeline.Options(forcedType: forced, appUserId: appUserId.map { AppUserID($0) }, receivedAt: received)

        var bodies: [[UInt8]] = []
        for file in files.isEmpty ? ["-"] : files {
            if file == "-" {
                bodies.append([UInt8](FileHandle.standardInput.readDataToEndOfFile()))
            } else {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw CommandFailure(code: .unreadableFile, message: "cannot read \(file)", json: json)
                }
                bodies.append([UInt8](data))
            }
        }

        try refuseExportLines(bodies)

        let progress = IngestProgress(bodies)
        var results: [AppendResult] = []
        if let socket {
            results = try await sendToServer(socket: socket, bodies: bodies, options: options, progress: progress)
        } else {
            let configuration = try ledger.loadConfiguration(json: json)
            let store = try ledger.openLedger(configuration, readOnly: false, json: json)
            defer { store.close() }
            let pipeline = IngestPipeline(ledger: store, configuration: configuration.appStore)
            for body in bodies {
                do {
                    let before = results.count
                    results += try await pipeline.ingest(body: body, options: options) { progress.durable(before + $0) }
                } catch {
                    progress.finish()
                    throw CommandFailure(code: error.code, message: error.message, json: json)
                }
            }
            // The maintained metrics summed in before the command returns, so the next read finds them summed (the
            // follower sums them meanwhile too; what it has not reached a read would fold).
            do {
                try store.catchUpMetrics()
            } catch let error as LedgerError {
                progress.finish()
                throw CommandFailure(code: error.code, message: error.message, json: json)
            }
        }
        progress.finish()
        try report(results)
    }

    /// An export fed to `ingest` would be taken apart (some lines refused, others appended as new documents): it is
    /// refused before the ledger is opened or the server called, so nothing is written.
    private func refuseExportLines(_ bodies: [[UInt8]]) throws {
        let names = files.isEmpty ? ["-"] : files
        for (body, name) in zip(bodies, names) {
            for piece in InputFraming.split(body) {
                guard let what = ExportLines.recognise(Array(piece)) else { continue }
                let line = body[..<piece.startIndex].reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
                let refusal = ExportLines.refusal(what)
                throw CommandFailure(
                    code: refusal.code,
                    message: "\(name == "-" ? "stdin" : name) line \(line): \(refusal.message); nothing was written",
                    json: json)
            }
        }
    }

    private func sendToServer(
        socket: String, bodies: [[UInt8]], options: IngestPipeline.Options, progress: IngestProgress
    ) async throws -> [AppendResult] {
        var query: [String] = []
        if let user = options.appUserId { query.append("appUserId=\(percentEncoded(user.rawValue))") }
        if let type = options.forcedType { query.append("type=\(type.rawValue)") }
        if let at = options.receivedAt { query.append("receivedAt=\(at)") }
        let path = "/v1/events" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        var results: [AppendResult] = []
        do {
            let client = try AsyncLedgerClient(socketPath: socket)
            for body in bodies {
                let response = try await client.request(
                    method: "POST", path: path, body: body, contentType: "application/x-ndjson")
                guard response.status == 200 || response.status == 207 else {
                    // The server's own code (storage_full, overloaded, too_large…) says more than the status.
                    struct ServerError: Decodable { var error: AppendResult.ErrorInfo }
                    if let document = try? JSONDecoder().decode(ServerError.self, from: Data(response.body)) {
                        throw CommandFailure(
                            code: document.error.code,
                            message: "server answered \(response.status): \(document.error.message)", json: json)
                    }
                    throw CommandFailure(
                        code: .serverError, message: "server answered \(response.status): \(response.text)", json: json)
                }
                struct Results: Decodable { var results: [AppendResult] }
                results += try JSONDecoder().decode(Results.self, from: Data(response.body)).results
                progress.durable(results.count)
            }
        } catch let error as CodedError {
            progress.finish()
            throw CommandFailure(code: .socketError, message: "\(error)", json: json)
        } catch {
            progress.finish()
            throw error
        }
        return results
    }

    private func report(_ results: [AppendResult]) throws {
        if json {
            for r in results { printJSON(r) }
        } else {
            for (i, r) in results.enumerated() where !quiet {
                switch r.status {
                case .appended: print("#\(i + 1) appended seq \(r.seq ?? 0) (\(r.events.count) events)")
                case .duplicate: print("#\(i + 1) duplicate")
                case .rejected: print("#\(i + 1) rejected \(r.error?.code ?? "?"): \(r.error?.message ?? "")")
                }
            }
            let appended = results.filter { $0.status == .appended }.count
            let duplicates = results.filter { $0.status == .duplicate }.count
            let rejected = results.filter { $0.status == .rejected }.count
            print("\(results.count) inputs: \(appended) appended, \(duplicates) duplicate, \(rejected) rejected")
        }
        if let firstRejected = results.first(where: { $0.status == .rejected }) {
            let count = results.filter { $0.status == .rejected }.count
            FileHandle.standardError.write(
                Data("error: \(firstRejected.error?.code ?? "rejected"): \(count) input(s) rejected; first: \(firstRejected.error?.message ?? "")\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// `ingest`'s progress on a terminal: inputs durable of the inputs given (counted only when it is shown).
struct IngestProgress {
    private let line = ProgressLine("ingesting")
    private let total: UInt64

    init(_ bodies: [[UInt8]]) {
        total = line.isEnabled ? UInt64(bodies.reduce(0) { $0 + InputFraming.split($1).count }) : 0
    }

    func durable(_ inputs: Int) { line.update(UInt64(inputs), total) }

    func finish() { line.finish() }
}

func percentEncoded(_ s: String) -> String {
    s.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+"))) ?? s
}
