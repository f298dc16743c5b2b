import Foundation
import LedgerErrors

/// Where `storeledger demo` may write: a missing or empty directory, or one an earlier demo made, which it resets.
///
/// The demo recreates its ledger on every run, and `--data` is easy to point at the wrong place: a directory it did
/// not make may hold a real ledger or anything else, so it is refused and left as it is. A directory is the demo's
/// when it holds the marker file the demo writes before anything else, and otherwise only what a demo ledger holds.
/// A reset removes those files by name, never the directory, so nothing else can be deleted even by mistake.
enum DemoDirectory {
    /// The file that marks a directory as the demo's.
    static let marker = ".storeledger-demo"

    /// What a demo directory holds besides the marker: the ledger's two LMDB files (regular files), and the socket a
    /// `storeledger serve` of the demo ledger leaves behind when it is killed.
    static let ledgerFiles: [(name: String, type: FileAttributeType)] = [
        ("data.mdb", .typeRegular), ("lock.mdb", .typeRegular), ("ledger.sock", .typeSocket),
    ]

    static let markerText = """
        This directory holds the ledger of `storeledger demo`, which deletes and recreates its ledger files on every \
        run. The demo refuses any directory without this file.

        """

    /// Makes `path` ready for a new demo ledger: creates it when missing, marks it when empty, removes the files of
    /// the previous demo ledger when a demo made it; refuses anything else and changes nothing then.
    static func prepare(_ path: String) throws(CodedError) {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: path, isDirectory: &isDirectory) else {
            do {
                try files.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw CodedError(.invalidPath, "cannot create the demo directory \(path): \(reason(error))")
            }
            try writeMarker(in: path)
            return
        }
        guard isDirectory.boolValue else {
            throw CodedError(.invalidPath, "\(path) is not a directory; give the demo an empty or missing directory")
        }
        let entries: [String]
        do {
            entries = try files.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw CodedError(.permissionDenied, "cannot list \(path): \(reason(error))")
        }
        if entries.isEmpty {
            try writeMarker(in: path)
            return
        }
        let foreign = entries.filter { name in
            guard let type = try? files.attributesOfItem(atPath: join(path, name))[.type] as? FileAttributeType else {
                return true
            }
            if name == marker { return type != .typeRegular }
            return !ledgerFiles.contains { $0.name == name && $0.type == type }
        }
        guard entries.contains(marker), foreign.isEmpty else {
            throw refusal(path, entries: entries, foreign: foreign)
        }
        for (name, _) in ledgerFiles where entries.contains(name) {
            do {
                try files.removeItem(atPath: join(path, name))
            } catch {
                throw CodedError(.permissionDenied, "cannot reset the demo ledger in \(path): \(reason(error))")
            }
        }
    }

    /// Why `path` is not the demo's, naming what it holds.
    private static func refusal(_ path: String, entries: [String], foreign: [String]) -> CodedError {
        let hasMarker = entries.contains(marker)
        let shown = hasMarker ? foreign : entries
        let names = shown.prefix(3).joined(separator: ", ") + (shown.count > 3 ? ", … (\(shown.count) entries)" : "")
        let what: String
        if hasMarker {
            what = "holds files besides a demo ledger (\(names))"
        } else if entries.contains("data.mdb") {
            what = "holds a ledger the demo did not make (\(names))"
        } else {
            what = "is not empty and no demo made it (\(names))"
        }
        return CodedError(
            .directoryNotEmpty,
            "\(path) \(what); the demo writes only to a missing or empty directory, or one an earlier demo made "
                + "(marked by \(marker)): give another --data"
        )
    }

    private static func writeMarker(in path: String) throws(CodedError) {
        do {
            try markerText.write(toFile: join(path, marker), atomically: false, encoding: .utf8)
        } catch {
            throw CodedError(.permissionDenied, "cannot write to the demo directory \(path): \(reason(error))")
        }
    }

    private static func join(_ directory: String, _ name: String) -> String {
        (directory as NSString).appendingPathComponent(name)
    }

    /// Foundation's description of a file operation's failure ("… you don't have permission …").
    private static func reason(_ error: any Error) -> String { (error as NSError).localizedDescription }
}
