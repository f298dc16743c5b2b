#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LedgerStore
import LedgerErrors

// MARK: - Directories a command writes a ledger into

/// What is at a path a command is about to write into.
enum DirectoryState: Equatable {
    case missing
    case empty
    case notEmpty([String])
    case notADirectory
}

func directoryState(_ path: String) -> DirectoryState {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return .missing }
    guard isDirectory.boolValue else { return .notADirectory }
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    return entries.isEmpty ? .empty : .notEmpty(entries.sorted())
}

/// Refuses a `--data DIR` that already holds a ledger (`import` and `restore` write a new one, never into one);
/// other files there (a `config.json`) are left alone.
func requireNoLedger(_ directory: String, json: Bool) throws {
    if directoryState(directory) == .notADirectory {
        throw CommandFailure(code: .invalidPath, message: "\(directory) is not a directory", json: json)
    }
    let dataFile = (directory as NSString).appendingPathComponent("data.mdb")
    guard FileManager.default.fileExists(atPath: dataFile) else { return }
    var holds = "a ledger"
    var options = Ledger.Options()
    options.readOnly = true
    if let existing = try? Ledger(directory: directory, options: options, logger: cliLogger),
        let stats = try? existing.statistics()
    {
        holds = "a ledger of \(counted(stats.events, "event")) and \(counted(stats.rejected, "refused input"))"
    }
    throw CommandFailure(
        code: .ledgerNotEmpty,
        message: "\(directory) already holds \(holds) (\(dataFile)); this command writes a new ledger and never "
            + "into an existing one: give an empty or new --data DIR. Nothing was written",
        json: json)
}

/// A ledger made beside its final place — in a hidden directory inside `--data DIR` — and moved there only once it
/// is whole and checked: whatever fails before, DIR is left as it was (a crash leaves only the hidden directory,
/// which the next command of this kind removes).
final class StagedLedger {
    /// The directory the ledger is for.
    let target: String
    /// Where it is made.
    let path: String
    private let createdTarget: Bool

    private static let prefix = ".storeledger-staging-"

    /// Makes the staging directory in `target` (created if missing), after removing those of processes that died.
    init(target: String, json: Bool) throws {
        self.target = target
        let missing = directoryState(target) == .missing
        do {
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        } catch {
            throw CommandFailure(
                code: .invalidPath, message: "cannot create \(target): \(error.localizedDescription)", json: json)
        }
        createdTarget = missing
        Self.removeAbandoned(in: target)
        path = (target as NSString).appendingPathComponent(Self.prefix + "\(getpid())")
        try? FileManager.default.removeItem(atPath: path)
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } catch {
            throw CommandFailure(
                code: .invalidPath, message: "cannot create \(path): \(error.localizedDescription)", json: json)
        }
    }

    /// Moves the staged `data.mdb` into the target, never over one that appeared meanwhile, and removes the staging
    /// directory. The ledger made there must be closed.
    func install(json: Bool) throws {
        let staged = (path as NSString).appendingPathComponent("data.mdb")
        let final = (target as NSString).appendingPathComponent("data.mdb")
        syncFile(staged)
        // link(2) fails when the name exists: a server started on DIR meanwhile keeps its ledger.
        guard link(staged, final) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            if errno == EEXIST {
                throw CommandFailure(
                    code: .ledgerNotEmpty, message: "\(final) appeared while the ledger was made; nothing was written",
                    json: json)
            }
            throw CommandFailure(code: .storageError, message: "cannot move the ledger into \(final): \(reason)", json: json)
        }
        // A ledger with pseudonyms reads its people's values with its key: installed with it, before the staging
        // directory goes.
        let stagedKey = (path as NSString).appendingPathComponent("identity.key")
        if FileManager.default.fileExists(atPath: stagedKey) {
            let finalKey = (target as NSString).appendingPathComponent("identity.key")
            guard rename(stagedKey, finalKey) == 0 else {
                let reason = String(cString: strerror(errno))
                throw CommandFailure(code: .storageError, message: "cannot move the identity key into \(finalKey): \(reason)", json: json)
            }
        }
        try? FileManager.default.removeItem(atPath: path)
        syncFile(target)
    }

    /// Removes the staging directory, and the target when this command created it and nothing else is in it.
    func discard() {
        try? FileManager.default.removeItem(atPath: path)
        if createdTarget, directoryState(target) == .empty { try? FileManager.default.removeItem(atPath: target) }
    }

    /// Staging directories whose process is gone (killed mid-way).
    private static func removeAbandoned(in target: String) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
        for name in entries where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: (target as NSString).appendingPathComponent(name))
            }
        }
    }
}

// MARK: - Files

/// fsync(2) of a file or a directory (a directory's entries: a new name survives a crash); errors are ignored, as
/// the data itself was already written and checked.
func syncFile(_ path: String) {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    close(fd)
}

/// The size of a file in bytes (0 when it cannot be read).
func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}
